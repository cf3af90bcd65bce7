// The "retention" object of the configuration (daemon/policy/config_retention.h): every key, null
// clearing a limit over a base, and errors naming origin, key and reason.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "daemon/policy/config.h"
#include "daemon/policy/config_retention.h"

using namespace coredumpd;

namespace {

constexpr std::uint64_t MiB = 1024 * 1024;

}  // namespace

TEST(RetentionParse, FullObject) {
  const auto j = nlohmann::json::parse(R"({
    "max_use": "8G", "keep_free": "10%", "max_age": "30d", "max_use_per_uid": 1073741824,
    "max_use_per_rule": {"big-servers": "4G", "": "512M"}
  })");
  const RetentionLimits l = parse_retention("coredumpd.json", j);
  EXPECT_EQ(l.max_use_bytes, 8 * 1024 * MiB);
  EXPECT_FALSE(l.keep_free_bytes);
  EXPECT_DOUBLE_EQ(*l.keep_free_percent, 10.0);
  EXPECT_EQ(l.max_age, std::chrono::seconds(30 * 86400));
  EXPECT_EQ(l.max_use_per_uid_bytes, 1024 * MiB);
  ASSERT_EQ(l.max_use_per_rule_bytes.size(), 2U);
  EXPECT_EQ(l.max_use_per_rule_bytes.at("big-servers"), 4 * 1024 * MiB);
  EXPECT_EQ(l.max_use_per_rule_bytes.at(""), 512 * MiB);
  EXPECT_TRUE(l.any());
  EXPECT_FALSE(parse_retention("x", nlohmann::json::object()).any());

  // Over a base: keys present replace, null clears, keep_free switches form.
  const RetentionLimits l2 = parse_retention(
      "drop-in.json", nlohmann::json::parse(R"({"keep_free": "1G", "max_age": null, "max_age": 60})"), l);
  EXPECT_EQ(l2.keep_free_bytes, 1024 * MiB);
  EXPECT_FALSE(l2.keep_free_percent);
  EXPECT_EQ(l2.max_use_bytes, 8 * 1024 * MiB);
  const RetentionLimits l3 =
      parse_retention("d", nlohmann::json::parse(R"({"max_use": null, "max_use_per_rule": null})"), l);
  EXPECT_FALSE(l3.max_use_bytes);
  EXPECT_TRUE(l3.max_use_per_rule_bytes.empty());
}

TEST(RetentionParse, ErrorsNameOriginKeyAndReason) {
  const auto err = [](const std::string& text) -> std::string {
    try {
      parse_retention("/etc/coredumpd/coredumpd.json", nlohmann::json::parse(text));
    } catch (const ConfigError& e) {
      return e.what();
    }
    return "(no error)";
  };
  const std::string o = "/etc/coredumpd/coredumpd.json: ";
  EXPECT_EQ(err(R"({"max_uze": 1})").rfind(o + "retention.max_uze: unknown key", 0), 0U)
      << err(R"({"max_uze": 1})");
  EXPECT_EQ(err("[]"), o + "retention: expected an object");
  EXPECT_EQ(err(R"({"max_use": "2X"})").rfind(o + "retention.max_use: invalid size \"2X\"", 0), 0U);
  EXPECT_EQ(err(R"({"max_use": -5})"), o + "retention.max_use: a size cannot be negative");
  EXPECT_EQ(err(R"({"max_use": 1.5})").rfind(o + "retention.max_use: expected a size", 0), 0U);
  EXPECT_EQ(err(R"({"max_use": "100%"})").rfind(o + "retention.max_use: invalid percentage", 0), 0U);
  EXPECT_EQ(err(R"({"percent_cap": "10%"})").rfind(o + "retention.percent_cap: invalid size", 0), 0U);
  EXPECT_EQ(err(R"({"keep_free": "100%"})").rfind(o + "retention.keep_free: invalid percentage", 0), 0U);
  EXPECT_EQ(err(R"({"max_age": "soon"})").rfind(o + "retention.max_age: invalid duration", 0), 0U);
  EXPECT_EQ(err(R"({"max_age": 0})").rfind(o + "retention.max_age: duration 0 out of range", 0), 0U);
  EXPECT_EQ(err(R"({"max_use_per_rule": {"web": "lots"}})")
                .rfind(o + "retention.max_use_per_rule.web: invalid size", 0), 0U);
  EXPECT_EQ(err(R"({"max_use_per_rule": 5})")
                .rfind(o + "retention.max_use_per_rule: expected an object", 0), 0U);
}

