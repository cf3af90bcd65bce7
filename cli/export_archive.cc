#include "cli/export_archive.h"

#include <archive.h>
#include <archive_entry.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <vector>

#include "cli/dumpctl.h"
#include "util/text.h"

namespace coredumpd::cli {

namespace {

constexpr std::size_t kChunk = 1 << 20;

struct EntryDeleter {
  void operator()(archive_entry* e) const { archive_entry_free(e); }
};

}  // namespace

TarZstWriter::TarZstWriter(int fd, std::string shown) : a_(archive_write_new()), shown_(std::move(shown)) {
  if (!a_) throw DumpctlError("cannot start the archive " + shown_ + ": out of memory");
  check(archive_write_set_format_pax_restricted(a_), "tar format");
  check(archive_write_add_filter_zstd(a_), "zstd filter");
  check(archive_write_open_fd(a_, fd), "opening");
}

TarZstWriter::~TarZstWriter() {
  if (!closed_) archive_write_fail(a_);  // an error path: do not write a valid-looking end
  archive_write_free(a_);
}

void TarZstWriter::check(int rc, const std::string& what) {
  if (rc >= ARCHIVE_WARN) return;
  const char* msg = archive_error_string(a_);
  std::string why = msg ? msg : "unknown libarchive error";
  // libarchive says "Write error" for a failed write(2); its errno says why (a full disk).
  if (const int err = archive_errno(a_); err > 0 && why.find(std::strerror(err)) == std::string::npos)
    why += std::string(": ") + std::strerror(err);
  throw DumpctlError("cannot write the archive " + shown_ + " (" + escape_for_display(what) + "): " + why);
}

void TarZstWriter::header(const std::string& name, std::uint64_t size, mode_t mode, time_t mtime) {
  const std::unique_ptr<archive_entry, EntryDeleter> e(archive_entry_new());
  if (!e) throw DumpctlError("cannot write the archive " + shown_ + ": out of memory");
  archive_entry_set_pathname(e.get(), name.c_str());
  archive_entry_set_filetype(e.get(), AE_IFREG);
  archive_entry_set_perm(e.get(), mode & 0755);
  archive_entry_set_size(e.get(), static_cast<la_int64_t>(size));
  archive_entry_set_mtime(e.get(), mtime, 0);
  check(archive_write_header(a_, e.get()), name);
}

void TarZstWriter::add_text(const std::string& name, std::string_view text, time_t mtime) {
  header(name, text.size(), 0644, mtime);
  if (!text.empty() && archive_write_data(a_, text.data(), text.size()) != static_cast<la_ssize_t>(text.size()))
    check(ARCHIVE_FATAL, name);
}

void TarZstWriter::add_file(const std::string& name, int fd, std::uint64_t size, mode_t mode, time_t mtime,
                            const std::function<void(std::uint64_t)>& progress) {
  header(name, size, mode, mtime);
  std::vector<char> buf(kChunk);
  std::uint64_t done = 0;
  while (done < size) {
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw DumpctlError("cannot read " + escape_for_display(name) + ": " + std::strerror(errno));
    if (n == 0) break;
    const auto want = static_cast<std::size_t>(std::min<std::uint64_t>(static_cast<std::uint64_t>(n), size - done));
    if (archive_write_data(a_, buf.data(), want) != static_cast<la_ssize_t>(want)) check(ARCHIVE_FATAL, name);
    done += want;
    if (progress) progress(done);
  }
  if (done != size)
    throw DumpctlError(escape_for_display(name) + " shrank while it was archived (" + std::to_string(done) + " of " +
                       std::to_string(size) + " bytes)");
}

void TarZstWriter::close() {
  check(archive_write_close(a_), "closing");
  closed_ = true;
}

}  // namespace coredumpd::cli
