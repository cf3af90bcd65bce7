// Unit tests of the spool between the drain and the compressor: bytes come back identical, long
// zero runs become holes (no disk), short ones do not (no syscall per page), a socket read into its
// blocks keeps its order, and its data never fill the page cache (O_DIRECT).
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/vfs.h>
#include <linux/magic.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <condition_variable>
#include <cstring>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <random>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "daemon/dump/block_writer.h"
#include "daemon/dump/core_writer.h"  // StoreError
#include "daemon/dump/spool.h"
#include "tests/unit/scratch_dir.h"

using namespace coredumpd;

namespace {

constexpr std::size_t kPage = 4096;

class SpoolTest : public ::testing::Test {
 protected:
  test::ScratchDir scratch_{"coredumpd-spool"};
  const std::string dir_ = scratch_.path();
  const int dirfd_ = scratch_.fd();
};

std::vector<std::byte> random_bytes(std::size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::vector<std::byte> v(n);
  for (auto& b : v) b = static_cast<std::byte>(gen() | 1);  // never a zero byte
  return v;
}

std::vector<std::byte> read_all(Spool& s) {
  std::vector<std::byte> out(s.size());
  s.read(0, out);
  return out;
}

// A "disk" that is behind: the BlockWriter's progress callback (callback()) records each report
// and holds the writer thread there until release(). Declare it before the writer, and a
// ReleaseOnExit after it, so that a failed ASSERT cannot leave the writer held in its destructor.
class HeldDisk {
 public:
  std::function<void(std::uint64_t)> callback() {
    return [this](std::uint64_t end) {
      std::unique_lock lock(mu_);
      progress_.push_back(end);
      cv_.notify_all();
      cv_.wait(lock, [&] { return released_; });
    };
  }
  /// Waits (at most 10 s) until the writer has reported once, i.e. is held.
  bool wait_held() {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(10), [&] { return !progress_.empty(); });
  }
  void release() {
    {
      std::lock_guard lock(mu_);
      released_ = true;
    }
    cv_.notify_all();
  }
  std::vector<std::uint64_t> progress() {
    std::lock_guard lock(mu_);
    return progress_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool released_ = false;
  std::vector<std::uint64_t> progress_;
};

struct ReleaseOnExit {
  HeldDisk& disk;
  ~ReleaseOnExit() { disk.release(); }
};

// Pages of the file `name` in `dirfd` that are in the page cache (mincore), or -1 on an error.
long resident_pages(int dirfd, const char* name) {
  const int fd = ::openat(dirfd, name, O_RDONLY | O_CLOEXEC);
  struct stat st {};
  if (fd < 0 || ::fstat(fd, &st) < 0 || st.st_size == 0) return -1;
  const auto len = static_cast<std::size_t>(st.st_size);
  void* map = ::mmap(nullptr, len, PROT_READ, MAP_SHARED, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED) return -1;
  std::vector<unsigned char> pages((len + kPage - 1) / kPage);
  const int rc = ::mincore(map, len, pages.data());
  ::munmap(map, len);
  if (rc < 0) return -1;
  return std::count_if(pages.begin(), pages.end(), [](unsigned char c) { return c & 1; });
}

}  // namespace

