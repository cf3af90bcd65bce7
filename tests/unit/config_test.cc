// Unit tests of configuration parsing and per-crash policy selection.
#include <gtest/gtest.h>
#include <unistd.h>

#include "daemon/policy/config.h"
#include "tests/unit/config_test_util.h"
#include "daemon/policy/policy.h"

using namespace coredumpd;

using coredumpd::unit::error_of;
using coredumpd::unit::parse;
using coredumpd::unit::with_test_hooks;

TEST(Config, DefaultsAreTheDocumentedOnes) {
  const Config c = parse("{}");
  EXPECT_EQ(c.socket_path, "/run/coredumpd/coredump.socket");
  EXPECT_EQ(c.store_dir, "/var/lib/coredumpd");
  EXPECT_EQ(c.handshake_timeout.count(), 2000);
  EXPECT_EQ(c.defaults.action, Action::Store);
  EXPECT_FALSE(c.defaults.honor_rlimit_core) << "as the systemd-coredump Debian ships";
  EXPECT_FALSE(c.defaults.capture_environ);
  EXPECT_TRUE(c.defaults.close_files);
  EXPECT_EQ(c.close_files_bit, protocol::COREDUMP_CLOSE_FILES_DEFAULT);
}

TEST(Config, EveryGlobalKeyIsRead) {
  const Config c = parse(R"({
    // comments are allowed
    "socket": "/run/x/s.sock", "store": "/srv/cores", "handshake_timeout_ms": 1500,
    "stream_idle_timeout_ms": 5000, "listen_backlog": 512, "dump_workers": 3, "collector_threads": 1,
    "compression": {"level": 5, "threads": 2, "core_tables": false}, "close_files_bit": 256, "collector_budget_ms": 100,
    "testing": {"collector_delay_ms": 7}, "shutdown_grace_ms": 1234, "spool_direct_io": false, "max_concurrent_dumps": 9,
    "overload_action": "reject", "compression_jobs": 2, "dump_memory_budget": "64M", "dump_disk_budget": 1048576
  })", with_test_hooks());
  EXPECT_EQ(c.dump_memory_budget, std::uint64_t{64} << 20);
  EXPECT_EQ(c.dump_disk_budget, std::uint64_t{1} << 20);
  EXPECT_EQ(c.shutdown_grace.count(), 1234);
  EXPECT_FALSE(c.spool_direct_io) << "default true";
  EXPECT_EQ(c.max_concurrent_dumps, 9);
  EXPECT_EQ(c.overload_action, Action::Reject);
  EXPECT_EQ(c.compression_jobs, 2);
  EXPECT_EQ(c.socket_path, "/run/x/s.sock");
  EXPECT_EQ(c.store_dir, "/srv/cores");
  EXPECT_EQ(c.handshake_timeout.count(), 1500);
  EXPECT_EQ(c.stream_idle_timeout.count(), 5000);
  EXPECT_EQ(c.listen_backlog, 512);
  EXPECT_EQ(c.dump_workers, 3);
  EXPECT_EQ(c.collector_threads, 1);
  EXPECT_EQ(c.compression.level, 5);
  EXPECT_EQ(c.compression.threads, 2);
  EXPECT_FALSE(c.compression.core_tables) << "default true";
  EXPECT_EQ(c.close_files_bit, 256u);
  EXPECT_EQ(c.collector_budget.count(), 100);
  EXPECT_EQ(c.test_collector_delay.count(), 7);
}

// Its default depends on the CPUs (config.h), so both values are read explicitly.
TEST(Config, CompressWhileStreamingIsReadEitherWay) {
  EXPECT_TRUE(parse(R"({"compress_while_streaming": true})").compress_while_streaming);
  EXPECT_FALSE(parse(R"({"compress_while_streaming": false})").compress_while_streaming);
  EXPECT_EQ(Config{}.compress_while_streaming, default_parallelism() >= 4);
}

