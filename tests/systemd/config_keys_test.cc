// The key tables (daemon/policy/config_keys.h) against the files that describe them: every key
// appears in config/coredumpd.json (as a setting or, for test-only keys and rule conditions, in a
// comment), so the shipped file stays the complete reference; and docs/configuration.md is what
// config_keys_markdown() generates, and the KEYS section of docs/man/coredumpd.json.5.scd what
// config_keys_scdoc() does. COREDUMPD_UPDATE_DOCS=1 rewrites whichever is stale.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <string_view>

#include "daemon/policy/config_keys.h"

namespace coredumpd {
namespace {

std::string read_file(const char* path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(ConfigKeys, ShippedFileMentionsEveryKey) {
  const std::string shipped = read_file(SHIPPED_CONFIG);
  ASSERT_FALSE(shipped.empty()) << SHIPPED_CONFIG;
  const auto keys = config_key_docs();
  EXPECT_GT(keys.size(), 40U);
  for (const auto& k : keys)
    EXPECT_NE(shipped.find("\"" + k.key + "\""), std::string::npos)
        << "config/coredumpd.json does not mention " << k.section << ": \"" << k.key << "\"";
}

TEST(ConfigKeys, EachKeyOnceWithAOneLineDescription) {
  std::set<std::pair<std::string, std::string>> seen;
  for (const auto& k : config_key_docs()) {
    EXPECT_TRUE(seen.emplace(k.section, k.key).second) << k.section << ": " << k.key << " declared twice";
    EXPECT_FALSE(k.type.empty()) << k.key;
    EXPECT_FALSE(k.description.empty()) << k.key;
    EXPECT_EQ(k.description.find('\n'), std::string::npos) << k.key;
  }
}

TEST(ConfigKeys, DocsAreCurrent) {
  const std::string want = config_keys_markdown();
  if (const char* update = std::getenv("COREDUMPD_UPDATE_DOCS"); update && std::string(update) == "1") {
    std::ofstream(CONFIGURATION_MD) << want;
  }
  EXPECT_EQ(read_file(CONFIGURATION_MD), want)
      << CONFIGURATION_MD << " is stale: run config_keys_test with COREDUMPD_UPDATE_DOCS=1 to rewrite it";
}

// The man page with its generated part (between the BEGIN and END comment lines) replaced by `keys`;
// "" when a marker is missing.
std::string with_generated_keys(const std::string& page, const std::string& keys) {
  static constexpr std::string_view kBegin = "; BEGIN generated keys\n", kEnd = "; END generated keys\n";
  const auto begin = page.find(kBegin);
  const auto end = page.find(kEnd);
  if (begin == std::string::npos || end == std::string::npos || end < begin) return "";
  return page.substr(0, begin + kBegin.size()) + keys + page.substr(end);
}

TEST(ConfigKeys, ManPageIsCurrent) {
  const std::string page = read_file(COREDUMPD_JSON_5_SCD);
  const std::string want = with_generated_keys(page, config_keys_scdoc());
  ASSERT_FALSE(want.empty()) << COREDUMPD_JSON_5_SCD << " lacks its \"; BEGIN/END generated keys\" lines";
  if (const char* update = std::getenv("COREDUMPD_UPDATE_DOCS"); update && std::string(update) == "1") {
    std::ofstream(COREDUMPD_JSON_5_SCD) << want;
  }
  EXPECT_EQ(read_file(COREDUMPD_JSON_5_SCD), want)
      << COREDUMPD_JSON_5_SCD << " is stale: run config_keys_test with COREDUMPD_UPDATE_DOCS=1 to rewrite it";
}

}  // namespace
}  // namespace coredumpd
