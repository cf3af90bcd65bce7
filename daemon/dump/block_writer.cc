#include "daemon/dump/block_writer.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>  // IOV_MAX
#include <cstdint>
#include <cstring>
#include <new>
#include <stdexcept>
#include <utility>
#include <vector>

#include "daemon/dump/arena_pool.h"
#include "daemon/dump/core_writer.h"

namespace coredumpd {

namespace {
constexpr std::size_t kHugePage = 2 << 20;
// The granule of Options::skip_zero_runs: 16 pages, so a hole costs no more syscalls than the data
// around it would (a heap of alternating zero and data pages is written whole).
constexpr std::size_t kZeroRun = 64 * 1024;

// pwritev(2) of all of `iov` at `at`. What was written is taken off `iov` and added to `at`, also
// when it throws StoreError (so a retry goes on from there).
void pwritev_full(int fd, std::vector<iovec>& iov, std::uint64_t& at) {
  std::size_t first = 0;
  const auto drop_written = [&] { iov.erase(iov.begin(), iov.begin() + static_cast<std::ptrdiff_t>(first)); };
  while (first < iov.size()) {
    const int count = static_cast<int>(std::min<std::size_t>(iov.size() - first, IOV_MAX));
    const ssize_t w = ::pwritev(fd, iov.data() + first, count, static_cast<off_t>(at));
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) {
      const int err = errno;
      drop_written();
      throw StoreError(std::string("write core file: ") + std::strerror(err), err);
    }
    at += static_cast<std::uint64_t>(w);
    for (auto left = static_cast<std::size_t>(w); left > 0;) {  // skip what was written
      const std::size_t take = std::min(left, iov[first].iov_len);
      iov[first].iov_base = static_cast<std::byte*>(iov[first].iov_base) + take;
      iov[first].iov_len -= take;
      left -= take;
      if (iov[first].iov_len == 0) ++first;
    }
  }
  iov.clear();
}

bool aligned(const std::vector<iovec>& iov, std::uint64_t at) {
  if (at % 4096 != 0) return false;
  return std::all_of(iov.begin(), iov.end(), [](const iovec& v) {
    return v.iov_len % 4096 == 0 && reinterpret_cast<std::uintptr_t>(v.iov_base) % 4096 == 0;
  });
}

}  // namespace

AnonRegion::AnonRegion(std::size_t bytes, PageSize pages) : pages_(pages) {
  if (bytes == 0) return;
  constexpr std::size_t kPage = 4096;
  if (pages == PageSize::Small) {
    size_ = (bytes + kPage - 1) / kPage * kPage;
    void* p = ::mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    data_ = static_cast<std::byte*>(p);
    ::madvise(data_, size_, MADV_NOHUGEPAGE);  // best effort: refused only by kernels without THP
    return;
  }
  size_ = (bytes + kHugePage - 1) / kHugePage * kHugePage;
  // Map one huge page more and cut the ends off, so the region starts on a huge page boundary.
  void* raw = ::mmap(nullptr, size_ + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) throw std::bad_alloc();
  auto* const start = static_cast<std::byte*>(raw);
  const auto skew = reinterpret_cast<std::uintptr_t>(start) % kHugePage;
  const std::size_t head = skew == 0 ? 0 : kHugePage - skew;
  if (head > 0) ::munmap(start, head);
  ::munmap(start + head + size_, kHugePage - head);  // never empty: head < kHugePage
  data_ = start + head;
  // Best effort: without THP (or with "never") these are small pages, as from malloc.
  ::madvise(data_, size_, MADV_HUGEPAGE);
}

AnonRegion::~AnonRegion() { reset(); }

AnonRegion::AnonRegion(AnonRegion&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)), pages_(other.pages_) {}

AnonRegion& AnonRegion::operator=(AnonRegion&& other) noexcept {
  if (this != &other) {
    reset();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    pages_ = other.pages_;
  }
  return *this;
}

void AnonRegion::prefault() {
  // volatile: the stores must happen although the bytes stay zero.
  for (std::size_t i = 0; i < size_; i += 4096) static_cast<volatile std::byte*>(data_)[i] = std::byte{0};
}

void AnonRegion::reset() noexcept {
  if (data_ != nullptr) ::munmap(data_, size_);
  data_ = nullptr;
  size_ = 0;
}

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
  // depth + 1 queued or being written (the writer thread takes up to kMaxBatch at once) + the one
  // being filled, in one region: from the pool (arena_pool.h), else of our own on small pages. The
  // region is unmapped by arena_'s destructor if this throws.
  const std::size_t need = (depth_ + 2) * block_bytes_;
  arena_ = options_.memory ? options_.memory->acquire() : AnonRegion(need, PageSize::Small);
  if (arena_.size() < need) throw std::invalid_argument("BlockWriter: the pool's regions hold fewer than depth + 2 blocks");
  blocks_.reserve(depth_ + 2);
  free_.reserve(depth_ + 2);
  for (std::size_t i = 0; i < depth_ + 2; ++i) {
    blocks_.push_back(arena_.data() + i * block_bytes_);
    free_.push_back(blocks_.back());
  }
  current_ = free_.back();
  free_.pop_back();
  const int flags = ::fcntl(fd_, F_GETFL);
  direct_ = flags >= 0 && (flags & O_DIRECT);
  thread_ = std::thread([this] {
    // Its own name: it would inherit its creator's (a compressor's "cd-compress"), whose class and
    // nice it does not follow (tests/e2e/promises_e2e_test.cc counts the compressor's threads).
    ::pthread_setname_np(::pthread_self(), "cd-write");
    run();
  });
}