TEST(Config, PolicyKeysAndRulesInheritDefaults) {
  const Config c = parse(R"({
    "rules": [
      {"name": "secrets", "match": {"exe": "/usr/bin/vault*"}, "action": "reject"},
      {"name": "big", "match": {"comm": "java", "uid": 1000}, "max_core_bytes": 1048576, "over_size": "reject",
       "memory_types": ["anon_private", "elf_headers"], "post_dump": []}
    ],
    "defaults": {"capture_environ": true, "compression_level": 7, "sparse": false, "records": false,
                 "close_files": false, "honor_rlimit_core": false, "action": "metadata-only"}
  })");
  EXPECT_EQ(c.defaults.action, Action::MetadataOnly);
  ASSERT_EQ(c.rules.size(), 2u);
  EXPECT_EQ(c.rules[0].name, "secrets");
  EXPECT_EQ(c.rules[0].policy.action, Action::Reject);
  EXPECT_TRUE(c.rules[0].policy.capture_environ) << "rules start from the defaults, wherever they are written";
  EXPECT_EQ(c.rules[0].policy.compression_level, 7);
  const auto& big = c.rules[1];
  EXPECT_EQ(big.policy.max_core_bytes, 1048576u);
  EXPECT_FALSE(big.policy.truncate_over_size);
  EXPECT_EQ(big.policy.memory_types, 0x11u);
  EXPECT_TRUE(big.policy.post_dump.empty());
  EXPECT_EQ(big.match.uid, 1000);
}

TEST(Config, ErrorsNameFileKeyAndReason) {
  const struct { const char* json; const char* expect; } cases[] = {
      {R"({"sokcet": "/x"})", "test.json: sokcet: unknown key"},
      {R"({"socket": "relative"})", "test.json: socket: expected an absolute path"},
      {R"({"socket": "/tmp/a b"})", "socket: the kernel refuses socket paths with spaces"},
      {R"({"handshake_timeout_ms": "2s"})", "handshake_timeout_ms: expected an integer, got string"},
      {R"({"handshake_timeout_ms": 0})", "handshake_timeout_ms: value 0 out of range"},
      {R"({"compression": {"lvl": 3}})", "compression.lvl: unknown key"},
      {R"({"compression": {"core_tables": 1}})", "compression.core_tables: expected true or false, got number"},
      {R"({"compress_while_streaming": "auto"})", "compress_while_streaming: expected true or false, got string"},
      {R"({"close_files_bit": 3})", "close_files_bit: must be a single bit"},
      {R"({"close_files_bit": 16})", "close_files_bit: collides"},
      {R"({"defaults": {"action": "keep"}})", "defaults.action: expected \"store\""},
      {R"({"defaults": {"memory_types": ["anon", 1]}})", "defaults.memory_types: unknown memory type \"anon\""},
      {R"({"defaults": {"over_size": "drop"}})", "defaults.over_size: expected \"truncate\" or \"reject\""},
      {R"({"defaults": {"post_dump": ["smaps"]}})", "defaults.post_dump: unknown post-dump collector"},
      {R"({"rules": [{"match": {}}]})", "rules[0].name: missing"},
      {R"({"rules": [{"name": "x"}]})", "rules[0].match: missing"},
      {R"({"rules": [{"name": "x", "match": {"pid": 1}}]})", "rules[0].match.pid: unknown match condition"},
      {R"({"rules": [{"name": "x", "match": {}, "acton": "reject"}]})", "rules[0].acton: unknown key"},
      {R"([1, 2])", "(top level): expected a JSON object"},
      {R"({"socket": )", "test.json: (syntax)"},
      // nlohmann_json raises out_of_range, not parse_error, for a number no double holds (fuzz
      // regression tests/fuzz/regressions/fuzz_config/json_number_overflow_1e400.json).
      {R"({"dump_workers": 1e400})", "test.json: (syntax)"},
      {R"({"shutdown_grace_ms": -1})", "shutdown_grace_ms: value -1 out of range"},
      {R"({"overload_action": "drop"})", "overload_action:"},
      {R"({"max_concurrent_dumps": 0})", "max_concurrent_dumps: value 0 out of range"},
      {R"({"dump_memory_budget": "5M"})", "dump_memory_budget: must be at least 6M"},
  };
  for (const auto& c : cases) {
    const auto err = error_of(c.json);
    EXPECT_NE(err.find(c.expect), std::string::npos) << c.json << " -> \"" << err << "\"";
  }
}

