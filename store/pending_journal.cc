#include "store/pending_journal.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <system_error>

#include "store/index.h"
#include "store/record_extras.h"
#include "util/unique_fd.h"

namespace coredumpd {

namespace {

using nlohmann::json;

constexpr const char* kFileName = "records.jsonl";

// The inverse of to_json(DumpRecord) (dump_record.h) for the journal's own lines; throws
// json::exception or std::invalid_argument on a field of the wrong type.
std::string bytes_field(const json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return {};
  auto v = bytes_from_json(*it);
  if (!v) throw std::invalid_argument(std::string("field ") + key + " is not a byte string");
  return std::move(*v);
}

template <typename T>
std::optional<T> optional_field(const json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  return it->get<T>();
}

DumpRecord record_from_line(const json& line) {
  const json& j = line.at("record");
  DumpRecord r;
  r.id = j.at("id").get<std::string>();
  const auto state = parse_state(j.at("state").get<std::string>());
  if (!state) throw std::invalid_argument("unknown state");
  r.state = *state;
  r.reason = bytes_field(j, "reason");
  r.timestamp_us = j.at("timestamp_us").get<std::int64_t>();
  r.pid = j.at("pid").get<std::int64_t>();
  r.tid = optional_field<std::int64_t>(j, "tid");
  r.uid = j.value("uid", std::int64_t{-1});
  r.gid = j.value("gid", std::int64_t{-1});
  r.euid = j.value("euid", std::int64_t{-1});
  r.egid = j.value("egid", std::int64_t{-1});
  r.comm = bytes_field(j, "comm");
  r.exe = bytes_field(j, "exe");
  for (const auto& a : j.value("argv", json::array())) {
    auto v = bytes_from_json(a);
    if (!v) throw std::invalid_argument("argv entry is not a byte string");
    r.argv.push_back(std::move(*v));
  }
  r.cwd = bytes_field(j, "cwd");
  r.cgroup = bytes_field(j, "cgroup");
  r.hostname = bytes_field(j, "hostname");
  r.boot_id = bytes_field(j, "boot_id");
  r.coredump_mask = j.value("coredump_mask", std::uint32_t{0});
  r.signal = optional_field<int>(j, "signal");
  r.crashing_tid_ns = optional_field<std::int64_t>(j, "crashing_tid_ns");
  r.core_size = j.value("core_size", std::uint64_t{0});
  r.stored_size = j.value("stored_size", std::uint64_t{0});
  r.compression = j.value("compression", std::string());
  r.path = bytes_field(j, "path");
  r.extra = j.value("extra", json::object());
  if (!r.extra.is_object()) throw std::invalid_argument("extra is not an object");
  // Columns of the index that to_json() leaves to extra: kept beside the record.
  r.rule = line.value("rule", std::string());
  if (const auto it = line.find("container_key"); it != line.end() && !it->is_null()) {
    auto key = bytes_from_json(*it);
    if (!key) throw std::invalid_argument("container_key is not a byte string");
    r.container_key = std::move(*key);
  }
  return r;
}

// One line of the journal, with its newline.
std::string journal_line(const DumpRecord& r, const std::string& why, std::int64_t journaled_us) {
  const json line = {{"journaled_us", journaled_us}, {"why", why}, {"rule", r.rule},
                     {"container_key", r.container_key ? bytes_to_json(*r.container_key) : json(nullptr)},
                     {"record", to_json(r)}};
  return line.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}

[[noreturn]] void throw_errno(const std::string& what) {
  throw std::system_error(errno, std::generic_category(), what);
}

}  // namespace

std::string pending_journal_path(const std::string& dir) {
  return (std::filesystem::path(dir) / kFileName).string();
}

PendingContents read_pending_journal(const std::string& dir) {
  PendingContents out;
  const std::string path = pending_journal_path(dir);
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    if (errno == ENOENT || errno == ENOTDIR) return out;
    throw_errno("reading " + path);
  }
  std::map<std::string, std::size_t> by_id;  // id -> index in out.entries
  std::string text;
  for (std::size_t n = 1; std::getline(in, text); ++n) {
    if (text.empty()) continue;
    const json line = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (line.is_discarded() || !line.is_object()) {
      out.skipped.push_back("line " + std::to_string(n) + ": not a JSON object (a torn write?)");
      continue;
    }
    try {
      PendingEntry e{record_from_line(line), line.value("why", std::string()), line.value("journaled_us", std::int64_t{0})};
      const auto [it, fresh] = by_id.try_emplace(e.record.id, out.entries.size());
      if (fresh) out.entries.push_back(std::move(e));
      else out.entries[it->second] = std::move(e);  // a later line of the same dump supersedes
    } catch (const std::exception& e) {
      out.skipped.push_back("line " + std::to_string(n) + ": " + e.what());
    }
  }
  if (in.bad()) throw_errno("reading " + path);
  return out;
}

