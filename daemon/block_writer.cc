#include "daemon/block_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <new>

#include "daemon/core_writer.h"

namespace coredumpd {

namespace {
constexpr std::align_val_t kAlign{4096};
// The granule of Options::skip_zero_runs: 16 pages, so a hole costs no more syscalls than the data
// around it would (a heap of alternating zero and data pages is written whole).
constexpr std::size_t kZeroRun = 64 * 1024;

// pwrite(2) of all `n` bytes at `at`. Throws StoreError.
void pwrite_full(int fd, const std::byte* p, std::size_t n, std::uint64_t at) {
  while (n > 0) {
    const ssize_t w = ::pwrite(fd, p, n, static_cast<off_t>(at));
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) throw StoreError(std::string("write core file: ") + std::strerror(errno), errno);
    p += w;
    at += static_cast<std::uint64_t>(w);
    n -= static_cast<std::size_t>(w);
  }
}

}  // namespace

bool all_zero(std::span<const std::byte> bytes) {
  std::size_t i = 0;
  std::uint64_t acc = 0;
  for (; i + 8 * sizeof(std::uint64_t) <= bytes.size(); i += 8 * sizeof(std::uint64_t)) {
    std::uint64_t w[8];
    std::memcpy(w, bytes.data() + i, sizeof(w));
    acc |= w[0] | w[1] | w[2] | w[3] | w[4] | w[5] | w[6] | w[7];
    if (acc != 0) return false;
  }
  for (; i < bytes.size(); ++i) acc |= static_cast<std::uint64_t>(bytes[i]);
  return acc == 0;
}

BlockWriter::BlockWriter(int fd, std::size_t block_bytes, std::size_t depth, Options options)
    : fd_(fd), block_bytes_(block_bytes), depth_(depth), options_(std::move(options)) {
  // depth queued + one being written + the one being filled.
  const auto free_blocks = [this] {
    for (auto* b : blocks_) ::operator delete[](b, kAlign);
  };
  try {
    blocks_.reserve(depth_ + 2);
    for (std::size_t i = 0; i < depth_ + 2; ++i) {
      blocks_.push_back(static_cast<std::byte*>(::operator new[](block_bytes_, kAlign)));
      free_.push_back(blocks_.back());
    }
  } catch (...) {
    free_blocks();
    throw;
  }
  current_ = free_.back();
  free_.pop_back();
  const int flags = ::fcntl(fd_, F_GETFL);
  direct_ = flags >= 0 && (flags & O_DIRECT);
  try {
    thread_ = std::thread([this] { run(); });
  } catch (...) {
    free_blocks();
    throw;
  }
}

BlockWriter::~BlockWriter() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
    cv_.notify_all();
  }
  thread_.join();
  for (auto* b : blocks_) ::operator delete[](b, kAlign);
}

void BlockWriter::throw_if_failed() const {
  if (!error_.empty()) throw StoreError(error_, error_number_);
}

void BlockWriter::record_failure(const std::string& error, int error_number) {
  if (error_.empty()) {
    error_ = error;
    error_number_ = error_number;
  }
  cv_.notify_all();
}

void BlockWriter::submit(std::size_t n) {
  std::unique_lock lock(mu_);
  throw_if_failed();
  if (free_.empty() && options_.overflow_fd >= 0) {  // the disk is behind: the page cache takes it
    const std::uint64_t at = queued_end_;
    queued_end_ += n;
    lock.unlock();
    try {
      pwrite_full(options_.overflow_fd, current_, n, at);
    } catch (const StoreError& e) {
      lock.lock();
      record_failure(e.what(), e.error_number);
      throw;
    }
    lock.lock();
    queue_.push_back(Job{nullptr, n, true});
    ++overflowed_;
    cv_.notify_all();
    return;  // current_ is free again
  }
  queued_end_ += n;
  queue_.push_back(Job{current_, n});
  cv_.notify_all();
  cv_.wait(lock, [&] { return !free_.empty() || !error_.empty(); });
  throw_if_failed();
  current_ = free_.back();
  free_.pop_back();
}

void BlockWriter::skip(std::uint64_t n) {
  std::lock_guard lock(mu_);
  throw_if_failed();
  queued_end_ += n;
  queue_.push_back(Job{nullptr, n});
  cv_.notify_all();
}

std::uint64_t BlockWriter::overflowed() const {
  std::lock_guard lock(mu_);
  return overflowed_;
}

std::uint64_t BlockWriter::finish() {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return (queue_.empty() && !writing_) || !error_.empty(); });
  throw_if_failed();
  return written_;
}

bool BlockWriter::direct_io() const {
  std::lock_guard lock(mu_);
  return direct_;
}

void BlockWriter::run() {
  std::unique_lock lock(mu_);
  while (true) {
    cv_.wait(lock, [&] { return !queue_.empty() || stop_; });
    if (queue_.empty()) return;  // stopping, nothing left
    const Job job = queue_.front();
    queue_.pop_front();
    writing_ = true;
    const bool skip = !error_.empty();  // after a failure the rest is dropped
    lock.unlock();
    std::string error;
    int err = 0;
    if (!skip && job.data) {
      try {
        write_block(job.data, static_cast<std::size_t>(job.n));
      } catch (const StoreError& e) {
        error = e.what();
        err = e.error_number;
      }
    }
    if (!skip && error.empty()) {
      offset_ += job.n;
      if (options_.on_written) options_.on_written(offset_);
    }
    lock.lock();
    if (!skip && error.empty() && (job.data || job.written)) written_ += job.n;
    if (!error.empty()) record_failure(error, err);
    writing_ = false;
    if (job.data) free_.push_back(job.data);
    cv_.notify_all();
  }
}

// Writes one block at offset_, or with skip_zero_runs its runs of 64 KiB that hold data (each run
// one write, at an offset as aligned as the block's).
void BlockWriter::write_block(const std::byte* p, std::size_t n) {
  if (!options_.skip_zero_runs) return write_all(p, n, offset_);
  std::size_t run = 0;  // start of the data run being gathered
  for (std::size_t i = 0; i < n; i += kZeroRun) {
    const std::size_t len = std::min(kZeroRun, n - i);
    if (!all_zero(std::span(p + i, len))) continue;
    if (i > run) write_all(p + run, i - run, offset_ + run);
    run = i + len;
  }
  if (n > run) write_all(p + run, n - run, offset_ + run);
}

void BlockWriter::write_all(const std::byte* p, std::size_t n, std::uint64_t at) {
  auto stop_direct = [&] {
    const int flags = ::fcntl(fd_, F_GETFL);
    if (flags < 0 || ::fcntl(fd_, F_SETFL, flags & ~O_DIRECT) < 0)
      throw StoreError(std::string("clear O_DIRECT on core file: ") + std::strerror(errno), errno);
    std::lock_guard lock(mu_);
    direct_ = false;
  };
  bool direct;
  {
    std::lock_guard lock(mu_);
    direct = direct_;
  }
  if (direct && (n % 4096 != 0 || at % 4096 != 0)) {  // the unaligned tail
    stop_direct();
    direct = false;
  }
  try {
    pwrite_full(fd_, p, n, at);
  } catch (const StoreError& e) {
    // A filesystem may accept O_DIRECT at open and still refuse a write (it needs a larger
    // alignment than ours): carry on through the page cache.
    if (e.error_number != EINVAL || !direct) throw;
    stop_direct();
    pwrite_full(fd_, p, n, at);
  }
}

}  // namespace coredumpd
