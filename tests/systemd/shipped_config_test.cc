// config/coredumpd.json, the file installed as /etc/coredumpd/coredumpd.json, must parse and hold
// exactly the built-in defaults: loading it over a base where every setting differs must give
// Config{} back. That proves each key is present (not just commented) and has the default value.
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>

#include "daemon/policy/config.h"
#include "daemon/policy/config_files.h"
#include "daemon/policy/config_json.h"

namespace coredumpd {
namespace {

using std::chrono::milliseconds;

// Every file-settable field changed from its default (but those LeavesOmittedSettingsAlone lists).
Config scrambled() {
  Config c;
  c.socket_path = "/x/other.sock";
  c.store_dir = "/x/other-store";
  c.handshake_timeout = milliseconds(11);
  c.stream_idle_timeout = milliseconds(101);
  c.listen_backlog = 17;
  c.dump_workers = 9;
  c.max_concurrent_dumps = 3;
  c.dump_memory_budget = 7 << 20;
  c.dump_disk_budget = 5 << 20;
  c.overload_action = Action::Reject;
  c.collector_threads = 7;
  c.compression.level = 18;
  c.compression.threads = 5;
  c.close_files_bit = std::uint64_t{1} << 40;
  c.collector_budget = milliseconds(3);
  c.accept_forwarded = !c.accept_forwarded;
  c.retention.max_use_bytes = 1;
  c.retention.keep_free_percent = 5;
  c.retention.max_age = std::chrono::seconds(1);
  c.retention.max_use_per_uid_bytes = 1;
  c.retention.max_use_per_rule_bytes["stale"] = 1;
  c.defaults.action = Action::Reject;
  c.defaults.close_files = !c.defaults.close_files;
  c.defaults.records = !c.defaults.records;
  c.defaults.sparse = !c.defaults.sparse;
  c.defaults.memory_types = 0x3;
  c.defaults.post_dump = {};
  c.defaults.honor_rlimit_core = !c.defaults.honor_rlimit_core;
  c.defaults.capture_environ = !c.defaults.capture_environ;
  c.defaults.capture_thread_names = !c.defaults.capture_thread_names;
  c.defaults.compression_level = 17;
  c.defaults.max_core_bytes = 8192;
  c.defaults.truncate_over_size = !c.defaults.truncate_over_size;
  c.defaults.rate_limit = RateLimit{3, std::chrono::seconds(7)};
  c.defaults.max_use = 4096;
  c.defaults.forward_socket = "/x/other-forward.sock";
  c.rules.push_back(Rule{"stale", Match{}, Policy{}});
  return c;
}

void expect_same_policy(const Policy& got, const Policy& want) {
  EXPECT_EQ(got.action, want.action);
  EXPECT_EQ(got.close_files, want.close_files);
  EXPECT_EQ(got.records, want.records);
  EXPECT_EQ(got.sparse, want.sparse);
  EXPECT_EQ(got.memory_types, want.memory_types);
  EXPECT_EQ(got.post_dump, want.post_dump);
  EXPECT_EQ(got.honor_rlimit_core, want.honor_rlimit_core);
  EXPECT_EQ(got.capture_environ, want.capture_environ);
  EXPECT_EQ(got.capture_thread_names, want.capture_thread_names);
  EXPECT_EQ(got.compression_level, want.compression_level);
  EXPECT_EQ(got.max_core_bytes, want.max_core_bytes);
  EXPECT_EQ(got.truncate_over_size, want.truncate_over_size);
  EXPECT_EQ(got.rate_limit.has_value(), want.rate_limit.has_value());
  EXPECT_EQ(got.max_use, want.max_use);
  EXPECT_EQ(got.forward_socket, want.forward_socket);
}

TEST(ShippedConfig, SetsEveryKeyToItsDefault) {
  const Config want;
  Config got;
  ASSERT_NO_THROW(got = load_config_file(SHIPPED_CONFIG, scrambled()));
  EXPECT_EQ(got.socket_path, want.socket_path);
  EXPECT_EQ(got.store_dir, want.store_dir);
  EXPECT_EQ(got.handshake_timeout, want.handshake_timeout);
  EXPECT_EQ(got.stream_idle_timeout, want.stream_idle_timeout);
  EXPECT_EQ(got.listen_backlog, want.listen_backlog);
  EXPECT_EQ(got.dump_workers, want.dump_workers);
  EXPECT_EQ(got.max_concurrent_dumps, want.max_concurrent_dumps);
  EXPECT_EQ(got.dump_memory_budget, want.dump_memory_budget);
  EXPECT_EQ(got.dump_disk_budget, want.dump_disk_budget);
  EXPECT_EQ(got.overload_action, want.overload_action);
  EXPECT_EQ(got.collector_threads, want.collector_threads);
  EXPECT_EQ(got.compression.level, want.compression.level);
  EXPECT_EQ(got.compression.threads, want.compression.threads);
  EXPECT_EQ(got.close_files_bit, want.close_files_bit);
  EXPECT_EQ(got.collector_budget, want.collector_budget);
  EXPECT_EQ(got.accept_forwarded, want.accept_forwarded);
  EXPECT_EQ(got.retention.max_use_bytes, want.retention.max_use_bytes);
  EXPECT_EQ(got.retention.keep_free_bytes, want.retention.keep_free_bytes);
  EXPECT_EQ(got.retention.keep_free_percent, want.retention.keep_free_percent);
  EXPECT_EQ(got.retention.max_age, want.retention.max_age);
  EXPECT_EQ(got.retention.max_use_per_uid_bytes, want.retention.max_use_per_uid_bytes);
  EXPECT_EQ(got.retention.max_use_per_rule_bytes, want.retention.max_use_per_rule_bytes);
  expect_same_policy(got.defaults, want.defaults);
  EXPECT_TRUE(got.rules.empty());
}

// Settings the file leaves out on purpose (test-only, host-dependent, command line) keep the base.
TEST(ShippedConfig, LeavesOmittedSettingsAlone) {
  Config base;
  base.test_collector_delay = milliseconds(42);  // "testing" is commented out in the shipped file
  base.compression_jobs = 63;                    // commented out: its default depends on the CPUs
  base.compress_while_streaming = !base.compress_while_streaming;  // likewise
  base.allow_unverified_peers = true;            // command line only
  const Config got = load_config_file(SHIPPED_CONFIG, base);
  EXPECT_EQ(got.test_collector_delay, milliseconds(42));
  EXPECT_EQ(got.compression_jobs, 63);
  EXPECT_EQ(got.compress_while_streaming, base.compress_while_streaming);
  EXPECT_TRUE(got.allow_unverified_peers);
}

// `coredumpd --check-config` prints every setting: each key of the shipped file (which holds them
// all, config_keys_test) is in config_to_json()'s output, at the top level and in "defaults", and a
// rule carries every policy key. Loading the output gives the same output back.
TEST(ShippedConfig, EffectiveConfigurationShowsEveryKey) {
  const Config c = load_config_file(SHIPPED_CONFIG, Config{});
  const std::string text = [] {
    std::ifstream in(SHIPPED_CONFIG);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }();
  const nlohmann::json shipped = parse_config_text(SHIPPED_CONFIG, text);
  const nlohmann::json out = config_to_json(c);
  for (const auto& [key, value] : shipped.items()) {
    EXPECT_TRUE(out.contains(key)) << key;
    if (!value.is_object() || !out.contains(key)) continue;
    for (const auto& [k2, v2] : value.items()) {
      EXPECT_TRUE(out[key].contains(k2)) << key << "." << k2;
    }
  }
  std::set<std::string> policy_keys, default_keys;
  const nlohmann::json policy = policy_to_json(Policy{});
  for (const auto& [k, v] : policy.items()) policy_keys.insert(k);
  for (const auto& [k, v] : shipped["defaults"].items()) default_keys.insert(k);
  EXPECT_EQ(policy_keys, default_keys) << "a rule shows its full policy: every key \"defaults\" has";
  EXPECT_EQ(config_to_json(apply_config("check.json", out, Config{})), out);
}

// config/examples/: one commented example per runtime, each a valid drop-in. Each parses on its
// own, has rules, and loads as conf.d/ drop-in next to the shipped main file.
TEST(ShippedConfig, EveryExampleParsesAsADropIn) {
  namespace fs = std::filesystem;
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(SHIPPED_EXAMPLES)) names.insert(e.path().filename().string());
  EXPECT_EQ(names, (std::set<std::string>{"docker.json", "kubernetes.json", "lxc.json", "podman.json",
                                          "systemd-nspawn.json", "systemd-services.json"}));

