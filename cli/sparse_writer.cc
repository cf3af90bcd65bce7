#include "cli/sparse_writer.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "cli/dumpctl.h"

namespace coredumpd::cli {

bool all_zero(const char* data, std::size_t size) {
  // Compare in 8-byte words (memcpy: no alignment assumption), then the tail.
  std::size_t i = 0;
  for (; i + 8 <= size; i += 8) {
    std::uint64_t w = 0;
    std::memcpy(&w, data + i, sizeof w);
    if (w != 0) return false;
  }
  for (; i < size; ++i) {
    if (data[i] != 0) return false;
  }
  return true;
}

SparseWriter::SparseWriter(int fd, std::string what) : fd_(fd), what_(std::move(what)) {
  pending_.reserve(kSparseBlock);
}

void SparseWriter::write(const char* data, std::size_t size) {
  if (!pending_.empty()) {
    const std::size_t take = std::min(size, kSparseBlock - pending_.size());
    pending_.insert(pending_.end(), data, data + take);
    data += take;
    size -= take;
    if (pending_.size() < kSparseBlock) return;
    put_blocks(pending_.data(), pending_.size());
    pending_.clear();
  }
  const std::size_t whole = size - size % kSparseBlock;
  put_blocks(data, whole);
  pending_.assign(data + whole, data + size);
}

void SparseWriter::put_blocks(const char* data, std::size_t size) {
  std::size_t i = 0;
  while (i < size) {
    const std::size_t block = std::min(kSparseBlock, size - i);
    if (all_zero(data + i, block)) {
      i += block;  // a hole: the offset moves on, nothing is written
      offset_ += block;
      continue;
    }
    // A run of non-zero blocks goes out in one pwrite().
    std::size_t end = i + block;
    while (end < size) {
      const std::size_t next = std::min(kSparseBlock, size - end);
      if (all_zero(data + end, next)) break;
      end += next;
    }
    const char* p = data + i;
    std::size_t left = end - i;
    while (left > 0) {
      const ssize_t n = ::pwrite(fd_, p, left, static_cast<off_t>(offset_));
      if (n < 0) {
        if (errno == EINTR) continue;
        throw DumpctlError("cannot write " + what_ + ": " + std::strerror(errno));
      }
      p += n;
      left -= static_cast<std::size_t>(n);
      offset_ += static_cast<std::uint64_t>(n);
    }
    i = end;
  }
}

void SparseWriter::finish() {
  put_blocks(pending_.data(), pending_.size());
  pending_.clear();
  // The size covers a trailing hole, which no write reached.
  while (::ftruncate(fd_, static_cast<off_t>(offset_)) != 0) {
    if (errno != EINTR) throw DumpctlError("cannot set the size of " + what_ + ": " + std::strerror(errno));
  }
}

}  // namespace coredumpd::cli