// Issue 21.3: the "testing" section is refused unless the test hooks are on (the command line's
// --enable-test-hooks), whatever it holds, with an error that names the flag; with them, its keys
// are read, and the collector delay is capped at a few seconds.
TEST(Config, TestingSectionNeedsTheTestHooksFlag) {
  for (const char* text : {R"({"testing": {"collector_delay_ms": 1000}})", R"({"testing": {}})", R"({"testing": 1})",
                           R"({"testing": {"collector_delay_in": "cwd"}})"}) {
    const std::string err = error_of(text);
    EXPECT_EQ(err.rfind("test.json: testing: ", 0), 0u) << text << " -> \"" << err << "\"";
    EXPECT_NE(err.find("--enable-test-hooks"), std::string::npos) << err;
  }
  EXPECT_EQ(error_of(R"({"handshake_timeout_ms": 1500})"), "") << "no section, no flag needed";

  const Config c = parse(R"({"testing": {"collector_delay_ms": 5000, "collector_delay_in": "cwd"}})", with_test_hooks());
  EXPECT_EQ(c.test_collector_delay, kTestCollectorDelayMax);
  EXPECT_EQ(c.test_collector_delay_in, "cwd");
  const struct { std::string json, expect; } refused[] = {
      {R"({"testing": {"collector_delay_ms": 5001}})", "testing.collector_delay_ms: value 5001 out of range"},
      {R"({"testing": {"collector_delay_ms": 600000}})", "testing.collector_delay_ms: value 600000 out of range"},
      {R"({"testing": {"collector_delay_ms": -1}})", "testing.collector_delay_ms: value -1 out of range"},
      {R"({"testing": {"delay": 1}})", "testing.delay: unknown key"},
      {R"({"testing": 1})", "testing: expected an object"},
      {R"({"testing": {"collector_delay_in": "nope"}})", "no handshake collector is called \"nope\""},
  };
  for (const auto& r : refused) {
    const auto err = error_of(r.json, with_test_hooks());
    EXPECT_NE(err.find(r.expect), std::string::npos) << r.json << " -> \"" << err << "\"";
  }
}

TEST(Config, MissingFileIsAnError) {
  EXPECT_THROW(load_config_file("/nonexistent/coredumpd.json", Config{}), ConfigError);
}

TEST(Policy, FirstMatchingRuleWins) {
  const Config c = parse(R"({"rules": [
      {"name": "by-comm", "match": {"comm": "crasher"}, "action": "reject"},
      {"name": "by-cgroup", "match": {"cgroup": "/system.slice/*"}, "action": "metadata-only"},
      {"name": "by-uid", "match": {"uid": 1000, "exe": "/usr/*"}, "compression_level": 9}]})");
  DumpRecord r;
  r.comm = "crasher";
  r.cgroup = "0::/system.slice/foo.service";
  EXPECT_EQ(select_policy(c.defaults, c.rules, r, ContainerInfo{}).rule, "by-comm");
  r.comm = "other";
  EXPECT_EQ(select_policy(c.defaults, c.rules, r, ContainerInfo{}).rule, "by-cgroup");
  r.cgroup = "12:pids:/user.slice\n0::/user.slice/x";
  r.uid = 1000;
  r.exe = "/usr/bin/x";
  const auto d = select_policy(c.defaults, c.rules, r, ContainerInfo{});
  EXPECT_EQ(d.rule, "by-uid");
  EXPECT_EQ(d.policy.compression_level, 9);
  r.exe = "/opt/x";
  EXPECT_EQ(select_policy(c.defaults, c.rules, r, ContainerInfo{}).rule, "");
}

TEST(Policy, WantsFollowThePolicyAndRlimit) {
  Policy p;
  HandshakeFacts f;
  std::string why;
  f.rlimit_core = UINT64_MAX;
  auto w = wants_for(p, f, why);
  EXPECT_EQ(w.mode, protocol::Mode::Kernel);
  EXPECT_TRUE(w.wait);  // smaps_rollup is read post-dump
  EXPECT_TRUE(w.close_files);
  EXPECT_TRUE(why.empty());

  p.post_dump.clear();
  EXPECT_FALSE(wants_for(p, f, why).wait) << "no post-dump collectors: no WAIT";

  // RLIMIT_CORE: ignored by default; honoured, anything below one page means no core.
  const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  f.rlimit_core = 0;
  EXPECT_EQ(wants_for(p, f, why).mode, protocol::Mode::Kernel) << "not honoured by default";
  p.honor_rlimit_core = true;
  for (const std::uint64_t limit : {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{100}, page - 1}) {
    f.rlimit_core = limit;
    why.clear();
    EXPECT_EQ(wants_for(p, f, why).mode, protocol::Mode::Reject) << limit;
    EXPECT_EQ(why, "RLIMIT_CORE is " + std::to_string(limit) + " bytes, below one page (honor_rlimit_core)");
  }
  for (const std::uint64_t limit : {page, UINT64_MAX}) {
    f.rlimit_core = limit;
    EXPECT_EQ(wants_for(p, f, why).mode, protocol::Mode::Kernel) << limit;
  }
  f.rlimit_core.reset();
  EXPECT_EQ(wants_for(p, f, why).mode, protocol::Mode::Kernel) << "an unread limit does not refuse";
  p.honor_rlimit_core = false;
  why.clear();

  p.action = Action::MetadataOnly;
  EXPECT_EQ(wants_for(p, f, why).mode, protocol::Mode::Userspace);
  p.action = Action::Reject;
  EXPECT_EQ(wants_for(p, f, why).mode, protocol::Mode::Reject);

  p.action = Action::Store;
  p.max_core_bytes = 1 << 20;
  p.truncate_over_size = false;
  f.estimated_core_bytes = 2 << 20;
  w = wants_for(p, f, why);
  EXPECT_EQ(w.mode, protocol::Mode::Reject);
  EXPECT_NE(why.find("over max_core_bytes"), std::string::npos);
  p.truncate_over_size = true;
  EXPECT_EQ(wants_for(p, f, why).mode, protocol::Mode::Kernel);
}

