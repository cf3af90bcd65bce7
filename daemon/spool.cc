#include "daemon/spool.h"

#include <fcntl.h>
#include <linux/falloc.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "daemon/core_writer.h"

namespace coredumpd {

namespace {

constexpr std::size_t kPage = 4096;
// Shortest run of zero bytes left as a hole in the spool (16 pages).
constexpr std::size_t kMinHole = 16 * kPage;
constexpr int kPipeBytes = 1 << 20;  // splice_from()'s pipe

// True if the 4 KiB at `p` are all zero. Word-wise: ~10+ GB/s, far below the socket's cost.
bool zero_page(const std::byte* p) {
  std::uint64_t acc = 0;
  for (std::size_t i = 0; i < kPage; i += 8 * sizeof(std::uint64_t)) {
    std::uint64_t w[8];
    std::memcpy(w, p + i, sizeof(w));
    acc |= w[0] | w[1] | w[2] | w[3] | w[4] | w[5] | w[6] | w[7];
  }
  return acc == 0;
}

}  // namespace

Spool::Spool(int store_dirfd) {
  fd_.reset(::openat(store_dirfd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600));
  if (!fd_) throw StoreError(std::string("create spool file: ") + std::strerror(errno), errno);
}

void Spool::write_at(std::uint64_t pos, const std::byte* p, std::size_t n) {
  while (n > 0) {
    const ssize_t w = ::pwrite(fd_.get(), p, n, static_cast<off_t>(pos));
    if (w < 0) {
      if (errno == EINTR) continue;
      throw StoreError(std::string("write spool file: ") + std::strerror(errno), errno);
    }
    p += w;
    pos += static_cast<std::uint64_t>(w);
    n -= static_cast<std::size_t>(w);
  }
}

std::size_t Spool::append(std::span<const std::byte> bytes) {
  // Runs of at least kMinHole zero pages (aligned in the core) are skipped, left as holes; the bytes
  // between them go out with one pwrite each. Shorter zero runs are written like data: a hole per
  // isolated zero page would cost a syscall per 4 KiB (a heap of alternating pages drained at half
  // speed), and a few zero pages cost no more to write than any other page.
  std::size_t i = 0, data_start = 0, holes = 0;
  while (i < bytes.size()) {
    const std::uint64_t abs = write_pos_ + i;
    const bool aligned_page = abs % kPage == 0 && bytes.size() - i >= kPage;
    if (!aligned_page || !zero_page(bytes.data() + i)) {
      i += aligned_page ? kPage : std::min<std::size_t>(bytes.size() - i, kPage - abs % kPage);
      continue;
    }
    std::size_t j = i + kPage;
    while (bytes.size() - j >= kPage && zero_page(bytes.data() + j)) j += kPage;
    if (j - i >= kMinHole) {
      if (i > data_start) write_at(write_pos_ + data_start, bytes.data() + data_start, i - data_start);
      data_start = j;
      holes += j - i;
    }
    i = j;
  }
  if (bytes.size() > data_start) write_at(write_pos_ + data_start, bytes.data() + data_start, bytes.size() - data_start);
  write_pos_ += bytes.size();
  publish();
  return holes;
}

ssize_t Spool::splice_from(int fd, std::size_t max) {
  if (!pipe_read_) {
    int p[2];
    if (::pipe2(p, O_CLOEXEC) < 0) {  // out of fds or pipe memory: not the socket's fault, so read instead
      errno = EINVAL;
      return -1;
    }
    pipe_read_.reset(p[0]);
    pipe_write_.reset(p[1]);
    // 1 MiB is the default pipe-max-size; without it (unprivileged) the pipe keeps its 64 KiB.
    const int size = ::fcntl(pipe_write_.get(), F_SETPIPE_SZ, kPipeBytes);
    pipe_bytes_ = size > 0 ? static_cast<std::size_t>(size) : 64 * 1024;
  }
  const ssize_t in = ::splice(fd, nullptr, pipe_write_.get(), nullptr, std::min(max, pipe_bytes_),
                              SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
  if (in <= 0) return in;
  // The pipe was empty, so it now holds exactly `in` bytes: move them all to the file.
  loff_t off = static_cast<loff_t>(write_pos_);
  for (std::size_t left = static_cast<std::size_t>(in); left > 0;) {
    const ssize_t out = ::splice(pipe_read_.get(), nullptr, fd_.get(), &off, left, SPLICE_F_MOVE);
    if (out < 0 && errno == EINTR) continue;
    if (out <= 0) throw StoreError(std::string("write spool file: ") + std::strerror(out < 0 ? errno : EIO), out < 0 ? errno : EIO);
    left -= static_cast<std::size_t>(out);
  }
  write_pos_ += static_cast<std::uint64_t>(in);
  publish();
  return in;
}

void Spool::publish() {
  std::lock_guard lock(mu_);
  end_ = write_pos_;
  cv_.notify_one();  // under the lock: the reader may destroy the Spool as soon as it wakes
}

void Spool::append_zeros(std::uint64_t len) {
  write_pos_ += len;
  // The file must be as long as the core even if it ends in a hole.
  if (::ftruncate(fd_.get(), static_cast<off_t>(write_pos_)) < 0)
    throw StoreError(std::string("extend spool file: ") + std::strerror(errno), errno);
  publish();
}

void Spool::close_input() {
  std::lock_guard lock(mu_);
  closed_ = true;
  cv_.notify_one();  // under the lock: the reader may destroy the Spool as soon as it wakes
}

std::uint64_t Spool::wait_beyond(std::uint64_t pos) {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return end_ > pos || closed_; });
  return end_;
}

