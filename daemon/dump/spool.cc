#include "daemon/dump/spool.h"

#include <fcntl.h>
#include <linux/falloc.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>

#include "daemon/dump/core_writer.h"

namespace coredumpd {

namespace {

constexpr std::size_t kPage = 4096;
constexpr std::align_val_t kAlign{kPage};

[[noreturn]] void fail(const char* step) {
  const int err = errno;
  throw StoreError(std::string(step) + ": " + std::strerror(err), err);
}

// Adds O_DIRECT to `fd`; false where the filesystem refuses it (tmpfs before Linux 6.6).
bool set_direct(int fd) {
  const int flags = ::fcntl(fd, F_GETFL);
  return flags >= 0 && ::fcntl(fd, F_SETFL, flags | O_DIRECT) == 0;
}

// Takes O_DIRECT off `fd`; false if it had none (or fcntl failed).
bool clear_direct(int fd) {
  const int flags = ::fcntl(fd, F_GETFL);
  return flags >= 0 && (flags & O_DIRECT) && ::fcntl(fd, F_SETFL, flags & ~O_DIRECT) == 0;
}

}  // namespace

void Spool::AlignedFree::operator()(std::byte* p) const { ::operator delete[](p, kAlign); }

Spool::Spool(int store_dirfd, bool direct_io, ArenaPool* memory) {
  fd_.reset(::openat(store_dirfd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600));
  if (!fd_) fail("create spool file");
  if (direct_io) set_direct(fd_.get());
  // The reader has its own open file: the writer clears O_DIRECT on its own for the unaligned tail.
  const std::string self = "/proc/self/fd/" + std::to_string(fd_.get());
  read_fd_.reset(::open(self.c_str(), O_RDONLY | O_CLOEXEC));
  if (!read_fd_) read_fd_.reset(::fcntl(fd_.get(), F_DUPFD_CLOEXEC, 0));  // no /proc: share the writer's
  if (!read_fd_) fail("open spool file for reading");
  if (direct_io) set_direct(read_fd_.get());
  read_buf_.reset(static_cast<std::byte*>(::operator new[](kBlockBytes + kPage, kAlign)));
  BlockWriter::Options options;
  options.skip_zero_runs = true;
  // When the disk falls behind the kernel's emit, blocks go through the page cache instead of
  // making the drain (and the task) wait: the two together take more than either.
  if (direct_io) overflow_fd_.reset(::open(self.c_str(), O_WRONLY | O_CLOEXEC));
  options.overflow_fd = overflow_fd_.get();
  options.on_written = [this](std::uint64_t end) { publish(end); };
  options.memory = memory;
  writer_ = std::make_unique<BlockWriter>(fd_.get(), kBlockBytes, kQueuedBlocks, std::move(options));
}

Spool::~Spool() {
  writer_.reset();  // its thread may still call publish()
}

std::span<std::byte> Spool::space() { return {writer_->block() + fill_, kBlockBytes - fill_}; }

std::span<const std::byte> Spool::commit(std::size_t n) {
  fill_ += n;
  if (fill_ < kBlockBytes) return {};
  const std::span<const std::byte> full(writer_->block(), kBlockBytes);
  fill_ = 0;
  writer_->submit(kBlockBytes);  // the block stays untouched until it is handed out again
  return full;
}

void Spool::append(std::span<const std::byte> bytes) {
  while (!bytes.empty()) {
    const auto into = space();
    const std::size_t n = std::min(into.size(), bytes.size());
    std::memcpy(into.data(), bytes.data(), n);
    bytes = bytes.subspan(n);
    commit(n);
  }
}

void Spool::append_zeros(std::uint64_t len) {
  while (len > 0) {
    if (fill_ == 0 && len >= kBlockBytes) {
      const std::uint64_t whole = len / kBlockBytes * kBlockBytes;
      writer_->skip(whole);
      len -= whole;
      continue;
    }
    const auto into = space();
    const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(into.size(), len));
    std::memset(into.data(), 0, n);
    commit(n);
    len -= n;
  }
}

void Spool::flush() {
  if (fill_ > 0) writer_->submit(fill_);
  fill_ = 0;
  writer_->finish();
}

void Spool::publish(std::uint64_t end) {
  std::lock_guard lock(mu_);
  end_ = end;
  // Only a reader waiting for this far: one waiting for the next 8 MiB is not woken per block
  // (a cross-CPU wakeup per block cost the daemon several percent of its CPU; bench/README.md,
  // "Spool blocks on huge pages, queued blocks in one write").
  if (end_ > wanted_) cv_.notify_one();  // under the lock: the reader may destroy the Spool as soon as it wakes
}

