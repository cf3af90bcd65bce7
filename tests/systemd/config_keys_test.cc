// The key tables (daemon/policy/config_keys.h) against the files that describe them: every key
// appears in config/coredumpd.json (as a setting or, for test-only keys and rule conditions, in a
// comment), so the shipped file stays the complete reference; and docs/configuration.md is what
// config_keys_markdown() generates. COREDUMPD_UPDATE_DOCS=1 rewrites a stale docs/configuration.md.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <set>

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

}  // namespace
}  // namespace coredumpd
