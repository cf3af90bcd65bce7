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

}  // namespace
}  // namespace coredumpd
