// uid_map/gid_map parsing and mapping (id_map.h).
#include <random>

#include <gtest/gtest.h>

#include "tests/unit/container_test_util.h"

using namespace coredumpd;
using namespace coredumpd::container_test;

// ---------------------------------------------------------------------------------------------
// id maps

TEST(IdMap, IdentityMap) {
  const std::string map = "         0          0 4294967295\n";
  EXPECT_EQ(map_id_to_namespace(0, map), 0);
  EXPECT_EQ(map_id_to_namespace(1000, map), 1000);
  EXPECT_EQ(map_id_to_namespace(4294967294, map), 4294967294);
  EXPECT_FALSE(map_id_to_namespace(4294967295, map).has_value());  // (uid_t)-1 is no id
  EXPECT_FALSE(map_id_to_namespace(-1, map).has_value());
  EXPECT_FALSE(map_id_to_namespace(INT64_MAX, map).has_value());
  EXPECT_FALSE(map_id_to_namespace(INT64_MIN, map).has_value());
  EXPECT_EQ(map_id_from_namespace(65534, map), 65534);
}

TEST(IdMap, SubordinateRange) {
  const std::string map = "0 100000 65536";
  EXPECT_EQ(map_id_to_namespace(100000, map), 0);
  EXPECT_EQ(map_id_to_namespace(100033, map), 33);
  EXPECT_EQ(map_id_to_namespace(165535, map), 65535);
  EXPECT_FALSE(map_id_to_namespace(165536, map).has_value());
  EXPECT_FALSE(map_id_to_namespace(99999, map).has_value());
  EXPECT_FALSE(map_id_to_namespace(0, map).has_value());
  EXPECT_EQ(map_id_from_namespace(0, map), 100000);
  EXPECT_EQ(map_id_from_namespace(65535, map), 165535);
  EXPECT_FALSE(map_id_from_namespace(65536, map).has_value());
}

TEST(IdMap, MultipleRanges) {
  // rootless podman: the user's own uid as root, then the subordinate range.
  const std::string map = "         0       1000          1\n         1     100000      65536\n";
  EXPECT_EQ(map_id_to_namespace(1000, map), 0);
  EXPECT_EQ(map_id_to_namespace(100000, map), 1);
  EXPECT_EQ(map_id_to_namespace(165535, map), 65536);
  EXPECT_FALSE(map_id_to_namespace(1001, map).has_value());
  EXPECT_FALSE(map_id_to_namespace(0, map).has_value());
  EXPECT_EQ(map_id_from_namespace(0, map), 1000);
  EXPECT_EQ(map_id_from_namespace(2, map), 100001);
  const auto extents = parse_id_map(map);
  ASSERT_TRUE(extents);
  ASSERT_EQ(extents->size(), 2u);
  EXPECT_EQ((*extents)[1].inside, 1u);
  EXPECT_EQ((*extents)[1].outside, 100000u);
  EXPECT_EQ((*extents)[1].count, 65536u);
  // Blanks the kernel accepts.
  EXPECT_TRUE(parse_id_map("0\t1000\t1\r\n1 100000 5 \n"));
}

TEST(IdMap, EmptyMapMapsNothing) {
  const auto extents = parse_id_map("");
  ASSERT_TRUE(extents);
  EXPECT_TRUE(extents->empty());
  EXPECT_FALSE(map_id_to_namespace(0, "").has_value());
}

TEST(IdMap, HostileMapsAreRejected) {
  const std::string bad[] = {
      "\n",                          // a blank line
      "0 0 1\n\n",                   // a blank line at the end
      " ",
      "0 0",                         // too few fields
      "0 0 1 1",                     // too many
      "0 0 0",                       // empty range
      "0 0 4294967296",              // count beyond 32 bits
      "4294967295 0 1",              // (u32)-1 is no id
      "0 4294967295 1",
      "1 0 4294967295",              // inside range wraps
      "0 1 4294967295",              // outside range wraps
      "4294967294 0 2",
      "99999999999999999999999999 0 1",  // would overflow a naive parser
      "-1 0 1", "+1 0 1", "0x10 0 1", "1e3 0 1", "0,0,1", "0 0 1x", "a b c",
      std::string("0 0 1\0", 6),     // NUL
      "0 0 1\n0 0 1",                // duplicate
      "0 100 10\n5 200 10",          // inside ranges overlap
      "0 100 10\n20 105 10",         // outside ranges overlap
      "0 0 4294967295\n5 5 1",
  };
  for (const auto& map : bad) {
    EXPECT_FALSE(parse_id_map(map).has_value()) << '"' << map << '"';
    EXPECT_FALSE(map_id_to_namespace(0, map).has_value()) << map;
    EXPECT_FALSE(map_id_from_namespace(0, map).has_value()) << map;
  }
  // Adjacent, not overlapping, is fine.
  EXPECT_TRUE(parse_id_map("0 100 10\n10 110 10\n"));
}

TEST(IdMap, AtMost340Lines) {
  std::string map;
  for (int i = 0; i < 340; ++i) map += std::to_string(i * 10) + " " + std::to_string(100000 + i * 10) + " 10\n";
  const auto extents = parse_id_map(map);
  ASSERT_TRUE(extents);
  EXPECT_EQ(extents->size(), 340u);
  EXPECT_EQ(map_id_to_namespace(100000 + 3395, map), 3395);
  EXPECT_EQ(map_id_from_namespace(3399, map), 103399);
  map += "3400 103400 10\n";
  EXPECT_FALSE(parse_id_map(map).has_value());
  EXPECT_FALSE(map_id_to_namespace(100000, map).has_value());
}

TEST(IdMap, RandomMapsRoundTrip) {
  std::mt19937 rng(777);
  const char alphabet[] = "0123456789 \n\t-";
  for (int iter = 0; iter < 20000; ++iter) {
    std::string map;
    const auto n = rng() % 60;
    for (unsigned i = 0; i < n; ++i) map += alphabet[rng() % (sizeof(alphabet) - 1)];
    const auto extents = parse_id_map(map);
    if (!extents) continue;
    for (const auto& e : *extents) {
      const std::int64_t last_inside = std::int64_t{e.inside} + e.count - 1;
      EXPECT_EQ(map_id_from_namespace(e.inside, map), e.outside);
      EXPECT_EQ(map_id_to_namespace(std::int64_t{e.outside} + e.count - 1, map), last_inside);
    }
  }
}