TEST(Policy, ContainerConditions) {
  const Config c = parse(R"({"rules": [
      {"name": "nspawn-web", "match": {"runtime": "systemd-nspawn", "container": "web"}, "action": "reject"},
      {"name": "docker-by-id", "match": {"container": "0123456789ab"}, "compression_level": 9},
      {"name": "units", "match": {"unit": "nginx*.service", "slice": "system.slice"}, "action": "metadata-only"},
      {"name": "foreign-pidns", "match": {"namespaces": {"pid": "non-host", "user": "host"}}, "capture_environ": true},
      {"name": "root", "match": {"user": "root"}, "compression_level": 1}]})");
  DumpRecord r;
  r.uid = 1000;
  ContainerInfo web;
  web.runtime = Runtime::SystemdNspawn;
  web.name = "web";
  EXPECT_EQ(select_policy(c.defaults, c.rules, r, web).rule, "nspawn-web");
  ContainerInfo docker;
  docker.runtime = Runtime::Docker;
  docker.id = std::string("0123456789abcdef") + std::string(48, 'f');
  EXPECT_EQ(select_policy(c.defaults, c.rules, r, docker).rule, "docker-by-id");
  ContainerInfo svc;
  svc.runtime = Runtime::Systemd;
  svc.unit = "nginx-main.service";
  svc.slice = "system.slice";
  EXPECT_EQ(select_policy(c.defaults, c.rules, r, svc).rule, "units");
  ContainerInfo ns;
  ns.namespaces_differ.pid = true;
  ns.namespaces_differ.user = false;
  EXPECT_EQ(select_policy(c.defaults, c.rules, r, ns).rule, "foreign-pidns");
  ns.namespaces_differ.user = true;
  EXPECT_EQ(select_policy(c.defaults, c.rules, r, ns).rule, "");
  r.uid = 0;
  EXPECT_EQ(select_policy(c.defaults, c.rules, r, ContainerInfo{}).rule, "root");
}

TEST(Config, ContainerMatchErrors) {
  EXPECT_NE(error_of(R"({"rules": [{"name": "x", "match": {"user": "no-such-user-xyz"}}]})").find("rules[0].match.user: no such user"), std::string::npos);
  EXPECT_NE(error_of(R"({"rules": [{"name": "x", "match": {"namespaces": {"pdi": "host"}}}]})").find("rules[0].match.namespaces.pdi: unknown namespace"), std::string::npos);
  EXPECT_NE(error_of(R"({"rules": [{"name": "x", "match": {"namespaces": {"pid": "guest"}}}]})").find("expected \"host\", \"non-host\""), std::string::npos);
}

TEST(Config, ForwardActionSocketAndAcceptForwarded) {
  const Config d = parse("{}");
  EXPECT_FALSE(d.accept_forwarded);
  EXPECT_EQ(d.defaults.forward_socket, "/run/coredumpd/coredump.socket");

  const Config c = parse(R"({"accept_forwarded": true,
      "rules": [{"name": "nspawn", "match": {"runtime": "systemd-nspawn"}, "action": "forward",
                 "forward_socket": "/run/inner/coredump.socket"},
                {"name": "plain", "match": {"comm": "x"}, "action": "forward"}]})");
  EXPECT_TRUE(c.accept_forwarded);
  ASSERT_EQ(c.rules.size(), 2u);
  EXPECT_EQ(c.rules[0].policy.action, Action::Forward);
  EXPECT_EQ(c.rules[0].policy.forward_socket, "/run/inner/coredump.socket");
  EXPECT_EQ(c.rules[1].policy.forward_socket, "/run/coredumpd/coredump.socket") << "the default path";
  EXPECT_STREQ(action_name(Action::Forward), "forward");

  EXPECT_NE(error_of(R"({"defaults": {"forward_socket": "run/x.sock"}})").find("defaults.forward_socket: expected an absolute path"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"defaults": {"forward_socket": "/run/../etc/x"}})").find("\"..\""), std::string::npos);
  EXPECT_NE(error_of(R"({"accept_forwarded": 1})").find("accept_forwarded: expected true or false"), std::string::npos);
  EXPECT_NE(error_of(R"({"defaults": {"action": "forwad"}})").find("\"forward\""), std::string::npos);
}