  const fs::path root = fs::temp_directory_path() / ("shipped_config_test." + std::to_string(::getpid()));
  fs::remove_all(root);  // left over by a crashed run
  fs::create_directories(root / "conf.d");
  fs::copy_file(SHIPPED_CONFIG, root / "coredumpd.json");
  for (const auto& name : names) {
    SCOPED_TRACE(name);
    const std::string path = std::string(SHIPPED_EXAMPLES) + "/" + name;
    Config alone;
    ASSERT_NO_THROW(alone = load_config_file(path, Config{}));
    EXPECT_FALSE(alone.rules.empty());
    fs::copy_file(path, root / "conf.d" / name);
  }
  LoadedConfig all;
  ASSERT_NO_THROW(all = load_config((root / "coredumpd.json").string(), Config{}));
  EXPECT_EQ(all.sources.size(), names.size() + 1);
  std::set<std::string> runtimes;
  for (const auto& r : all.config.rules)
    if (r.match.runtime) runtimes.insert(*r.match.runtime);
  for (const char* runtime : {"docker", "podman", "kubernetes", "containerd", "lxc", "systemd-nspawn"})
    EXPECT_TRUE(runtimes.count(runtime)) << runtime;
  fs::remove_all(root);
}

}  // namespace
}  // namespace coredumpd
