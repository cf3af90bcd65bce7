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
}

BlockWriter::BlockWriter(int fd, std::size_t block_bytes, std::size_t depth)
    : fd_(fd), block_bytes_(block_bytes), depth_(depth) {
  // depth queued + one being written + the one being filled.
  for (std::size_t i = 0; i < depth_ + 2; ++i) {
    blocks_.push_back(static_cast<std::byte*>(::operator new[](block_bytes_, kAlign)));
    free_.push_back(blocks_.back());
  }
  current_ = free_.back();
  free_.pop_back();
  const int flags = ::fcntl(fd_, F_GETFL);
  direct_ = flags >= 0 && (flags & O_DIRECT);
  thread_ = std::thread([this] { run(); });
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

void BlockWriter::submit(std::size_t n) {
  std::unique_lock lock(mu_);
  throw_if_failed();
  queue_.push_back(Job{current_, n});
  cv_.notify_all();
  cv_.wait(lock, [&] { return !free_.empty() || !error_.empty(); });
  throw_if_failed();
  current_ = free_.back();
  free_.pop_back();
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
    if (!skip) {
      try {
        write_all(job.data, job.n);
      } catch (const StoreError& e) {
        error = e.what();
        err = e.error_number;
      }
    }
    lock.lock();
    if (!skip && error.empty()) written_ += job.n;
    if (!error.empty() && error_.empty()) {
      error_ = error;
      error_number_ = err;
    }
    writing_ = false;
    free_.push_back(job.data);
    cv_.notify_all();
  }
}

void BlockWriter::write_all(const std::byte* p, std::size_t n) {
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
  if (direct && n % block_bytes_ != 0) {  // the unaligned tail
    stop_direct();
    direct = false;
  }
  while (n > 0) {
    const ssize_t w = ::write(fd_, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      // A filesystem may accept O_DIRECT at open and still refuse a write (it needs a larger
      // alignment than ours): carry on through the page cache.
      if (errno == EINVAL && direct) {
        stop_direct();
        direct = false;
        continue;
      }
      throw StoreError(std::string("write core file: ") + std::strerror(errno), errno);
    }
    p += w;
    n -= static_cast<std::size_t>(w);
  }
}

}  // namespace coredumpd
