// Unit tests of the spool between the drain and the compressor: bytes come back identical, long
// zero runs become holes (no disk), short ones do not (no syscall per page), spliced streams keep
// their order.
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <thread>
#include <vector>

#include "daemon/core_writer.h"  // StoreError
#include "daemon/spool.h"

using namespace coredumpd;

namespace {

constexpr std::size_t kPage = 4096;

class SpoolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/var/tmp/coredumpd-spool.XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    dirfd_ = ::open(tmpl, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    ASSERT_GE(dirfd_, 0);
  }
  void TearDown() override {
    ::close(dirfd_);
    std::filesystem::remove_all(dir_);
  }
  std::string dir_;
  int dirfd_ = -1;
};

std::vector<std::byte> random_bytes(std::size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::vector<std::byte> v(n);
  for (auto& b : v) b = static_cast<std::byte>(gen() | 1);  // never a zero byte
  return v;
}

std::vector<std::byte> read_all(const Spool& s) {
  std::vector<std::byte> out(s.size());
  s.read(0, out);
  return out;
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
  spool.close_input();
  ASSERT_EQ(spool.size(), core.size());
  EXPECT_EQ(read_all(spool), core);
  EXPECT_EQ(spool.hole_at(0, core.size()), 0u);
  // The run is split by the 300000-byte pieces; at least 1 MiB - 2 * 300000 of it is a hole.
  std::uint64_t hole_bytes = 0;
  for (std::uint64_t pos = hole_at; pos < hole_at + (1 << 20); pos += kPage) hole_bytes += spool.hole_at(pos, kPage);
  EXPECT_GE(hole_bytes, (1u << 20) - 2 * 300'000u);
  EXPECT_EQ(spool.hole_at(single_zero_page, kPage), 0u) << "an isolated zero page is written, not punched";
}

// Alternating data and zero pages (half-zero heaps): no holes at all, one write per append.
TEST_F(SpoolTest, AlternatingZeroPagesAreWrittenAsData) {
  std::vector<std::byte> core = random_bytes(64 * kPage, 3);
  for (std::size_t p = 1; p < 64; p += 2) std::fill_n(core.begin() + static_cast<std::ptrdiff_t>(p * kPage), kPage, std::byte{0});
  Spool spool(dirfd_);
  spool.append(core);
  spool.close_input();
  EXPECT_EQ(read_all(spool), core);
  for (std::size_t p = 0; p < 64; ++p) EXPECT_EQ(spool.hole_at(p * kPage, kPage), 0u) << "page " << p;
}

// ZERO records (append_zeros) are holes even at the end of the core, and the reader sees the size.
TEST_F(SpoolTest, AppendZerosExtendsWithAHole) {
  Spool spool(dirfd_);
  const auto head = random_bytes(kPage, 4);
  spool.append(head);
  spool.append_zeros(8 << 20);
  std::thread closer([&] { spool.close_input(); });
  EXPECT_EQ(spool.wait_beyond(0), kPage + (8u << 20));
  closer.join();
  EXPECT_EQ(spool.wait_beyond(spool.size()), spool.size()) << "closed: no more bytes to wait for";
  EXPECT_EQ(spool.hole_at(kPage, 8 << 20), 8u << 20);
  std::vector<std::byte> tail(kPage, std::byte{1});
  spool.read(spool.size() - kPage, tail);
  EXPECT_EQ(tail, std::vector<std::byte>(kPage, std::byte{0}));
}

// splice_from(): a head appended by the drain, then the rest of a socket stream spliced in pieces
// no larger than asked; the spool holds the exact stream, EAGAIN when the socket is empty, 0 at EOF.
TEST_F(SpoolTest, SpliceFromSocketKeepsTheStreamInOrder) {
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  ASSERT_EQ(::fcntl(sv[0], F_SETFL, O_NONBLOCK), 0);
  const auto head = random_bytes(3000, 5);  // unaligned: spliced data lands at odd offsets
  const auto body = random_bytes(3 * (1 << 20) + 4321, 6);

  Spool spool(dirfd_);
  spool.append(head);
  errno = 0;
  EXPECT_EQ(spool.splice_from(sv[0], 1 << 20), -1);
  EXPECT_EQ(errno, EAGAIN) << "nothing sent yet";

  std::thread sender([&] {
    for (std::size_t pos = 0; pos < body.size();) {
      const ssize_t n = ::write(sv[1], body.data() + pos, std::min<std::size_t>(body.size() - pos, 100'000));
      if (n <= 0) break;
      pos += static_cast<std::size_t>(n);
    }
    ::close(sv[1]);
  });
  std::uint64_t moved = 0;
  while (true) {
    const ssize_t n = spool.splice_from(sv[0], 65'536);
    if (n == 0) break;
    if (n < 0) {
      ASSERT_EQ(errno, EAGAIN) << std::strerror(errno);
      pollfd p{sv[0], POLLIN, 0};
      ::poll(&p, 1, 1000);
      continue;
    }
    EXPECT_LE(n, 65'536);
    moved += static_cast<std::uint64_t>(n);
  }
  sender.join();
  ::close(sv[0]);
  spool.close_input();
  EXPECT_EQ(moved, body.size());
  ASSERT_EQ(spool.size(), head.size() + body.size());
  auto expected = head;
  expected.insert(expected.end(), body.begin(), body.end());
  EXPECT_EQ(read_all(spool), expected);
}

// The reader wakes for spliced bytes as it does for appended ones.
TEST_F(SpoolTest, SplicedBytesWakeTheReader) {
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  Spool spool(dirfd_);
  std::uint64_t seen = 0;
  std::thread reader([&] { seen = spool.wait_beyond(0); });
  const auto bytes = random_bytes(5000, 7);
  ASSERT_EQ(::write(sv[1], bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  EXPECT_EQ(spool.splice_from(sv[0], 1 << 20), static_cast<ssize_t>(bytes.size()));
  reader.join();
  EXPECT_EQ(seen, bytes.size());
  ::close(sv[0]);
  ::close(sv[1]);
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
  s.close_input();
  const auto expected = read_all(s);
  ASSERT_EQ(expected.size(), 4 * kPage + 32 * kPage);

  EXPECT_EQ(s.persist(dirfd_, "a.core"), expected.size());
  struct stat sb {};
  ASSERT_EQ(::fstatat(dirfd_, "a.core", &sb, 0), 0);
  EXPECT_EQ(sb.st_mode & 07777, 0640u);
  EXPECT_EQ(static_cast<std::uint64_t>(sb.st_size), expected.size());
  EXPECT_LE(static_cast<std::uint64_t>(sb.st_blocks) * 512, 8 * kPage) << "the zero run stays a hole";
  const int fd = ::openat(dirfd_, "a.core", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  std::vector<std::byte> back(expected.size() + 1);
  EXPECT_EQ(::pread(fd, back.data(), back.size(), 0), static_cast<ssize_t>(expected.size()));
  ::close(fd);
  back.resize(expected.size());
  EXPECT_EQ(back, expected);

  Spool other(dirfd_);
  other.append(data);
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