// max_use as "P%" of the filesystem, like keep_free; one form clears the other.
TEST(RetentionParse, MaxUseAsAPercentageAndTheCap) {
  const RetentionLimits l =
      parse_retention("a", nlohmann::json::parse(R"({"max_use": "12.5%", "percent_cap": "1G"})"));
  EXPECT_FALSE(l.max_use_bytes);
  EXPECT_DOUBLE_EQ(*l.max_use_percent, 12.5);
  EXPECT_EQ(l.percent_cap_bytes, 1024 * MiB);
  EXPECT_TRUE(l.any());
  const RetentionLimits l2 = parse_retention("b", nlohmann::json::parse(R"({"max_use": "2G", "percent_cap": null})"), l);
  EXPECT_EQ(l2.max_use_bytes, 2048 * MiB);
  EXPECT_FALSE(l2.max_use_percent);
  EXPECT_FALSE(l2.percent_cap_bytes);
}

// The built-in limits are systemd-coredump's, and a document can lift each of them.
TEST(RetentionDefaults, SystemdCoredumpsAndOverridable) {
  const Config c;
  EXPECT_DOUBLE_EQ(c.retention.max_use_percent.value_or(0), 10.0);
  EXPECT_DOUBLE_EQ(c.retention.keep_free_percent.value_or(0), 15.0);
  EXPECT_EQ(c.retention.percent_cap_bytes, 4096 * MiB);
  EXPECT_EQ(c.retention.max_core_age, std::chrono::seconds(3 * 86400));
  EXPECT_FALSE(c.retention.max_age) << "records outlive their cores by default";
  EXPECT_FALSE(c.retention.max_use_bytes);
  EXPECT_EQ(c.defaults.max_core_bytes, 32 * 1024 * MiB);
  const Config lifted = apply_config_json("x", R"({"retention": {"max_use": null, "keep_free": null, "max_core_age": null},
                                                   "defaults": {"max_core_bytes": null}})", Config{});
  EXPECT_FALSE(lifted.retention.max_use_percent);
  EXPECT_FALSE(lifted.retention.keep_free_percent);
  EXPECT_FALSE(lifted.retention.max_core_age);
  EXPECT_FALSE(lifted.defaults.max_core_bytes);
  EXPECT_FALSE(parse_retention("dumpctl", nlohmann::json::object()).any()) << "only the daemon's Config has defaults";
}

TEST(RetentionDefaults, DescribedInBytesForTheStoresFilesystem) {
  const Config c;
  // A store that does not exist yet: its nearest existing parent's filesystem.
  const std::string line = describe_retention(c.retention, c.defaults.max_core_bytes, "/tmp/no/such/store");
  EXPECT_EQ(line.rfind("retention for /tmp/no/such/store (filesystem of ", 0), 0U) << line;
  EXPECT_NE(line.find("(10% of the filesystem, at most 4294967296)"), std::string::npos) << line;
  EXPECT_NE(line.find("(15% of the filesystem, at most 4294967296)"), std::string::npos) << line;
  EXPECT_NE(line.find("max_age none, max_core_age 259200 s"), std::string::npos) << line;
  EXPECT_NE(line.find("max_core_bytes 34359738368 bytes"), std::string::npos) << line;
  EXPECT_EQ(line.find("max_use none"), std::string::npos) << line;
}
