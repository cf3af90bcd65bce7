// Unit tests of the spool between the drain and the compressor: bytes come back identical, long
// zero runs become holes (no disk), short ones do not (no syscall per page).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <random>
#include <thread>
#include <vector>

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