PendingJournal::PendingJournal(std::string dir, std::uint64_t max_bytes)
    : dir_(std::move(dir)), path_(pending_journal_path(dir_)), max_bytes_(max_bytes) {
  struct stat st{};
  has_entries_ = ::stat(path_.c_str(), &st) == 0 && st.st_size > 0;
}

std::string PendingJournal::append(const DumpRecord& r, const std::string& why) {
  const auto now_us = std::chrono::duration_cast<std::chrono::microseconds>(
                          std::chrono::system_clock::now().time_since_epoch()).count();
  const std::string text = journal_line(r, why, now_us);

  std::lock_guard lock(mu_);
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);  // 0777 & ~umask; tightened below when new
  if (ec) return "pending journal " + dir_ + ": " + ec.message();
  ::chmod(dir_.c_str(), 0750);
  const UniqueFd fd(::open(path_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0640));
  if (!fd) return "pending journal " + path_ + ": " + std::strerror(errno);
  struct stat st{};
  if (::fstat(fd.get(), &st) < 0) return "pending journal " + path_ + ": " + std::strerror(errno);
  const auto size = static_cast<std::uint64_t>(st.st_size);
  if (size + text.size() > max_bytes_)
    return "pending journal " + path_ + " is full (" + std::to_string(size) + " bytes, limit " +
           std::to_string(max_bytes_) + ")";
  // Set before the line can be seen: a replay checks this without the lock, and one that sees
  // it waits for the lock, so it never misses a line a reader of the file already saw.
  has_entries_ = true;
  // One write: O_APPEND puts it whole at the end; a short write (ENOSPC) leaves a torn line the
  // reader skips, so it is cut off again.
  const ssize_t n = ::write(fd.get(), text.data(), text.size());
  if (n != static_cast<ssize_t>(text.size())) {
    const int err = n < 0 ? errno : ENOSPC;
    if (::ftruncate(fd.get(), static_cast<off_t>(size)) < 0) { /* the reader skips the torn line */ }
    return "pending journal " + path_ + ": " + std::strerror(err);
  }
  if (::fsync(fd.get()) < 0) return "pending journal " + path_ + ": fsync: " + std::strerror(errno);
  return {};
}

ReplayResult PendingJournal::replay_into(Index& index, std::int64_t now_us, const std::string& interrupted_reason) {
  std::lock_guard lock(mu_);
  ReplayResult result;
  PendingContents contents = read_pending_journal(dir_);
  result.skipped = std::move(contents.skipped);
  std::vector<PendingEntry> keep;
  for (auto& e : contents.entries) {
    DumpRecord& r = e.record;
    const DumpState state = r.state;
    const std::string reason = r.reason;
    if (!interrupted_reason.empty() && r.state == DumpState::InProgress) {
      r.state = DumpState::Interrupted;
      r.reason = interrupted_reason;
    }
    r.extra[extras::kJournaled] = {{"reason", e.why}, {"journaled_us", e.journaled_us}, {"moved_us", now_us}};
    try {
      if (index.get(r.id)) index.update(r);
      else index.insert(r);
      ++result.moved;
    } catch (const std::exception& ex) {
      result.errors.push_back(r.id + ": " + ex.what());
      r.extra.erase(extras::kJournaled);
      r.state = state;
      r.reason = reason;
      keep.push_back(std::move(e));
    }
  }
  result.left = static_cast<int>(keep.size());
  rewrite(keep);
  return result;
}

void PendingJournal::rewrite(const std::vector<PendingEntry>& keep) {
  if (keep.empty()) {
    if (::unlink(path_.c_str()) < 0 && errno != ENOENT) throw_errno("removing " + path_);
    has_entries_ = false;
    return;
  }
  // The rest, into a new file renamed over the old: a crash leaves one or the other whole.
  const std::string tmp = path_ + ".tmp";
  {
    const UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0640));
    if (!fd) throw_errno("creating " + tmp);
    for (const auto& e : keep) {
      const std::string text = journal_line(e.record, e.why, e.journaled_us);
      if (::write(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size())) throw_errno("writing " + tmp);
    }
    if (::fsync(fd.get()) < 0) throw_errno("fsync " + tmp);
  }
  if (::rename(tmp.c_str(), path_.c_str()) < 0) throw_errno("renaming " + tmp);
  has_entries_ = true;
}

}  // namespace coredumpd
