// The kept spool on disk: its manifest's format, keeping and forgetting it, and storing it as a
// core file. The start-up side (which spools to recover, the records) is in spool_restart.cc.
#include "daemon/dump/spool_recovery.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "daemon/dump/core_writer.h"
#include "daemon/dump/spool.h"
#include "util/unique_fd.h"

namespace coredumpd {

namespace {

constexpr std::size_t kChunk = 1 << 20;  // bytes read from the kept spool at a time

[[noreturn]] void fail(const std::string& step, int err) {
  throw StoreError(step + ": " + std::strerror(err), err);
}

bool valid_id(const std::string& id) {
  return id.size() == 32 && std::all_of(id.begin(), id.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

// Writes `text` to `name` in `dirfd` durably and atomically (temporary name, fsync, rename,
// directory fsync). Returns "" or why not.
std::string write_durably(int dirfd, const std::string& name, const std::string& text) {
  const std::string tmp = name + ".tmp";
  UniqueFd fd(::openat(dirfd, tmp.c_str(), O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd) return "create " + tmp + ": " + std::strerror(errno);
  for (std::size_t done = 0; done < text.size();) {
    const ssize_t n = ::write(fd.get(), text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const std::string why = "write " + tmp + ": " + std::strerror(errno);
      ::unlinkat(dirfd, tmp.c_str(), 0);
      return why;
    }
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(fd.get()) < 0 || ::renameat(dirfd, tmp.c_str(), dirfd, name.c_str()) < 0 || ::fsync(dirfd) < 0) {
    const std::string why = "keep " + name + ": " + std::strerror(errno);
    ::unlinkat(dirfd, tmp.c_str(), 0);
    ::unlinkat(dirfd, name.c_str(), 0);
    return why;
  }
  return "";
}

void unlink_stale(int dirfd, const std::string& name) {
  if (::unlinkat(dirfd, name.c_str(), 0) < 0 && errno != ENOENT) fail("remove stale " + name, errno);
}

// Compresses [0, m.spooled) of `in` into `name`, holes as zero runs.
std::uint64_t compress_spool(int in, int dirfd, const std::string& name, std::uint64_t len,
                             const CompressionOptions& options) {
  CoreWriter writer(dirfd, name, options);
  std::vector<std::byte> buf(kChunk);
  for (std::uint64_t pos = 0; pos < len;) {
    off_t data = ::lseek(in, static_cast<off_t>(pos), SEEK_DATA);
    if (data < 0 && errno != ENXIO) fail("seek kept spool", errno);
    const std::uint64_t data_at = data < 0 ? len : std::min<std::uint64_t>(static_cast<std::uint64_t>(data), len);
    if (data_at > pos) {  // a hole (zeros the kernel sent, left unwritten)
      writer.write_zeros(data_at - pos);
      pos = data_at;
      continue;
    }
    const off_t hole = ::lseek(in, static_cast<off_t>(pos), SEEK_HOLE);
    if (hole < 0) fail("seek kept spool", errno);
    const auto n = static_cast<std::size_t>(
        std::min<std::uint64_t>({static_cast<std::uint64_t>(hole) - pos, len - pos, kChunk}));
    const ssize_t got = ::pread(in, buf.data(), n, static_cast<off_t>(pos));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) fail("read kept spool", errno);
    if (got == 0) fail("read kept spool: unexpected end", EIO);
    writer.write(std::span(buf.data(), static_cast<std::size_t>(got)));
    pos += static_cast<std::uint64_t>(got);
  }
  return writer.commit();
}

}  // namespace

std::string spool_file_name(const std::string& id) { return ".spool-" + id; }
std::string manifest_file_name(const std::string& id) { return ".spool-" + id + ".json"; }

nlohmann::json manifest_to_json(const SpoolManifest& m) {
  nlohmann::json j{{"format", SpoolManifest::kFormat}, {"id", m.id}, {"received", m.received},
                   {"spooled", m.spooled}, {"state", state_name(m.state)}, {"reason", m.reason},
                   {"uncompressed", m.uncompressed}, {"level", m.level}, {"extra", m.extra}};
  j["signal"] = m.signal ? nlohmann::json(*m.signal) : nlohmann::json();
  j["crashing_tid_ns"] = m.crashing_tid_ns ? nlohmann::json(*m.crashing_tid_ns) : nlohmann::json();
  return j;
}

std::optional<SpoolManifest> manifest_from_json(const nlohmann::json& j, std::string& error) {
  try {
    if (j.at("format").get<int>() != SpoolManifest::kFormat) {
      error = "unknown manifest format " + j.at("format").dump();
      return std::nullopt;
    }
    SpoolManifest m;
    m.id = j.at("id").get<std::string>();
    m.received = j.at("received").get<std::uint64_t>();
    m.spooled = j.at("spooled").get<std::uint64_t>();
    const auto state = parse_state(j.at("state").get<std::string>());
    m.reason = j.at("reason").get<std::string>();
    m.uncompressed = j.at("uncompressed").get<bool>();
    m.level = j.at("level").get<int>();
    m.extra = j.at("extra");
    if (!j.at("signal").is_null()) m.signal = j.at("signal").get<int>();
    if (!j.at("crashing_tid_ns").is_null()) m.crashing_tid_ns = j.at("crashing_tid_ns").get<std::int64_t>();
    const char* bad = !valid_id(m.id) ? "bad id"
                      : !state || (*state != DumpState::Complete && *state != DumpState::Truncated) ? "bad state"
                      : m.spooled > m.received ? "more spooled than received"
                      : !m.extra.is_object() ? "extra is not an object"
                                             : nullptr;
    if (bad) {
      error = bad;
      return std::nullopt;
    }
    m.state = *state;
    return m;
  } catch (const nlohmann::json::exception& e) {
    error = e.what();
    return std::nullopt;
  }
}

std::string keep_spool_for_recovery(Spool& spool, int store_dirfd, const SpoolManifest& m) {
  try {
    spool.keep_as(store_dirfd, spool_file_name(m.id));
  } catch (const StoreError& e) {
    return e.what();
  }
  // The manifest last: a spool without one is never taken for a whole core. Its name stays until
  // forget_kept_spool() (see Spool::keep_as()).
  return write_durably(store_dirfd, manifest_file_name(m.id), manifest_to_json(m).dump());
}

void forget_kept_spool(int store_dirfd, const std::string& id) {
  ::unlinkat(store_dirfd, manifest_file_name(id).c_str(), 0);
  ::unlinkat(store_dirfd, spool_file_name(id).c_str(), 0);
}

std::uint64_t store_kept_spool(int store_dirfd, const SpoolManifest& m, CompressionOptions options) {
  const std::string spool_name = spool_file_name(m.id);
  UniqueFd in(::openat(store_dirfd, spool_name.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!in) fail("open " + spool_name, errno);
  struct stat st {};
  if (::fstat(in.get(), &st) < 0) fail("stat " + spool_name, errno);
  if (static_cast<std::uint64_t>(st.st_size) < m.spooled)
    throw StoreError(spool_name + " holds " + std::to_string(st.st_size) + " bytes, its manifest says " +
                         std::to_string(m.spooled), 0);
  if (m.uncompressed) {  // the spool is the core, as persist() would have made it
    const std::string name = m.id + std::string(kRawExtension);
    unlink_stale(store_dirfd, name);
    if (::fchmod(in.get(), kCoreFileMode) < 0) fail("fchmod " + spool_name, errno);
    if (::linkat(store_dirfd, spool_name.c_str(), store_dirfd, name.c_str(), 0) < 0) fail("link " + name, errno);
    if (::fsync(store_dirfd) < 0) {
      const int err = errno;
      ::unlinkat(store_dirfd, name.c_str(), 0);
      fail("fsync store directory", err);
    }
    return m.spooled;
  }
  const std::string name = m.id + std::string(kZstdExtension);
  unlink_stale(store_dirfd, name);
  options.level = m.level;
  return compress_spool(in.get(), store_dirfd, name, m.spooled, options);
}

}  // namespace coredumpd
