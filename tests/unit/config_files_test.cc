// Unit tests of the main file + conf.d/*.json drop-ins (daemon/policy/config_files.h) and of the effective
// configuration written back as JSON (daemon/policy/config_json.h).
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "daemon/policy/config_files.h"
#include "daemon/policy/config_json.h"

using namespace coredumpd;
namespace fs = std::filesystem;

namespace {

class ConfigFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "config_files_test.XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    main_ = dir_ + "/coredumpd.json";
  }
  void TearDown() override { fs::remove_all(dir_); }

  void write(const std::string& relative, const std::string& text) {
    const fs::path p = fs::path(dir_) / relative;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
  }
  std::string error_of(const std::string& main_path, const Config& base = Config{}) {
    try {
      load_config(main_path, base);
    } catch (const ConfigError& e) {
      return e.what();
    }
    return "";
  }

  std::string dir_, main_;
};

// The defaults with the test hooks on (coredumpd --enable-test-hooks): a "testing" section loads.
Config hooks_on() {
  Config c;
  c.test_hooks = true;
  return c;
}

TEST_F(ConfigFiles, DropInsAreMergedInLexicalOrderOverTheMainFile) {
  write("coredumpd.json", R"({
    // the main file
    "dump_workers": 5, "listen_backlog": 100, "compression": {"level": 4, "threads": 1},
    "defaults": {"compression_level": 6, "capture_environ": true},
    "retention": {"max_use_per_rule": {"main": 4096}},
    "rules": [{"name": "main-rule", "match": {"comm": "a"}, "action": "reject"}]})");
  // Written out of order: 20 must be applied after 10, and "10" sorts before "9".
  write("conf.d/20-late.json", R"({"dump_workers": 7,
    "rules": [{"name": "late-rule", "match": {"comm": "c"}}]})");
  write("conf.d/10-early.json", R"({"dump_workers": 6, "compression": {"threads": 3},
    "defaults": {"compression_level": 9, "max_core_bytes": 8192},
    "retention": {"max_use_per_rule": {"early": 8192}},
    "rules": [{"name": "early-rule", "match": {"comm": "b"}, "action": "metadata-only"}]})");
  write("conf.d/9-last.json", R"({"defaults": {"max_core_bytes": null}})");
  write("conf.d/README", "not json, not read");
  write("conf.d/.hidden.json", "{broken");
  write("conf.d/30-dir.json/x", "");

  const LoadedConfig loaded = load_config(main_, Config{});
  EXPECT_EQ(loaded.sources, (std::vector<std::string>{main_, dir_ + "/conf.d/10-early.json",
                                                      dir_ + "/conf.d/20-late.json", dir_ + "/conf.d/9-last.json"}));
  const Config& c = loaded.config;
  EXPECT_EQ(c.dump_workers, 7) << "the last file setting a scalar wins";
  EXPECT_EQ(c.listen_backlog, 100) << "a key no drop-in sets keeps the main file's value";
  EXPECT_EQ(c.compression.level, 4) << "objects are merged key by key";
  EXPECT_EQ(c.compression.threads, 3);
  EXPECT_EQ(c.defaults.compression_level, 9);
  EXPECT_TRUE(c.defaults.capture_environ);
  EXPECT_FALSE(c.defaults.max_core_bytes) << "null replaces: 9-last.json comes after 20-late.json";
  EXPECT_EQ(c.retention.max_use_per_rule_bytes, (std::map<std::string, std::uint64_t>{{"early", 8192}, {"main", 4096}}));
  ASSERT_EQ(c.rules.size(), 3u) << "rules are appended, file by file";
  EXPECT_EQ(c.rules[0].name, "main-rule");
  EXPECT_EQ(c.rules[1].name, "early-rule");
  EXPECT_EQ(c.rules[2].name, "late-rule");
  EXPECT_EQ(c.rules[0].policy.action, Action::Reject);
  EXPECT_EQ(c.rules[0].policy.compression_level, 9) << "every rule starts from the merged defaults";
  EXPECT_EQ(c.rules[2].policy.action, Action::Store);
}

