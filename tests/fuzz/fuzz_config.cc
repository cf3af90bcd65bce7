// libFuzzer target: the daemon's JSON configuration (daemon/policy/config.h). The file is trusted less than
// it looks: a typo or a half-written file must end in a ConfigError naming the problem, never in
// another exception (which would escape main() or, on SIGHUP, kill a running daemon) or a crash.
//
// Input: the text of the file. On success the values must be within their documented ranges, the
// default policy must negotiate an ack the kernel accepts (docs/PROTOCOL.md §4.5) with a kernel offering all,
// and the effective configuration `coredumpd --check-config` prints (config_to_json()) must dump as
// JSON, load back without error and print the same again, with the same retention quotas.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <string>
#include <typeinfo>

#include "daemon/policy/config.h"
#include "daemon/policy/config_json.h"
#include "daemon/policy/policy.h"
#include "protocol/negotiate.h"
#include "tests/fuzz/fuzz_util.h"

namespace cp = coredumpd::protocol;

namespace {

void check_policy(const coredumpd::Policy& p, std::uint64_t close_bit) {
  FUZZ_CHECK(p.compression_level >= 1 && p.compression_level <= 19);
  if (p.memory_types) FUZZ_CHECK(*p.memory_types <= 0x1FF);
  if (p.max_core_bytes) FUZZ_CHECK(*p.max_core_bytes >= 4096);
  for (const auto& name : p.post_dump) FUZZ_CHECK(name == "smaps_rollup");
  if (p.rate_limit) {
    FUZZ_CHECK(p.rate_limit->burst >= 1 && p.rate_limit->burst <= 1'000'000);
    FUZZ_CHECK(p.rate_limit->interval.count() >= 1 && p.rate_limit->interval.count() <= 7 * 24 * 3600);
  }
  if (p.max_use) FUZZ_CHECK(*p.max_use <= static_cast<std::uint64_t>(INT64_MAX));
  FUZZ_CHECK(!p.forward_socket.empty() && p.forward_socket[0] == '/');
  FUZZ_CHECK(p.forward_socket.find("/../") == std::string::npos && !p.forward_socket.ends_with("/.."));

  // A NEXT kernel offering everything, with room for memory types.
  cp::coredump_req req{};
  req.size = cp::COREDUMP_REQ_SIZE_VER1;
  req.size_ack = cp::COREDUMP_ACK_SIZE_VER1;
  req.mask = cp::COREDUMP_MASK_VER0 | cp::COREDUMP_RECORDS | cp::COREDUMP_SPARSE | cp::COREDUMP_MEMORY_TYPES | close_bit;
  req.memory_types = 0x33;
  req.memory_types_mask = 0x1FF;
  std::string reason, error;
  const auto wants = coredumpd::wants_for(p, coredumpd::HandshakeFacts{}, reason);
  const auto n = cp::negotiate(req, wants, close_bit, error);
  FUZZ_CHECK(n.has_value());
  FUZZ_CHECK(cp::kernel_ack_verdict(req, cp::ack_bytes(n->ack), close_bit) == cp::Marker::REQACK);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  // With the test hooks on (--enable-test-hooks), so that the "testing" keys are fuzzed too.
  coredumpd::Config hooks_on;
  hooks_on.test_hooks = true;
  coredumpd::Config c;
  try {
    c = coredumpd::apply_config_json("fuzz.json", text, hooks_on);
  } catch (const coredumpd::ConfigError& e) {
    // "<file>: <key>: <reason>"
    FUZZ_CHECK(std::string(e.what()).rfind("fuzz.json: ", 0) == 0);
    return 0;
  } catch (const std::exception& e) {  // any other exception escapes the daemon's error handling
    std::fprintf(stderr, "fuzz_config: exception other than ConfigError: %s: %s\n", typeid(e).name(), e.what());
    __builtin_trap();
  } catch (...) {
    std::fprintf(stderr, "fuzz_config: non-std exception\n");
    __builtin_trap();
  }

  FUZZ_CHECK(!c.socket_path.empty() && c.socket_path[0] == '/');
  FUZZ_CHECK(c.socket_path.size() < 108 && c.socket_path.find(' ') == std::string::npos);
  FUZZ_CHECK(!c.store_dir.empty() && c.store_dir[0] == '/');
  FUZZ_CHECK(c.handshake_timeout.count() >= 10 && c.handshake_timeout.count() <= 60'000);
  FUZZ_CHECK(c.stream_idle_timeout.count() >= 100 && c.stream_idle_timeout.count() <= 3'600'000);
  FUZZ_CHECK(c.listen_backlog >= 16 && c.listen_backlog <= 65535);
  FUZZ_CHECK(c.dump_workers >= 1 && c.dump_workers <= 256);
  FUZZ_CHECK(c.collector_threads >= 1 && c.collector_threads <= 64);
  FUZZ_CHECK(c.compression.level >= 1 && c.compression.level <= 19);
  FUZZ_CHECK(c.compression.threads >= 0 && c.compression.threads <= 64);
  FUZZ_CHECK(c.collector_budget.count() >= 1 && c.collector_budget.count() <= 60'000);
  FUZZ_CHECK(c.test_collector_delay.count() >= 0 && c.test_collector_delay <= coredumpd::kTestCollectorDelayMax);
  FUZZ_CHECK(c.close_files_bit > cp::COREDUMP_MEMORY_TYPES && (c.close_files_bit & (c.close_files_bit - 1)) == 0);
  FUZZ_CHECK(c.close_files_bit <= (std::uint64_t{1} << 62));
  check_policy(c.defaults, c.close_files_bit);
  for (const auto& rule : c.rules) check_policy(rule.policy, c.close_files_bit);

  // --check-config's output: printable, and a configuration that loads back to itself.
  const nlohmann::json effective = coredumpd::config_to_json(c);
  (void)effective.dump(2);  // throws on invalid UTF-8, which would kill --check-config
  coredumpd::Config back;
  try {
    back = coredumpd::apply_config("check.json", effective, hooks_on);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz_config: the effective configuration does not load back: %s\n", e.what());
    __builtin_trap();
  }
  FUZZ_CHECK(coredumpd::config_to_json(back) == effective);
  FUZZ_CHECK(coredumpd::effective_retention(back).max_use_per_rule_bytes ==
             coredumpd::effective_retention(c).max_use_per_rule_bytes);
  return 0;
}
