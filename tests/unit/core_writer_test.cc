// Unit tests of CoreWriter: what it stores decompresses to what it was given, whether the file is
// written with O_DIRECT or through the page cache, whole blocks or not; nothing is
// left under the name before commit().
// ZSTD_getFrameHeader (the window a frame declares) is in zstd's "static linking only" section.
#define ZSTD_STATIC_LINKING_ONLY
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <linux/magic.h>
#include <zstd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <random>
#include <vector>

#include "daemon/dump/core_writer.h"

using namespace coredumpd;

namespace {

// A directory on `parent`'s filesystem, removed at the end.
class TempDir {
 public:
  explicit TempDir(const char* parent) {
    std::string tmpl = std::string(parent) + "/coredumpd-writer.XXXXXX";
    if (::mkdtemp(tmpl.data())) path_ = tmpl;
    if (!path_.empty()) fd_ = ::open(path_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  }
  ~TempDir() {
    if (fd_ >= 0) ::close(fd_);
    if (!path_.empty()) std::filesystem::remove_all(path_);
  }
  int fd() const { return fd_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
};

// Half random bytes, half a repeated text: compressible, but not to nothing.
std::vector<std::byte> sample(std::size_t n) {
  std::mt19937_64 gen(7);
  std::vector<std::byte> v(n);
  for (std::size_t i = 0; i < n; ++i)
    v[i] = (i / 4096) % 2 ? static_cast<std::byte>("core dump "[i % 10]) : static_cast<std::byte>(gen());
  return v;
}

std::vector<std::byte> decompress_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  const std::vector<char> packed((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ZSTD_DCtx* dctx = ZSTD_createDCtx();
  std::vector<std::byte> out;
  std::vector<std::byte> buf(1 << 20);
  ZSTD_inBuffer zin{packed.data(), packed.size(), 0};
  while (zin.pos < zin.size) {
    ZSTD_outBuffer zout{buf.data(), buf.size(), 0};
    const std::size_t rc = ZSTD_decompressStream(dctx, &zout, &zin);
    if (ZSTD_isError(rc)) {
      ADD_FAILURE() << "zstd: " << ZSTD_getErrorName(rc);
      break;
    }
    out.insert(out.end(), buf.data(), buf.data() + zout.pos);
  }
  ZSTD_freeDCtx(dctx);
  return out;
}

// Writes `core` in uneven pieces plus a run of zeros, commits, and checks the stored file.
void round_trip(const TempDir& dir, int threads, std::optional<bool> expect_direct) {
  auto core = sample(5 * 1024 * 1024 + 12345);  // several output blocks and a partial last one
  CoreWriter writer(dir.fd(), "core.zst", CompressionOptions{3, threads});
  if (expect_direct) {
    EXPECT_EQ(writer.direct_io(), *expect_direct);
  }
  for (std::size_t pos = 0; pos < core.size();) {
    const std::size_t n = std::min<std::size_t>(core.size() - pos, 777'777);
    writer.write(std::span(core.data() + pos, n));
    pos += n;
  }
  writer.write_zeros(3 << 20);
  core.resize(core.size() + (3 << 20));
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/core.zst")) << "visible before commit()";
  const std::uint64_t stored = writer.commit();

  const std::string path = dir.path() + "/core.zst";
  ASSERT_TRUE(std::filesystem::exists(path));
  EXPECT_EQ(std::filesystem::file_size(path), stored);
  EXPECT_LT(stored, core.size() * 3 / 4) << "the text half and the zeros compress";
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
  EXPECT_EQ(decompress_file(path), core);
}

bool is_tmpfs(const std::string& path) {
  struct statfs fs {};
  return ::statfs(path.c_str(), &fs) == 0 && fs.f_type == TMPFS_MAGIC;
}

}  // namespace

// /var/tmp is on the root filesystem (ext4 here): O_DIRECT whole blocks, a buffered tail.
TEST(CoreWriterTest, RoundTripWithDirectIo) {
  TempDir dir("/var/tmp");
  ASSERT_GE(dir.fd(), 0);
  if (is_tmpfs(dir.path())) GTEST_SKIP() << "/var/tmp is tmpfs here: no O_DIRECT to test";
  round_trip(dir, 2, /*expect_direct=*/true);
}

TEST(CoreWriterTest, RoundTripSingleThreaded) {
  TempDir dir("/var/tmp");
  ASSERT_GE(dir.fd(), 0);
  round_trip(dir, 0, is_tmpfs(dir.path()) ? std::nullopt : std::optional(true));
}

// tmpfs takes O_DIRECT since Linux 6.6 and refuses it at open before: the same bytes either way.
TEST(CoreWriterTest, RoundTripOnTmpfs) {
  TempDir dir("/dev/shm");
  if (dir.fd() < 0 || !is_tmpfs(dir.path())) GTEST_SKIP() << "no tmpfs at /dev/shm";
  round_trip(dir, 2, std::nullopt);
}

// An uncommitted writer leaves nothing behind.
TEST(CoreWriterTest, DestroyedBeforeCommitLeavesNothing) {
  TempDir dir("/var/tmp");
  ASSERT_GE(dir.fd(), 0);
  {
    CoreWriter writer(dir.fd(), "gone.zst", CompressionOptions{3, 2});
    const auto core = sample(3 << 20);
    writer.write(core);
  }
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
}

// A full filesystem: the writer thread's ENOSPC reaches the compressor as a StoreError (at a later
// write or at commit), and nothing appears under the name. Needs root (mounts a 2 MiB tmpfs).
TEST(CoreWriterTest, FullFilesystemFailsWithEnospcAndLeavesNothing) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to mount a small tmpfs";
  TempDir dir("/var/tmp");
  ASSERT_GE(dir.fd(), 0);
  ASSERT_EQ(::mount("tmpfs", dir.path().c_str(), "tmpfs", 0, "size=2m"), 0) << std::strerror(errno);
  const int fd = ::open(dir.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  std::mt19937_64 gen(11);
  std::vector<std::byte> noise(8 << 20);  // incompressible: 8 MiB stored, 2 MiB of room
  for (auto& b : noise) b = static_cast<std::byte>(gen());
  int error_number = -1;
  try {
    CoreWriter writer(fd, "big.zst", CompressionOptions{3, 2});
    writer.write(noise);
    writer.commit();
  } catch (const StoreError& e) {
    error_number = e.error_number;
  }
  EXPECT_EQ(error_number, ENOSPC);
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/big.zst"));
  ::close(fd);
  EXPECT_EQ(::umount2(dir.path().c_str(), MNT_DETACH), 0);
}

// start_new_frame(): the compressor's switch from one idle-time thread to all its workers when the
// stream ends. The file holds two frames and still decompresses, as one stream, to the input.
TEST(CoreWriterTest, NewFrameWithMoreWorkersKeepsOneStream) {
  TempDir dir("/var/tmp");
  ASSERT_GE(dir.fd(), 0);
  const auto core = sample(6 << 20);
  CoreWriter writer(dir.fd(), "two.zst", CompressionOptions{3, 0});
  writer.start_new_frame(0);  // nothing written yet: no empty frame
  writer.write(std::span(core.data(), 2 << 20));
  writer.start_new_frame(2);
  writer.write(std::span(core.data() + (2 << 20), core.size() - (2 << 20)));
  writer.commit();

  const std::string path = dir.path() + "/two.zst";
  std::ifstream in(path, std::ios::binary);
  const std::vector<char> packed((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::size_t first = ZSTD_findFrameCompressedSize(packed.data(), packed.size());
  ASSERT_FALSE(ZSTD_isError(first));
  EXPECT_LT(first, packed.size()) << "a second frame follows";
  EXPECT_EQ(ZSTD_getFrameContentSize(packed.data(), packed.size()), ZSTD_CONTENTSIZE_UNKNOWN);
  const std::size_t second = ZSTD_findFrameCompressedSize(packed.data() + first, packed.size() - first);
  ASSERT_FALSE(ZSTD_isError(second));
  EXPECT_EQ(first + second, packed.size()) << "exactly two frames";
  EXPECT_EQ(decompress_file(path), core);
}

// A long zero run (untouched memory the kernel sent as zeros) is copies of one precompressed frame
// of zeros, not zstd work: the file holds the frame before the run, one frame per whole
// kZeroFrameBytes, and a frame for the tail of the run and what follows, and decompresses, as one
// stream, to the input. With 2 workers as with none.
TEST(CoreWriterTest, LongZeroRunsAreCopiesOfOneZeroFrame) {
  for (const int threads : {0, 2}) {
    SCOPED_TRACE(threads);
    TempDir dir("/var/tmp");
    ASSERT_GE(dir.fd(), 0);
    const auto data = sample(3 << 20);
    const std::uint64_t run = 3 * CoreWriter::kZeroFrameBytes + 12345;
    CoreWriter writer(dir.fd(), "sparse.zst", CompressionOptions{3, threads});
    writer.write(std::span(data.data(), 1 << 20));
    writer.write_zeros(run);
    writer.write(std::span(data.data() + (1 << 20), data.size() - (1 << 20)));
    EXPECT_EQ(writer.bytes_in(), data.size() + run);
    writer.commit();

    const std::string path = dir.path() + "/sparse.zst";
    std::ifstream in(path, std::ios::binary);
    const std::vector<char> packed((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::vector<unsigned long long> content_sizes;
    for (std::size_t pos = 0; pos < packed.size();) {
      const std::size_t n = ZSTD_findFrameCompressedSize(packed.data() + pos, packed.size() - pos);
      ASSERT_FALSE(ZSTD_isError(n)) << ZSTD_getErrorName(n);
      content_sizes.push_back(ZSTD_getFrameContentSize(packed.data() + pos, n));
      pos += n;
    }
    ASSERT_EQ(content_sizes.size(), 5u) << "data, three zero frames, the rest";
    for (std::size_t i = 1; i <= 3; ++i) EXPECT_EQ(content_sizes[i], CoreWriter::kZeroFrameBytes);
    EXPECT_LT(packed.size(), data.size() / 2 + (64 << 10)) << "the zeros take next to nothing";

    std::vector<std::byte> expected(data.begin(), data.begin() + (1 << 20));
    expected.resize(expected.size() + run);
    expected.insert(expected.end(), data.begin() + (1 << 20), data.end());
    EXPECT_EQ(decompress_file(path), expected);
  }
}

namespace {

// The window size (bytes) in the header of the first frame of the file `path`.
std::uint64_t frame_window_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> head(ZSTD_FRAMEHEADERSIZE_MAX);
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  ZSTD_frameHeader header{};
  EXPECT_EQ(ZSTD_getFrameHeader(&header, head.data(), static_cast<std::size_t>(in.gcount())), 0u);
  return header.windowSize;
}

// Compresses 3 MiB of sample() at `level` with `core_tables` and `threads`, checks the round trip,
// and returns the frame's window size.
std::uint64_t window_of(const TempDir& dir, int level, bool core_tables, int threads) {
  const auto core = sample(3 << 20);
  const std::string name = "w" + std::to_string(level) + (core_tables ? "c" : "z") + std::to_string(threads) + ".zst";
  CoreWriter writer(dir.fd(), name, CompressionOptions{level, threads, core_tables});
  writer.write(core);
  writer.commit();
  EXPECT_EQ(decompress_file(dir.path() + "/" + name), core);
  return frame_window_bytes(dir.path() + "/" + name);
}

}  // namespace

// core_tables: the double-fast levels (3 and 4 in libzstd 1.5) get coredumpd's 512 KiB window (and
// tables, which the frame does not show); zstd's own are 2 MiB. Other strategies keep zstd's
// parameters: level 2 (fast) has 1 MiB and level 6 (lazy) 2 MiB either way. With and without workers alike: the parameters are the
// context's, and start_new_frame() keeps them.
TEST(CoreWriterTest, CoreTablesShrinkTheWindowOfTheDoubleFastLevelsOnly) {
  TempDir dir("/var/tmp");
  ASSERT_GE(dir.fd(), 0);
  for (const int threads : {0, 2}) {
    SCOPED_TRACE(threads);
    EXPECT_EQ(window_of(dir, 3, true, threads), 512u << 10);
    EXPECT_EQ(window_of(dir, 3, false, threads), 2u << 20);
    EXPECT_EQ(window_of(dir, 4, true, threads), 512u << 10);
    EXPECT_EQ(window_of(dir, 4, false, threads), 2u << 20);
    EXPECT_EQ(window_of(dir, 2, true, threads), 1u << 20);
    EXPECT_EQ(window_of(dir, 6, true, threads), 2u << 20);
    EXPECT_EQ(window_of(dir, 6, false, threads), 2u << 20);
  }
}
