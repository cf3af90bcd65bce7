// Unit tests of the per-rule limit keys: "rate_limit" and "max_use" in "defaults" and rules, their
// errors, and how "max_use" feeds the retention quotas (effective_retention()).
#include <gtest/gtest.h>

#include "daemon/policy/config.h"
#include "tests/unit/config_test_util.h"

using namespace coredumpd;

using coredumpd::unit::error_of;
using coredumpd::unit::parse;

TEST(RuleLimitsConfig, RateLimitIsReadAndInherited) {
  const Config c = parse(R"({
    "defaults": {"rate_limit": {"burst": 5, "interval_s": 60}},
    "rules": [{"name": "a", "match": {"comm": "a"}},
              {"name": "b", "match": {"comm": "b"}, "rate_limit": {"interval_s": 3600, "burst": 1}},
              {"name": "c", "match": {"comm": "c"}, "rate_limit": null}]})");
  ASSERT_TRUE(c.defaults.rate_limit);
  EXPECT_EQ(c.defaults.rate_limit->burst, 5u);
  EXPECT_EQ(c.defaults.rate_limit->interval.count(), 60);
  ASSERT_EQ(c.rules.size(), 3u);
  ASSERT_TRUE(c.rules[0].policy.rate_limit);
  EXPECT_EQ(c.rules[0].policy.rate_limit->burst, 5u);
  ASSERT_TRUE(c.rules[1].policy.rate_limit);
  EXPECT_EQ(c.rules[1].policy.rate_limit->burst, 1u);
  EXPECT_EQ(c.rules[1].policy.rate_limit->interval.count(), 3600);
  EXPECT_FALSE(c.rules[2].policy.rate_limit);
  EXPECT_FALSE(parse("{}").defaults.rate_limit);
}

TEST(RuleLimitsConfig, MaxUseFeedsTheRuleQuotas) {
  const Config c = parse(R"({
    "defaults": {"max_use": "1M"},
    "retention": {"max_use_per_rule": {"b": 2048, "other": 4096}},
    "rules": [{"name": "a", "match": {"comm": "a"}, "max_use": "1.5K"},
              {"name": "b", "match": {"comm": "b"}, "max_use": 2048},
              {"name": "c", "match": {"comm": "c"}}]})");
  EXPECT_EQ(c.rules[0].policy.max_use, 1536u);
  EXPECT_FALSE(c.rules[2].policy.max_use) << "the defaults' quota is not copied into every rule";
  const RetentionLimits l = effective_retention(c);
  const std::map<std::string, std::uint64_t> want{{"", 1u << 20}, {"a", 1536}, {"b", 2048}, {"other", 4096}};
  EXPECT_EQ(l.max_use_per_rule_bytes, want);
  EXPECT_TRUE(l.any());
  EXPECT_FALSE(effective_retention(parse(R"({"retention": {"max_use": null, "keep_free": null, "max_core_age": null}})")).any())
      << "no limit once the built-in ones are lifted";
  EXPECT_TRUE(effective_retention(parse("{}")).any()) << "systemd-coredump's limits by default";
}

TEST(RuleLimitsConfig, ErrorsNameFileKeyAndReason) {
  const struct { const char* json; const char* expect; } cases[] = {
      {R"({"defaults": {"rate_limit": 5}})", "test.json: defaults.rate_limit: expected {\"burst\""},
      {R"({"defaults": {"rate_limit": {"burst": 5}}})", "test.json: defaults.rate_limit.interval_s: missing"},
      {R"({"defaults": {"rate_limit": {"interval_s": 5}}})", "test.json: defaults.rate_limit.burst: missing"},
      {R"({"defaults": {"rate_limit": {"burst": 0, "interval_s": 5}}})",
       "defaults.rate_limit.burst: value 0 out of range [1, 1000000]"},
      {R"({"defaults": {"rate_limit": {"burst": 1, "interval_s": "1m"}}})",
       "defaults.rate_limit.interval_s: expected an integer, got string"},
      {R"({"defaults": {"rate_limit": {"burst": 1, "interval_s": 604801}}})",
       "defaults.rate_limit.interval_s: value 604801 out of range"},
      {R"({"rules": [{"name": "x", "match": {}, "rate_limit": {"burst": 1, "interval_s": 1, "per": "exe"}}]})",
       "rules[0].rate_limit.per: unknown key"},
      {R"({"rules": [{"name": "x", "match": {}, "max_use": "lots"}]})", "rules[0].max_use: malformed size \"lots\""},
      {R"({"rules": [{"name": "x", "match": {}, "max_use": -1}]})", "rules[0].max_use: value -1 out of range"},
      {R"({"defaults": {"max_use": true}})", "defaults.max_use: expected a size"},
      {R"({"retention": {"max_use_per_rule": {"x": 1000}}, "rules": [{"name": "x", "match": {}, "max_use": 2000}]})",
       "rules[0].max_use: conflicts with retention.max_use_per_rule[\"x\"]"},
      {R"({"rules": [{"name": "x", "match": {"comm": "a"}, "max_use": 1}, {"name": "x", "match": {}, "max_use": 2}]})",
       "rules[1].max_use: conflicts with rules[0].max_use"},
  };
  for (const auto& c : cases) {
    const auto err = error_of(c.json);
    EXPECT_NE(err.find(c.expect), std::string::npos) << c.json << " -> \"" << err << "\"";
  }
}
