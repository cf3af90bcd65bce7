// Writing a core to a regular file with holes where it has runs of zero bytes: a core of mostly
// untouched memory then takes the disk of its data, not of its size.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace coredumpd::cli {

/// Writes a byte stream to a new, empty regular file, seeking over every block of kSparseBlock
/// zero bytes (aligned to the file offset) instead of writing it, so the file system leaves a hole.
/// Blocks with any non-zero byte are written, adjacent ones in one pwrite(). finish() sets the final
/// size with ftruncate(), which also covers a trailing run of zeros. Not for pipes or devices: they
/// cannot seek (write to those with write_all()).
class SparseWriter {
 public:
  /// Bytes per zero check: the page size, the smallest hole most file systems make.
  static constexpr std::size_t kSparseBlock = 4096;

  /// `fd`: an open, empty regular file (not owned). `what`: the file's name for error messages.
  SparseWriter(int fd, std::string what);

  /// Appends `size` bytes. Throws DumpctlError if a write fails.
  void write(const char* data, std::size_t size);
  /// Writes any buffered tail and sets the file size to the bytes appended. Throws DumpctlError.
  void finish();
  /// Bytes appended so far.
  std::uint64_t size() const { return offset_ + pending_.size(); }

 private:
  /// Writes whole blocks of `data` (size a multiple of kSparseBlock, or the last tail) at offset_.
  void put_blocks(const char* data, std::size_t size);

  int fd_;
  std::string what_;
  std::uint64_t offset_ = 0;   ///< file offset of pending_[0]: everything before it is placed
  std::vector<char> pending_;  ///< a partial block waiting for the rest of its bytes
};

/// True if all `size` bytes at `data` are zero.
bool all_zero(const char* data, std::size_t size);

}  // namespace coredumpd::cli