BlockWriter::~BlockWriter() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
    cv_.notify_all();
  }
  thread_.join();
  if (options_.memory) options_.memory->give_back(std::move(arena_));
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
      write_overflow(current_, n, at);
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
  std::vector<Job> batch;
  while (true) {
    cv_.wait(lock, [&] { return !queue_.empty() || stop_; });
    if (queue_.empty()) return;  // stopping, nothing left
    // Whole data blocks queued one after the other go out in one write (up to kMaxBatch): on a
    // VM one 4 MiB O_DIRECT write costs the drain far less than four of 1 MiB (each request is a
    // notification the host handles; bench/README.md, "Spool blocks on huge pages, queued blocks
    // in one write").
    batch.assign(1, queue_.front());
    queue_.pop_front();
    while (batch.size() < kMaxBatch && !queue_.empty() && full_block(batch.back()) && full_block(queue_.front())) {
      batch.push_back(queue_.front());
      queue_.pop_front();
    }
    writing_ = true;
    const bool skip = !error_.empty();  // after a failure the rest is dropped
    lock.unlock();
    std::string error;
    int err = 0;
    std::uint64_t n = 0;
    for (const Job& job : batch) n += job.n;
    if (!skip && batch.front().data) {
      try {
        write_blocks(batch);
      } catch (const StoreError& e) {
        error = e.what();
        err = e.error_number;
      }
    }
    if (!skip && error.empty()) {
      offset_ += n;
      if (options_.on_written) options_.on_written(offset_);
    }
    lock.lock();
    const Job& first = batch.front();
    if (!skip && error.empty() && (first.data || first.written)) written_ += n;
    if (!error.empty()) record_failure(error, err);
    writing_ = false;
    for (const Job& job : batch)
      if (job.data) free_.push_back(job.data);
    cv_.notify_all();
  }
}

// submit()'s write through Options::overflow_fd, zero runs left out as in write_blocks().
void BlockWriter::write_overflow(std::byte* p, std::size_t n, std::uint64_t at) const {
  const std::span<std::byte> block(p, n);
  gather_data_runs(std::span(&block, 1), at, [&](std::vector<iovec>& iov, std::uint64_t from) {
    pwritev_full(options_.overflow_fd, iov, from);
  });
}

bool BlockWriter::full_block(const Job& job) const { return job.data != nullptr && job.n == block_bytes_; }

// Writes the blocks of `batch` (consecutive in the file from offset_) in as few writes as their
// data allow (gather_data_runs), at offsets as aligned as the blocks'.
void BlockWriter::write_blocks(const std::vector<Job>& batch) {
  std::vector<std::span<std::byte>> blocks;
  blocks.reserve(batch.size());
  for (const Job& job : batch) blocks.emplace_back(job.data, static_cast<std::size_t>(job.n));
  gather_data_runs(blocks, offset_, [&](std::vector<iovec>& iov, std::uint64_t at) { write_all(iov, at); });
}

// Hands `write` the data of `blocks` (consecutive in the file from `at`) as runs of iovecs, each
// with its file offset: with skip_zero_runs each 64 KiB of zeros is left out, ending a run; the
// data between, across block boundaries, is one run.
template <typename Write>
void BlockWriter::gather_data_runs(std::span<const std::span<std::byte>> blocks, std::uint64_t at, Write&& write) const {
  std::vector<iovec> iov;
  std::uint64_t next = at;  // file offset of the byte being looked at; `at` is iov's first byte's
  const auto flush = [&] {
    if (!iov.empty()) write(iov, at);
    iov.clear();
  };
  for (const auto& block : blocks) {
    for (std::size_t i = 0; i < block.size(); i += kZeroRun) {
      const std::size_t len = std::min(kZeroRun, block.size() - i);
      std::byte* p = block.data() + i;
      if (options_.skip_zero_runs && all_zero(std::span(p, len))) {
        flush();
        at = next + len;
      } else if (!iov.empty() && static_cast<std::byte*>(iov.back().iov_base) + iov.back().iov_len == p) {
        iov.back().iov_len += len;
      } else {
        iov.push_back({p, len});
      }
      next += len;
    }
  }
  flush();
}

void BlockWriter::write_all(std::vector<iovec>& iov, std::uint64_t at) {
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
  if (direct && !aligned(iov, at)) {  // the unaligned tail
    stop_direct();
    direct = false;
  }
  try {
    pwritev_full(fd_, iov, at);
  } catch (const StoreError& e) {
    // A filesystem may accept O_DIRECT at open and still refuse a write (it needs a larger
    // alignment than ours): carry on through the page cache, from where it stopped.
    if (e.error_number != EINVAL || !direct) throw;
    stop_direct();
    pwritev_full(fd_, iov, at);
  }
}

}  // namespace coredumpd