void Spool::close_input() {
  // Nothing is written any more (flush() waited for it): the blocks can serve the next dump while
  // this one is compressed.
  if (writer_) {
    overflowed_ = writer_->overflowed();
    writer_.reset();
  }
  std::lock_guard lock(mu_);
  closed_ = true;
  cv_.notify_one();  // under the lock: the reader may destroy the Spool as soon as it wakes
}

std::uint64_t Spool::wait_beyond(std::uint64_t pos) {
  std::unique_lock lock(mu_);
  wanted_ = pos;
  cv_.wait(lock, [&] { return end_ > pos || closed_; });
  wanted_ = UINT64_MAX;
  return end_;
}

std::span<const std::byte> Spool::view(std::uint64_t pos, std::size_t max) {
  // O_DIRECT reads whole pages into an aligned buffer. pos is page-aligned in practice (blocks,
  // holes and 64 KiB runs are); only the core's end is not.
  const std::uint64_t start = pos / kPage * kPage;
  const auto skew = static_cast<std::size_t>(pos - start);
  const std::size_t n = std::min(max, kBlockBytes);
  const std::size_t want = (skew + n + kPage - 1) / kPage * kPage;
  std::byte* const buf = read_buf_.get();
  std::size_t done = 0;
  while (done < skew + n) {
    const std::size_t ask = want - done;
    const ssize_t got = ::pread(read_fd_.get(), buf + done, ask, static_cast<off_t>(start + done));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0 && errno == EINVAL && clear_direct(read_fd_.get())) continue;  // alignment refused
    if (got < 0) fail("read spool file");
    done += static_cast<std::size_t>(got);
    if (static_cast<std::size_t>(got) == ask) continue;
    struct stat st {};
    if (::fstat(read_fd_.get(), &st) < 0) fail("stat spool file");
    if (got > 0 && start + done < static_cast<std::uint64_t>(st.st_size)) continue;  // short, not at the end
    // The file ends here. What lies beyond is a trailing hole (zeros at the core's end are not
    // written; persist() extends the file over them).
    if (done < skew + n) std::memset(buf + done, 0, skew + n - done);
    break;
  }
  return {buf + skew, n};
}

void Spool::read(std::uint64_t pos, std::span<std::byte> out) {
  for (std::size_t done = 0; done < out.size();) {
    const auto v = view(pos + done, out.size() - done);
    std::memcpy(out.data() + done, v.data(), v.size());
    done += v.size();
  }
}

std::uint64_t Spool::hole_at(std::uint64_t pos, std::uint64_t limit) const {
  const off_t data = ::lseek(read_fd_.get(), static_cast<off_t>(pos), SEEK_DATA);
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
  // The file may end before the core does: zeros at the end are holes.
  const std::uint64_t len = size();
  if (::ftruncate(fd_.get(), static_cast<off_t>(len)) < 0) fail("extend core file");
  if (::fchmod(fd_.get(), kCoreFileMode) < 0) fail("fchmod core file");
  if (::fsync(fd_.get()) < 0) fail("fsync core file");
  link_into_store(fd_.get(), store_dirfd, name);
  return len;
}

void Spool::keep_as(int store_dirfd, const std::string& name) {
  if (::ftruncate(fd_.get(), static_cast<off_t>(size())) < 0) fail("extend spool file");  // a trailing hole
  if (::fsync(fd_.get()) < 0) fail("fsync spool file");
  // Not link_into_store(), which unlinks the name when the directory's fsync fails: an O_TMPFILE
  // file linked once and unlinked again can never be linked again (persist() would fail).
  if (::linkat(fd_.get(), "", store_dirfd, name.c_str(), AT_EMPTY_PATH) < 0) {
    const std::string self = "/proc/self/fd/" + std::to_string(fd_.get());
    if (::linkat(AT_FDCWD, self.c_str(), store_dirfd, name.c_str(), AT_SYMLINK_FOLLOW) < 0) fail("link spool file");
  }
  if (::fsync(store_dirfd) < 0) fail("fsync store directory");
}

bool Spool::closed() const {
  std::lock_guard lock(mu_);
  return closed_;
}

std::uint64_t Spool::overflowed_blocks() const { return writer_ ? writer_->overflowed() : overflowed_; }

std::uint64_t Spool::size() const {
  std::lock_guard lock(mu_);
  return end_;
}

}  // namespace coredumpd