TEST_F(ConfigFiles, DropInsWithoutAMainFile) {
  write("conf.d/50-only.json", R"({"defaults": {"action": "metadata-only"}})");
  const LoadedConfig loaded = load_config(main_, Config{});
  EXPECT_EQ(loaded.sources, std::vector<std::string>{dir_ + "/conf.d/50-only.json"});
  EXPECT_EQ(loaded.config.defaults.action, Action::MetadataOnly);
}

TEST_F(ConfigFiles, NothingAtAllKeepsTheBase) {
  Config base;
  base.dump_workers = 3;
  const LoadedConfig loaded = load_config(main_, base);
  EXPECT_TRUE(loaded.sources.empty());
  EXPECT_EQ(loaded.config.dump_workers, 3);
}

TEST_F(ConfigFiles, ADropInErrorNamesTheDropInItsKeyAndTheReason) {
  write("coredumpd.json", R"({"rules": [{"name": "a", "match": {"comm": "a"}}]})");
  write("conf.d/10-ok.json", R"({"dump_workers": 2})");
  write("conf.d/20-bad.json", R"({"rules": [{"name": "b", "match": {"comm": "b"}, "action": "keep"}]})");
  EXPECT_EQ(error_of(main_), dir_ + "/conf.d/20-bad.json: rules[0].action: expected \"store\", \"reject\", "
                                    "\"metadata-only\" or \"forward\", got \"keep\"")
      << "the rule index counts within the drop-in";

  write("conf.d/20-bad.json", R"({"defaults": {"compression_level": 1,}})");
  EXPECT_NE(error_of(main_).find(dir_ + "/conf.d/20-bad.json: (syntax): "), std::string::npos) << error_of(main_);

  write("conf.d/20-bad.json", R"({"sokcet": "/x"})");
  EXPECT_EQ(error_of(main_), dir_ + "/conf.d/20-bad.json: sokcet: unknown key");

  write("conf.d/20-bad.json", R"({})");
  write("coredumpd.json", R"({"dump_workers": 0})");
  EXPECT_EQ(error_of(main_), main_ + ": dump_workers: value 0 out of range [1, 256]");
}

// Quota conflicts exist only in the merged configuration (each file alone is fine): the error names
// the file that holds the rule at fault and the rule's index in that file, not in the merged list.
TEST_F(ConfigFiles, AQuotaConflictAcrossFilesNamesTheFileAndItsRule) {
  write("coredumpd.json", R"({"retention": {"max_use_per_rule": {"web": 1000}},
    "rules": [{"name": "a", "match": {"comm": "a"}}]})");
  write("conf.d/10-web.json", R"({"rules": [{"name": "b", "match": {"comm": "b"}},
    {"name": "web", "match": {"comm": "w"}, "max_use": 2000}]})");
  EXPECT_EQ(error_of(main_), dir_ + "/conf.d/10-web.json: rules[1].max_use: conflicts with "
                                    "retention.max_use_per_rule[\"web\"] (1000 bytes); set the quota in one place");

  write("coredumpd.json", R"({"rules": [{"name": "a", "match": {"comm": "a"}}]})");
  write("conf.d/10-web.json", R"({"rules": [{"name": "web", "match": {"comm": "w"}, "max_use": 1000}]})");
  write("conf.d/20-web.json", R"({"rules": [{"name": "web", "match": {"comm": "v"}, "max_use": 3000}]})");
  EXPECT_EQ(error_of(main_), dir_ + "/conf.d/20-web.json: rules[0].max_use: conflicts with " + dir_ +
                                 "/conf.d/10-web.json: rules[0].max_use (rules of one name share one quota)");

  write("conf.d/20-web.json", R"({"rules": [{"name": "web", "match": {"comm": "v"}, "max_use": 1000}]})");
  const LoadedConfig ok = load_config(main_, Config{});
  EXPECT_EQ(effective_retention(ok.config).max_use_per_rule_bytes.at("web"), 1000u) << "the same quota twice is fine";
}

TEST_F(ConfigFiles, AMainPathThatIsADirectoryIsAnError) {
  fs::create_directories(main_);
  EXPECT_NE(error_of(main_).find(main_ + ": cannot be read"), std::string::npos) << error_of(main_);
}