void Spool::read(std::uint64_t pos, std::span<std::byte> out) const {
  std::size_t done = 0;
  while (done < out.size()) {
    const ssize_t n = ::pread(fd_.get(), out.data() + done, out.size() - done, static_cast<off_t>(pos + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw StoreError(std::string("read spool file: ") + std::strerror(errno), errno);
    if (n == 0) {  // beyond EOF of the file: an appended hole not yet materialised by ftruncate
      std::memset(out.data() + done, 0, out.size() - done);
      return;
    }
    done += static_cast<std::size_t>(n);
  }
}

std::uint64_t Spool::hole_at(std::uint64_t pos, std::uint64_t limit) const {
  const off_t data = ::lseek(fd_.get(), static_cast<off_t>(pos), SEEK_DATA);
  if (data < 0) return errno == ENXIO ? limit : 0;  // ENXIO: no data after pos at all
  return std::min<std::uint64_t>(static_cast<std::uint64_t>(data) - pos, limit);
}

void Spool::release(std::uint64_t upto) {
  const std::uint64_t aligned = upto / kPage * kPage;
  if (aligned <= released_) return;
  ::fallocate(fd_.get(), FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(released_),
              static_cast<off_t>(aligned - released_));
  released_ = aligned;
}

std::uint64_t Spool::persist(int store_dirfd, const std::string& name) {
  const auto fail = [](const char* step) {
    const int err = errno;
    throw StoreError(std::string(step) + ": " + std::strerror(err), err);
  };
  // The file may end before the core does: append() leaves trailing zero pages as holes.
  const std::uint64_t len = size();
  if (::ftruncate(fd_.get(), static_cast<off_t>(len)) < 0) fail("extend core file");
  if (::fchmod(fd_.get(), kCoreFileMode) < 0) fail("fchmod core file");
  if (::fsync(fd_.get()) < 0) fail("fsync core file");
  link_into_store(fd_.get(), store_dirfd, name);
  return len;
}

bool Spool::closed() const {
  std::lock_guard lock(mu_);
  return closed_;
}

std::uint64_t Spool::size() const {
  std::lock_guard lock(mu_);
  return end_;
}

}  // namespace coredumpd