// 64 KiB data, 1 MiB of zeros, 1 data page, one zero page, 3 data pages, 100 bytes of zeros at an
// unaligned end: identical bytes back; the 1 MiB run is a hole, the single zero page is not.
TEST_F(SpoolTest, LongZeroRunsBecomeHolesShortOnesDoNot) {
  std::vector<std::byte> core = random_bytes(64 * 1024, 1);
  const std::size_t hole_at = core.size();
  core.resize(core.size() + (1 << 20));  // zeros
  const std::size_t single_zero_page = core.size() + kPage;
  const auto tail = random_bytes(5 * kPage, 2);
  core.insert(core.end(), tail.begin(), tail.end());
  std::fill_n(core.begin() + static_cast<std::ptrdiff_t>(single_zero_page), kPage, std::byte{0});
  core.resize(core.size() + 100);

  Spool spool(dirfd_);
  // Appended in uneven pieces, as socket reads come, so runs cross append boundaries.
  for (std::size_t pos = 0; pos < core.size();) {
    const std::size_t n = std::min<std::size_t>(core.size() - pos, 300'000);
    spool.append(std::span(core.data() + pos, n));
    pos += n;
  }
  spool.flush();
  spool.close_input();
  ASSERT_EQ(spool.size(), core.size());
  EXPECT_EQ(read_all(spool), core);
  EXPECT_EQ(spool.hole_at(0, core.size()), 0u);
  // The run is 64 KiB-aligned here: all of it is a hole, however the pieces fell.
  EXPECT_EQ(spool.hole_at(hole_at, 1 << 20), 1u << 20);
  EXPECT_EQ(spool.hole_at(single_zero_page, kPage), 0u) << "an isolated zero page is written, not punched";
}

// Alternating data and zero pages (half-zero heaps): no holes at all, one write per append.
TEST_F(SpoolTest, AlternatingZeroPagesAreWrittenAsData) {
  std::vector<std::byte> core = random_bytes(64 * kPage, 3);
  for (std::size_t p = 1; p < 64; p += 2) std::fill_n(core.begin() + static_cast<std::ptrdiff_t>(p * kPage), kPage, std::byte{0});
  Spool spool(dirfd_);
  spool.append(core);
  spool.flush();
  spool.close_input();
  EXPECT_EQ(read_all(spool), core);
  for (std::size_t p = 0; p < 64; ++p) EXPECT_EQ(spool.hole_at(p * kPage, kPage), 0u) << "page " << p;
}

// ZERO records (append_zeros) are holes even at the end of the core, and the reader sees the size.
// Zeros become holes in 64 KiB runs: those that share the head's 64 KiB are written.
TEST_F(SpoolTest, AppendZerosExtendsWithAHole) {
  Spool spool(dirfd_);
  const auto head = random_bytes(kPage, 4);
  spool.append(head);
  spool.append_zeros(8 << 20);
  spool.flush();
  spool.close_input();
  EXPECT_EQ(spool.wait_beyond(0), kPage + (8u << 20));
  EXPECT_EQ(spool.wait_beyond(spool.size()), spool.size()) << "closed: no more bytes to wait for";
  EXPECT_EQ(spool.hole_at(kPage, 8 << 20), 0u) << "zeros in the head's 64 KiB are data";
  const std::uint64_t rest = spool.size() - (64 << 10);
  EXPECT_EQ(spool.hole_at(64 << 10, rest), rest);
  EXPECT_EQ(spool.hole_at(64 << 10, 1 << 20), 1u << 20) << "bounded by the limit";
  std::vector<std::byte> tail(kPage, std::byte{1});
  spool.read(spool.size() - kPage, tail);
  EXPECT_EQ(tail, std::vector<std::byte>(kPage, std::byte{0}));
}

// A socket stream read into space() in pieces (as the drain does) after an unaligned appended head:
// the spool holds the exact stream; each commit() that fills a block returns that block; the
// reader wakes for written blocks before the input is closed.
TEST_F(SpoolTest, SocketReadIntoBlocksKeepsTheStreamInOrder) {
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  const auto head = random_bytes(3000, 5);
  const auto body = random_bytes(3 * Spool::kBlockBytes + 4321, 6);
  std::thread sender([&] {
    for (std::size_t pos = 0; pos < body.size();) {
      const ssize_t n = ::write(sv[1], body.data() + pos, std::min<std::size_t>(body.size() - pos, 100'000));
      if (n <= 0) break;
      pos += static_cast<std::size_t>(n);
    }
    ::close(sv[1]);
  });

  Spool spool(dirfd_);
  std::uint64_t woke_at = 0;
  std::thread reader([&] { woke_at = spool.wait_beyond(0); });
  spool.append(head);
  std::uint64_t total = head.size();
  int full_blocks = 0;
  while (true) {
    const auto into = spool.space();
    ASSERT_FALSE(into.empty());
    const ssize_t n = ::read(sv[0], into.data(), std::min<std::size_t>(into.size(), 65'536));
    ASSERT_GE(n, 0) << std::strerror(errno);
    if (n == 0) break;
    const std::uint64_t block_start = total / Spool::kBlockBytes * Spool::kBlockBytes;
    total += static_cast<std::uint64_t>(n);
    const auto block = spool.commit(static_cast<std::size_t>(n));
    if (total % Spool::kBlockBytes != 0) {
      EXPECT_TRUE(block.empty());
      continue;
    }
    ASSERT_EQ(block.size(), Spool::kBlockBytes);
    ++full_blocks;
    // The block is the core's bytes [block_start, block_start + 1 MiB).
    auto expected = head;
    expected.insert(expected.end(), body.begin(), body.end());
    EXPECT_TRUE(std::equal(block.begin(), block.end(), expected.begin() + static_cast<std::ptrdiff_t>(block_start)));
  }
  sender.join();
  reader.join();
  EXPECT_EQ(woke_at % Spool::kBlockBytes, 0u) << "woken by a written block, before the input closed";
  EXPECT_GT(woke_at, 0u);
  ::close(sv[0]);
  spool.flush();
  spool.close_input();
  EXPECT_EQ(full_blocks, 3);
  ASSERT_EQ(spool.size(), head.size() + body.size());
  auto expected = head;
  expected.insert(expected.end(), body.begin(), body.end());
  EXPECT_EQ(read_all(spool), expected);
}

// On a filesystem with O_DIRECT (ext4 here) the spool's data bypass the page cache, written and
// read, as long as the disk keeps up (here: each block is written before the next comes): a fresh
// page-cache page costs a host fault on this VM (spool.h). 8 MiB written and read back leave none
// of the file's pages resident.
TEST_F(SpoolTest, DataDoNotEnterThePageCache) {
  struct statfs fs {};
  ASSERT_EQ(::statfs(dir_.c_str(), &fs), 0);
  if (fs.f_type == TMPFS_MAGIC) GTEST_SKIP() << dir_ << " is tmpfs: its pages are the page cache";
  const auto data = random_bytes(8 * Spool::kBlockBytes, 9);
  Spool spool(dirfd_);
  for (std::size_t pos = 0; pos < data.size(); pos += Spool::kBlockBytes) {
    spool.append(std::span(data.data() + pos, Spool::kBlockBytes));
    spool.wait_beyond(pos);  // the block is on the disk
  }
  spool.flush();
  spool.close_input();
  EXPECT_EQ(spool.overflowed_blocks(), 0u);
  EXPECT_EQ(read_all(spool), data);
  spool.persist(dirfd_, "d.core");
  EXPECT_EQ(resident_pages(dirfd_, "d.core"), 0);
}

// spool_direct_io = false: the same bytes, through the page cache (what is written stays resident).
TEST_F(SpoolTest, WithoutDirectIoTheDataGoThroughThePageCache) {
  const auto data = random_bytes(4 * Spool::kBlockBytes, 11);
  Spool spool(dirfd_, /*direct_io=*/false);
  spool.append(data);
  spool.flush();
  spool.close_input();
  EXPECT_EQ(read_all(spool), data);
  spool.persist(dirfd_, "p.core");
  EXPECT_GT(resident_pages(dirfd_, "p.core"), 0);
}

// The disk falls behind (here: the writer thread is held in its progress callback): with an
// overflow descriptor, submit() writes the blocks itself instead of waiting, the writer thread
// still reports progress in file order, and the file holds every block in place.
TEST_F(SpoolTest, BlockWriterOverflowsToThePageCacheWhenTheDiskIsBehind) {
  const int fd = ::openat(dirfd_, "bw", O_CREAT | O_RDWR | O_CLOEXEC, 0600);
  const int overflow = ::openat(dirfd_, "bw", O_WRONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_GE(overflow, 0);
  HeldDisk disk;
  BlockWriter::Options options;
  options.overflow_fd = overflow;
  options.on_written = disk.callback();  // the "disk" is stuck until the test lets it go
  const auto data = random_bytes(8 * kPage, 12);
  {
    BlockWriter writer(fd, kPage, /*depth=*/1, options);
    const ReleaseOnExit release{disk};
    for (std::size_t i = 0; i < 8; ++i) {  // would block on the second block without overflow
      std::memcpy(writer.block(), data.data() + i * kPage, kPage);
      writer.submit(kPage);
    }
    EXPECT_GE(writer.overflowed(), 5u) << "the stuck writer holds at most 3 blocks";
    disk.release();
    EXPECT_EQ(writer.finish(), data.size());
  }
  const auto progress = disk.progress();
  ASSERT_FALSE(progress.empty());
  EXPECT_TRUE(std::is_sorted(progress.begin(), progress.end()));
  EXPECT_EQ(progress.back(), data.size());
  std::vector<std::byte> back(data.size());
  EXPECT_EQ(::pread(fd, back.data(), back.size(), 0), static_cast<ssize_t>(back.size()));
  EXPECT_EQ(back, data);
  ::close(fd);
  ::close(overflow);
}

// A block the drain writes itself because the disk is behind keeps its zero runs as holes too.
TEST_F(SpoolTest, BlockWriterOverflowLeavesZeroRunsAsHoles) {
  constexpr std::size_t kBlock = 128 * 1024;
  const int fd = ::openat(dirfd_, "ovh", O_CREAT | O_RDWR | O_CLOEXEC, 0600);
  const int overflow = ::openat(dirfd_, "ovh", O_WRONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_GE(overflow, 0);
  HeldDisk disk;
  BlockWriter::Options options;
  options.skip_zero_runs = true;
  options.overflow_fd = overflow;
  options.on_written = disk.callback();
  auto data = random_bytes(4 * kBlock, 14);
  std::fill_n(data.begin() + 2 * kBlock, kBlock, std::byte{0});  // block 2: all zeros
  {
    BlockWriter writer(fd, kBlock, /*depth=*/1, options);
    const ReleaseOnExit release{disk};
    for (std::size_t i = 0; i < 4; ++i) {
      std::memcpy(writer.block(), data.data() + i * kBlock, kBlock);
      writer.submit(kBlock);
      if (i == 0) {
        ASSERT_TRUE(disk.wait_held());
      }
    }
    EXPECT_EQ(writer.overflowed(), 2u) << "blocks 2 and 3: block 1 waits in the queue, the writer holds block 0";
    disk.release();
    EXPECT_EQ(writer.finish(), data.size());
  }
  std::vector<std::byte> back(data.size());
  EXPECT_EQ(::pread(fd, back.data(), back.size(), 0), static_cast<ssize_t>(back.size()));
  EXPECT_EQ(back, data);
  EXPECT_EQ(::lseek(fd, 0, SEEK_HOLE), static_cast<off_t>(2 * kBlock)) << "the overflowed zero block is a hole";
  EXPECT_EQ(::lseek(fd, 2 * kBlock, SEEK_DATA), static_cast<off_t>(3 * kBlock));
  ::close(fd);
  ::close(overflow);
}

// Whole blocks queued one after the other leave in one write (the writer thread is held after the
// first, so the next four queue up): progress is reported once for the four, the zero run among
// them is still a hole, and the file holds every byte in place.
TEST_F(SpoolTest, BlockWriterGathersQueuedBlocksIntoOneWriteAndKeepsTheirHoles) {
  constexpr std::size_t kBlock = 128 * 1024;  // two zero-run granules
  const int fd = ::openat(dirfd_, "batch", O_CREAT | O_RDWR | O_CLOEXEC, 0600);
  ASSERT_GE(fd, 0);
  HeldDisk disk;
  BlockWriter::Options options;
  options.skip_zero_runs = true;
  options.on_written = disk.callback();
  auto data = random_bytes(5 * kBlock, 13);
  std::fill_n(data.begin() + 2 * kBlock + kBlock / 2, kBlock / 2, std::byte{0});  // block 2's second half
  {
    BlockWriter writer(fd, kBlock, /*depth=*/4, options);
    const ReleaseOnExit release{disk};
    for (std::size_t i = 0; i < 5; ++i) {  // the first is written, the other four wait in the queue
      std::memcpy(writer.block(), data.data() + i * kBlock, kBlock);
      writer.submit(kBlock);
      if (i == 0) {  // until the writer is held after the first
        ASSERT_TRUE(disk.wait_held());
      }
    }
    disk.release();
    EXPECT_EQ(writer.finish(), data.size());
  }
  EXPECT_EQ(disk.progress(), (std::vector<std::uint64_t>{kBlock, 5 * kBlock})) << "one write for the four queued blocks";
  std::vector<std::byte> back(data.size());
  EXPECT_EQ(::pread(fd, back.data(), back.size(), 0), static_cast<ssize_t>(back.size()));
  EXPECT_EQ(back, data);
  EXPECT_EQ(::lseek(fd, 0, SEEK_HOLE), static_cast<off_t>(2 * kBlock + kBlock / 2)) << "the zero run is a hole";
  EXPECT_EQ(::lseek(fd, 2 * kBlock + kBlock / 2, SEEK_DATA), static_cast<off_t>(3 * kBlock));
  ::close(fd);
}

// A failed write (a full filesystem) surfaces on the drain side, by commit() or flush(), as the
// filesystem's error.
TEST_F(SpoolTest, AFullFilesystemFailsTheSpool) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to mount a small tmpfs";
  const std::string mnt = dir_ + "/small";
  ASSERT_EQ(::mkdir(mnt.c_str(), 0700), 0);
  if (::mount("tmpfs", mnt.c_str(), "tmpfs", 0, "size=2m") != 0) GTEST_SKIP() << "mount tmpfs: " << std::strerror(errno);
  const int dirfd = ::open(mnt.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(dirfd, 0);
  int err = 0;
  {
    Spool spool(dirfd);
    const auto data = random_bytes(Spool::kBlockBytes, 10);
    try {
      for (int i = 0; i < 8; ++i) spool.append(data);
      spool.flush();
    } catch (const StoreError& e) {
      err = e.error_number;
    }
  }
  ::close(dirfd);
  ::umount2(mnt.c_str(), MNT_DETACH);
  EXPECT_EQ(err, ENOSPC);
}

// A spool kept as the stored core: linked under its name, 0640, whole (a trailing hole included,
// which append() leaves beyond the file's end), and never over an existing file.
TEST_F(SpoolTest, PersistLinksTheSpoolAsTheCore) {
  Spool s(dirfd_);
  const auto data = random_bytes(3 * kPage + 100, 7);
  s.append(data);
  std::vector<std::byte> zeros(32 * kPage);
  s.append(std::vector<std::byte>(kPage - 100, std::byte{1}));  // back to a page boundary
  s.append(zeros);                                             // a trailing hole
  s.flush();
  s.close_input();
  const auto expected = read_all(s);
  ASSERT_EQ(expected.size(), 4 * kPage + 32 * kPage);

  EXPECT_EQ(s.persist(dirfd_, "a.core"), expected.size());
  struct stat sb {};
  ASSERT_EQ(::fstatat(dirfd_, "a.core", &sb, 0), 0);
  EXPECT_EQ(sb.st_mode & 07777, 0640u);
  EXPECT_EQ(static_cast<std::uint64_t>(sb.st_size), expected.size());
  EXPECT_LE(static_cast<std::uint64_t>(sb.st_blocks) * 512, 16 * kPage) << "the zero run past the first 64 KiB stays a hole";
  const int fd = ::openat(dirfd_, "a.core", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  std::vector<std::byte> back(expected.size() + 1);
  EXPECT_EQ(::pread(fd, back.data(), back.size(), 0), static_cast<ssize_t>(expected.size()));
  ::close(fd);
  back.resize(expected.size());
  EXPECT_EQ(back, expected);

  Spool other(dirfd_);
  other.append(data);
  other.flush();
  other.close_input();
  try {
    other.persist(dirfd_, "a.core");
    FAIL() << "persist over an existing core";
  } catch (const StoreError& e) {
    EXPECT_EQ(e.error_number, EEXIST) << e.what();
  }
  ASSERT_EQ(::fstatat(dirfd_, "a.core", &sb, 0), 0);
  EXPECT_EQ(static_cast<std::uint64_t>(sb.st_size), expected.size()) << "the first core is untouched";
}
