// Parsing of the `retention` configuration object.
#include "store/retention_config.h"

#include <gtest/gtest.h>

namespace coredumpd {
namespace {

using namespace std::chrono_literals;

constexpr std::uint64_t KiB = 1024;
constexpr std::uint64_t MiB = 1024 * KiB;

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
    } catch (const RetentionConfigError& e) {
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
  EXPECT_EQ(err(R"({"max_use": "10%"})").rfind(o + "retention.max_use: invalid size", 0), 0U);
  EXPECT_EQ(err(R"({"keep_free": "100%"})").rfind(o + "retention.keep_free: invalid percentage", 0), 0U);
  EXPECT_EQ(err(R"({"max_age": "soon"})").rfind(o + "retention.max_age: invalid duration", 0), 0U);
  EXPECT_EQ(err(R"({"max_age": 0})").rfind(o + "retention.max_age: duration 0 out of range", 0), 0U);
  EXPECT_EQ(err(R"({"max_use_per_rule": {"web": "lots"}})")
                .rfind(o + "retention.max_use_per_rule.web: invalid size", 0), 0U);
  EXPECT_EQ(err(R"({"max_use_per_rule": 5})")
                .rfind(o + "retention.max_use_per_rule: expected an object", 0), 0U);
}

}  // namespace
}  // namespace coredumpd