TEST(ConfigMerge, ObjectsRecursiveScalarsReplacedTopLevelRulesAppended) {
  auto into = nlohmann::json::parse(R"({"a": {"b": 1, "c": [1]}, "rules": [1], "d": 1})");
  merge_config_json(into, nlohmann::json::parse(R"({"a": {"c": [2], "e": null}, "rules": [2], "d": {"x": 1}})"));
  EXPECT_EQ(into, nlohmann::json::parse(R"({"a": {"b": 1, "c": [2], "e": null}, "rules": [1, 2], "d": {"x": 1}})"));
  auto nested = nlohmann::json::parse(R"({"x": {"rules": [1]}})");
  merge_config_json(nested, nlohmann::json::parse(R"({"x": {"rules": [2]}})"));
  EXPECT_EQ(nested["x"]["rules"], nlohmann::json::array({2})) << "only the top-level rules are appended";
}

// config_to_json() writes every key, and loading its output gives the same configuration back.
TEST(ConfigJson, EffectiveConfigurationRoundTrips) {
  const Config c = apply_config_json("test.json", R"({
    "socket": "/run/x.sock", "store": "/srv/cores", "handshake_timeout_ms": 1500, "dump_workers": 3,
    "compression_jobs": 2, "overload_action": "reject", "compression": {"level": 5, "threads": 0},
    "close_files_bit": 256, "testing": {"collector_delay_ms": 7}, "accept_forwarded": true,
    "retention": {"max_use": "2G", "keep_free": "12.5%", "max_age": "7d", "max_use_per_rule": {"big": 4096}},
    "defaults": {"memory_types": ["anon_private", "elf_headers"], "max_core_bytes": 65536, "over_size": "reject",
                 "rate_limit": {"burst": 3, "interval_s": 60}, "max_use": "1M"},
    "rules": [
      {"name": "web", "match": {"runtime": "docker", "container": "web", "unit": "*.scope", "slice": "system.slice",
                                "namespaces": {"pid": "non-host", "net": 4026531840, "user": "host"}},
       "action": "metadata-only", "post_dump": [], "max_use": 8192},
      {"name": "fwd", "match": {"runtime": "systemd-nspawn"}, "action": "forward", "forward_socket": "/run/in/c.sock",
       "rate_limit": null},
      {"name": "root", "match": {"user": "root", "exe": "/usr/*", "comm": "x", "cgroup": "/a/*"}, "capture_environ": true}
    ]})", hooks_on());
  const nlohmann::json j = config_to_json(c);
  for (const char* key : {"socket", "store", "handshake_timeout_ms", "stream_idle_timeout_ms", "shutdown_grace_ms",
                          "listen_backlog", "dump_workers", "collector_threads", "compression_jobs",
                          "max_concurrent_dumps", "overload_action", "compression", "close_files_bit",
                          "collector_budget_ms", "accept_forwarded", "testing", "retention", "defaults", "rules"})
    EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_EQ(j["defaults"]["memory_types"], nlohmann::json::array({"anon_private", "elf_headers"}));
  EXPECT_EQ(j["retention"]["keep_free"], "12.5%");
  EXPECT_EQ(j["retention"]["max_age"], 7 * 86400);
  // A rule shows its full effective policy: the defaults it inherited included.
  const auto& web = j["rules"][0];
  EXPECT_EQ(web["action"], "metadata-only");
  EXPECT_EQ(web["max_core_bytes"], 65536);
  EXPECT_EQ(web["over_size"], "reject");
  EXPECT_EQ(web["post_dump"], nlohmann::json::array());
  EXPECT_EQ(web["compression_level"], 3);
  EXPECT_EQ(web["match"]["namespaces"]["net"], 4026531840u);
  EXPECT_EQ(web["rate_limit"], (nlohmann::json{{"burst", 3}, {"interval_s", 60}})) << "inherited";
  EXPECT_EQ(web["max_use"], 8192);
  EXPECT_EQ(web["forward_socket"], "/run/coredumpd/coredump.socket");
  const auto& fwd = j["rules"][1];
  EXPECT_EQ(fwd["action"], "forward");
  EXPECT_EQ(fwd["forward_socket"], "/run/in/c.sock");
  EXPECT_EQ(fwd["rate_limit"], nullptr);
  EXPECT_EQ(fwd["max_use"], nullptr) << "the defaults' quota is not a rule's";
  EXPECT_EQ(j["defaults"]["max_use"], 1 << 20);
  EXPECT_EQ(j["accept_forwarded"], true);
  EXPECT_EQ(j["rules"][2]["match"]["uid"], 0) << "\"user\" is shown resolved";

  const Config back = apply_config("check.json", j, hooks_on());
  EXPECT_EQ(config_to_json(back), j);
  EXPECT_EQ(back.retention.keep_free_percent, 12.5);
  EXPECT_EQ(back.defaults.memory_types, c.defaults.memory_types);
  ASSERT_EQ(back.rules.size(), 3u);
  EXPECT_EQ(back.rules[2].match.uid, 0);
  EXPECT_TRUE(back.accept_forwarded);
  ASSERT_TRUE(back.rules[0].policy.rate_limit);
  EXPECT_EQ(back.rules[0].policy.rate_limit->burst, 3u);
  EXPECT_EQ(back.rules[0].policy.max_use, 8192u);
  EXPECT_FALSE(back.rules[1].policy.rate_limit);
  EXPECT_EQ(back.rules[1].policy.forward_socket, "/run/in/c.sock");
  EXPECT_EQ(effective_retention(back).max_use_per_rule_bytes, effective_retention(c).max_use_per_rule_bytes);
}

