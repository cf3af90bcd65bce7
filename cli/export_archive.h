// A tar archive compressed with zstd, written with libarchive: what `dumpctl export` packs.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

struct archive;

namespace coredumpd::cli {

/// A pax tar stream with a zstd filter, written to an open descriptor (not owned). Entries are
/// added in order; close() writes the end of the archive. Every libarchive failure throws
/// DumpctlError naming the entry and libarchive's message.
class TarZstWriter {
 public:
  /// Starts an archive on `fd`; `shown` names the output in errors. Throws DumpctlError.
  TarZstWriter(int fd, std::string shown);
  ~TarZstWriter();
  TarZstWriter(const TarZstWriter&) = delete;
  TarZstWriter& operator=(const TarZstWriter&) = delete;

  /// Adds a regular file `name` (a relative path) holding `text`, mode 0644, mtime `mtime`.
  void add_text(const std::string& name, std::string_view text, time_t mtime);
  /// Adds a regular file `name` with `size` bytes read from `fd` (from its current offset), mode
  /// `mode` & 0755, mtime `mtime`. `progress` gets the bytes copied so far. Throws DumpctlError if
  /// the descriptor yields fewer or more bytes than `size` (the file changed while read).
  void add_file(const std::string& name, int fd, std::uint64_t size, mode_t mode, time_t mtime,
                const std::function<void(std::uint64_t)>& progress = {});
  /// Finishes the archive (end blocks, the zstd frame). Throws DumpctlError.
  void close();

 private:
  void header(const std::string& name, std::uint64_t size, mode_t mode, time_t mtime);
  void check(int rc, const std::string& what);

  struct archive* a_ = nullptr;
  std::string shown_;
  bool closed_ = false;
};

}  // namespace coredumpd::cli