// A forward is a store as far as the kernel-facing fallback goes: RLIMIT_CORE and sizes still apply.
TEST(Policy, ForwardFallsBackAsStore) {
  Policy p;
  p.action = Action::Forward;
  HandshakeFacts facts;
  std::string why;
  EXPECT_EQ(wants_for(p, facts, why).mode, protocol::Mode::Kernel);
  facts.rlimit_core = 0;
  p.honor_rlimit_core = true;
  EXPECT_EQ(wants_for(p, facts, why).mode, protocol::Mode::Reject);
  EXPECT_NE(why.find("RLIMIT_CORE"), std::string::npos);
}

// Every error path of the parser not covered above, each with the exact "<file>: <key>: " prefix:
// the file, then the key path down to the value at fault.
TEST(Config, EveryErrorPathNamesTheFileAndTheKey) {
  const std::string long_socket = "/" + std::string(120, 's');
  const struct { std::string json, key, reason; } cases[] = {
      {R"({"store": 5})", "store", "expected a string, got number"},
      {R"({"socket": ")" + long_socket + R"("})", "socket", "path must be shorter than 108 bytes"},
      {R"({"stream_idle_timeout_ms": 99})", "stream_idle_timeout_ms", "value 99 out of range"},
      {R"({"listen_backlog": 15})", "listen_backlog", "value 15 out of range"},
      {R"({"compression_jobs": 65})", "compression_jobs", "value 65 out of range"},
      {R"({"dump_workers": 257})", "dump_workers", "value 257 out of range"},
      {R"({"collector_threads": 0})", "collector_threads", "value 0 out of range"},
      {R"({"collector_budget_ms": 0})", "collector_budget_ms", "value 0 out of range"},
      {R"({"overload_action": 1})", "overload_action", "expected a string, got number"},
      {R"({"compression": 3})", "compression", "expected an object"},
      {R"({"compression": {"threads": 65}})", "compression.threads", "value 65 out of range"},
      {R"({"compression": {"level": 0}})", "compression.level", "value 0 out of range"},
      {R"({"close_files_bit": 4611686018427387905})", "close_files_bit", "out of range"},
      {R"({"retention": {"max_uze": 1}})", "retention.max_uze", "unknown key"},
      {R"({"retention": {"max_use_per_rule": {"web": "lots"}}})", "retention.max_use_per_rule.web", "invalid size"},
      {R"({"defaults": 5})", "defaults", "expected an object"},
      {R"({"defaults": {"action": 1}})", "defaults.action", "expected a string, got number"},
      {R"({"defaults": {"forward_socket": 5}})", "defaults.forward_socket", "expected a string, got number"},
      {R"({"defaults": {"close_files": "yes"}})", "defaults.close_files", "expected true or false, got string"},
      {R"({"defaults": {"records": 1}})", "defaults.records", "expected true or false, got number"},
      {R"({"defaults": {"sparse": null}})", "defaults.sparse", "expected true or false, got null"},
      {R"({"defaults": {"honor_rlimit_core": 0}})", "defaults.honor_rlimit_core", "expected true or false"},
      {R"({"defaults": {"capture_environ": "no"}})", "defaults.capture_environ", "expected true or false"},
      {R"({"defaults": {"memory_types": "anon_private"}})", "defaults.memory_types", "expected a list of memory type names"},
      {R"({"defaults": {"memory_types": 512}})", "defaults.memory_types", "value 512 out of range"},
      {R"({"defaults": {"memory_types": [1]}})", "defaults.memory_types", "expected a string, got number"},
      {R"({"defaults": {"post_dump": "smaps_rollup"}})", "defaults.post_dump", "expected a list of post-dump collector names"},
      {R"({"defaults": {"compression_level": 20}})", "defaults.compression_level", "value 20 out of range"},
      {R"({"defaults": {"max_core_bytes": 4095}})", "defaults.max_core_bytes", "value 4095 out of range"},
      {R"({"defaults": {"over_size": true}})", "defaults.over_size", "expected a string, got boolean"},
      {R"({"defaults": {"rate_limit": {"burst": 1, "interval_s": 0}}})", "defaults.rate_limit.interval_s", "value 0 out of range"},
      {R"({"defaults": {"max_use": "1X"}})", "defaults.max_use", "malformed size \"1X\""},
      {R"({"rules": {}})", "rules", "expected a list of rules"},
      {R"({"rules": [5]})", "rules[0]", "expected an object"},
      {R"({"rules": [{"name": "a", "match": {}}, {"name": 5, "match": {}}]})", "rules[1].name", "expected a string, got number"},
      {R"({"rules": [{"name": "x", "match": []}]})", "rules[0].match", "expected an object of conditions"},
      {R"({"rules": [{"name": "x", "match": {"comm": 1}}]})", "rules[0].match.comm", "expected a string"},
      {R"({"rules": [{"name": "x", "match": {"exe": 1}}]})", "rules[0].match.exe", "expected a string"},
      {R"({"rules": [{"name": "x", "match": {"cgroup": 1}}]})", "rules[0].match.cgroup", "expected a string"},
      {R"({"rules": [{"name": "x", "match": {"runtime": 1}}]})", "rules[0].match.runtime", "expected a string"},
      {R"({"rules": [{"name": "x", "match": {"container": 1}}]})", "rules[0].match.container", "expected a string"},
      {R"({"rules": [{"name": "x", "match": {"unit": 1}}]})", "rules[0].match.unit", "expected a string"},
      {R"({"rules": [{"name": "x", "match": {"slice": 1}}]})", "rules[0].match.slice", "expected a string"},
      {R"({"rules": [{"name": "x", "match": {"user": 0}}]})", "rules[0].match.user", "expected a string"},
      {R"({"rules": [{"name": "x", "match": {"uid": -1}}]})", "rules[0].match.uid", "value -1 out of range"},
      {R"({"rules": [{"name": "x", "match": {"uid": 4294967296}}]})", "rules[0].match.uid", "value 4294967296 out of range"},
      {R"({"rules": [{"name": "x", "match": {"namespaces": "pid"}}]})", "rules[0].match.namespaces", "expected an object"},
      {R"({"rules": [{"name": "x", "match": {"namespaces": {"pid": -1}}}]})", "rules[0].match.namespaces.pid",
       "expected a string, got number"},
      {R"({"rules": [{"name": "x", "match": {}, "forward_socket": "/run/a/.."}]})", "rules[0].forward_socket",
       "must not contain a \"..\" component"},
      {R"({"rules": [{"name": "x", "match": {}, "rate_limit": []}]})", "rules[0].rate_limit", "expected {\"burst\""},
      {R"({"rules": [{"name": "x", "match": {}, "action": "forward", "post_dump": ["smaps_rollup", "x"]}]})",
       "rules[0].post_dump", "unknown post-dump collector \"x\""},
  };
  for (const auto& c : cases) {
    const auto err = error_of(c.json);
    const std::string prefix = "test.json: " + c.key + ": ";
    EXPECT_EQ(err.rfind(prefix, 0), 0u) << c.json << " -> \"" << err << "\"";
    EXPECT_NE(err.find(c.reason), std::string::npos) << c.json << " -> \"" << err << "\"";
  }
}

// "namespaces": {"<ns>": <inode>} compares with the inode the handshake recorded.
TEST(Policy, NamespaceInodeCondition) {
  const Config c = parse(R"({"rules": [{"name": "that-netns", "match": {"namespaces": {"net": 4026532999}}}]})");
  DumpRecord r;
  r.extra["proc"]["namespaces"] = {{"net", 4026532999u}, {"pid", 4026531836u}};
  EXPECT_EQ(select_policy(c.defaults, c.rules, r, ContainerInfo{}).rule, "that-netns");
  r.extra["proc"]["namespaces"]["net"] = 4026531840u;
  EXPECT_EQ(select_policy(c.defaults, c.rules, r, ContainerInfo{}).rule, "");
  r.extra["proc"]["namespaces"].erase("net");
  EXPECT_EQ(select_policy(c.defaults, c.rules, r, ContainerInfo{}).rule, "") << "not collected: no match";
}