// keep_free percentages are printed as a file would say them, never in exponent notation (which
// the parser refuses): each loads back to the same value.
TEST(ConfigJson, KeepFreePercentagesLoadBack) {
  for (const char* percent : {"0.00001%", "0.000000001%", "12.5%", "99.999999999%", "50%", "3.14159%"}) {
    SCOPED_TRACE(percent);
    const Config c = apply_config_json("test.json", std::string(R"({"retention": {"keep_free": ")") + percent + R"("}})",
                                       Config{});
    const nlohmann::json j = config_to_json(c);
    Config back;
    ASSERT_NO_THROW(back = apply_config("check.json", j, Config{})) << j["retention"]["keep_free"];
    EXPECT_EQ(back.retention.keep_free_percent, c.retention.keep_free_percent);
    EXPECT_EQ(config_to_json(back), j);
  }
}

}  // namespace

namespace {

// Issue 21.3: a "testing" section in the main file or in any drop-in is refused without the test
// hooks, naming that file and the flag; with them it loads. Without them --check-config's output
// has no "testing" section (so it loads again without the flag); with them it shows the hooks.
TEST_F(ConfigFiles, TestingSectionInAnyFileNeedsTheTestHooks) {
  write("coredumpd.json", R"({"dump_workers": 5})");
  write("conf.d/50-stall.json", R"({"testing": {"collector_delay_ms": 2000, "collector_delay_in": "cwd"}})");
  const std::string err = error_of(main_);
  EXPECT_EQ(err.rfind(dir_ + "/conf.d/50-stall.json: testing: ", 0), 0u) << err;
  EXPECT_NE(err.find("--enable-test-hooks"), std::string::npos) << err;

  const LoadedConfig on = load_config(main_, hooks_on());
  EXPECT_EQ(on.config.test_collector_delay.count(), 2000);
  EXPECT_EQ(config_to_json(on.config)["testing"], (nlohmann::json{{"collector_delay_ms", 2000}, {"collector_delay_in", "cwd"}}));

  fs::remove(fs::path(dir_) / "conf.d/50-stall.json");
  write("coredumpd.json", R"({"testing": {}})");
  EXPECT_EQ(error_of(main_).rfind(main_ + ": testing: ", 0), 0u) << error_of(main_);
  write("coredumpd.json", R"({"dump_workers": 5})");
  const LoadedConfig off = load_config(main_, Config{});
  const nlohmann::json shown = config_to_json(off.config);
  EXPECT_FALSE(shown.contains("testing")) << shown.dump();
  EXPECT_EQ(config_to_json(apply_config("check.json", shown, Config{})), shown);
}

}  // namespace
