// Parsing of retention sizes, percentages and durations.
#include "store/retention_limits.h"

#include <gtest/gtest.h>

namespace coredumpd {
namespace {

using namespace std::chrono_literals;

constexpr std::uint64_t KiB = 1024;
constexpr std::uint64_t MiB = 1024 * KiB;

TEST(RetentionParse, Sizes) {
  EXPECT_EQ(parse_size("0"), 0U);
  EXPECT_EQ(parse_size("4096"), 4096U);
  EXPECT_EQ(parse_size("512B"), 512U);
  EXPECT_EQ(parse_size("2K"), 2048U);
  EXPECT_EQ(parse_size("500M"), 500 * MiB);
  EXPECT_EQ(parse_size("2G"), 2 * 1024 * MiB);
  EXPECT_EQ(parse_size("2GiB"), 2 * 1024 * MiB);
  EXPECT_EQ(parse_size("2gb"), 2 * 1024 * MiB);
  EXPECT_EQ(parse_size(" 1.5 G "), 1536 * MiB);
  EXPECT_EQ(parse_size("1T"), 1024ULL * 1024 * MiB);
  EXPECT_EQ(parse_size("7E"), 7ULL << 60);
  for (const char* bad : {"", "G", "-1", "1.", ".5G", "10%", "2X", "2GG", "2 G B", "8E",
                          "99999999999999999999", "1e6"}) {
    EXPECT_FALSE(parse_size(bad)) << bad;
  }
}

TEST(RetentionParse, PercentsAndDurations) {
  EXPECT_DOUBLE_EQ(*parse_percent("10%"), 10.0);
  EXPECT_DOUBLE_EQ(*parse_percent(" 12.5 % "), 12.5);
  for (const char* bad : {"10", "0%", "100%", "150%", "-5%", "%", "a%"}) {
    EXPECT_FALSE(parse_percent(bad)) << bad;
  }
  EXPECT_EQ(parse_duration("90"), 90s);
  EXPECT_EQ(parse_duration("7d"), 7 * 24h);
  EXPECT_EQ(parse_duration("12h"), 12h);
  EXPECT_EQ(parse_duration("1d 12h"), 36h);
  EXPECT_EQ(parse_duration("1d12h30min"), 36h + 30min);
  EXPECT_EQ(parse_duration("2w"), 14 * 24h);
  EXPECT_EQ(parse_duration("5m"), 5min);
  EXPECT_EQ(parse_duration("30 seconds"), 30s);
  for (const char* bad : {"", "0", "0d", "d", "7x", "1.5d", "-1d", "7d 3", "99999999999999999d"}) {
    EXPECT_FALSE(parse_duration(bad)) << bad;
  }
}

// Percentages resolved for a filesystem: capped, max_use the smaller form, keep_free the larger.
TEST(RetentionResolve, PercentagesOfTheFilesystemWithTheCap) {
  constexpr std::uint64_t GiB = std::uint64_t{1} << 30;
  RetentionLimits l = default_retention();
  // 20 GiB: 10% and 15% are below the 4 GiB cap.
  SpaceLimits s = resolve_space_limits(l, 20 * GiB);
  EXPECT_EQ(s.max_use_bytes, 2 * GiB);
  EXPECT_EQ(s.keep_free_bytes, 3 * GiB);
  // 252 GiB: both capped at 4 GiB, as systemd-coredump's DEFAULT_MAX_USE_UPPER / DEFAULT_KEEP_FREE_UPPER.
  s = resolve_space_limits(l, 252 * GiB);
  EXPECT_EQ(s.max_use_bytes, 4 * GiB);
  EXPECT_EQ(s.keep_free_bytes, 4 * GiB);
  // Unknown filesystem size: percentages do not apply.
  s = resolve_space_limits(l, std::nullopt);
  EXPECT_FALSE(s.max_use_bytes);
  EXPECT_FALSE(s.keep_free_bytes);
  // Both forms: the smaller max_use, the larger keep_free; no cap means the whole share.
  l.percent_cap_bytes.reset();
  l.max_use_bytes = 1 * GiB;
  l.keep_free_bytes = 1 * GiB;
  s = resolve_space_limits(l, 100 * GiB);
  EXPECT_EQ(s.max_use_bytes, 1 * GiB);
  EXPECT_EQ(s.keep_free_bytes, 15 * GiB);
  // Rounded up: 10% of 1001 bytes is 100.1, so 101.
  EXPECT_EQ(resolve_space_limits(default_retention(), 1001).max_use_bytes, 101u);
}

}  // namespace
}  // namespace coredumpd
