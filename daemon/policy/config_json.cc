#include "daemon/policy/config_json.h"

#include <fmt/format.h>

namespace coredumpd {

namespace {

using nlohmann::json;

json optional_json(const auto& v) { return v ? json(*v) : json(nullptr); }

json memory_types_to_json(std::uint64_t bits) {
  json names = json::array();
  std::uint64_t known = 0;
  for (const auto& [name, bit] : memory_type_names()) {
    known |= bit;
    if (bits & bit) names.push_back(name);
  }
  return (bits & ~known) ? json(bits) : names;  // unknown bits cannot be named: the mask
}

const char* namespace_kind(const NamespaceMatch& m) {
  return m.kind == NamespaceMatch::Kind::Host ? "host" : "non-host";
}

json match_to_json(const Match& m) {
  json j = json::object();
  if (m.comm) j["comm"] = *m.comm;
  if (m.exe) j["exe"] = *m.exe;
  if (m.cgroup) j["cgroup"] = *m.cgroup;
  if (m.uid) j["uid"] = *m.uid;
  if (m.runtime) j["runtime"] = *m.runtime;
  if (m.container) j["container"] = *m.container;
  if (m.unit) j["unit"] = *m.unit;
  if (m.slice) j["slice"] = *m.slice;
  if (!m.namespaces.empty()) {
    json ns = json::object();
    for (const auto& [name, want] : m.namespaces)
      ns[name] = want.kind == NamespaceMatch::Kind::Inode ? json(want.inode) : json(namespace_kind(want));
    j["namespaces"] = ns;
  }
  return j;
}

// A percentage as parse_percent() reads it: fixed notation (never "1e-05"), with the 9 decimals it
// keeps at most, trailing zeros dropped; it reads back as the same double.
std::string percent_text(double p) {
  std::string s = fmt::format("{:.9f}", p);
  s.erase(s.find_last_not_of('0') + 1);
  if (s.back() == '.') s.pop_back();
  return s + "%";
}

json retention_to_json(const RetentionLimits& r) {
  // A file sets one or the other ("keep_free" is a size or a percentage).
  json keep_free = nullptr;
  if (r.keep_free_percent) keep_free = percent_text(*r.keep_free_percent);
  else if (r.keep_free_bytes) keep_free = *r.keep_free_bytes;
  json per_rule = json::object();
  for (const auto& [rule, bytes] : r.max_use_per_rule_bytes) per_rule[rule] = bytes;
  return {
      {"max_use", optional_json(r.max_use_bytes)},
      {"keep_free", keep_free},
      {"max_age", r.max_age ? json(r.max_age->count()) : json(nullptr)},
      {"max_use_per_uid", optional_json(r.max_use_per_uid_bytes)},
      {"max_use_per_rule", per_rule},
  };
}

json rate_limit_to_json(const std::optional<RateLimit>& r) {
  if (!r) return nullptr;
  return {{"burst", r->burst}, {"interval_s", r->interval.count()}};
}

}  // namespace

json policy_to_json(const Policy& p) {
  return {
      {"action", action_name(p.action)},
      {"forward_socket", p.forward_socket},
      {"close_files", p.close_files},
      {"records", p.records},
      {"sparse", p.sparse},
      {"memory_types", p.memory_types ? memory_types_to_json(*p.memory_types) : json(nullptr)},
      {"post_dump", p.post_dump},
      {"honor_rlimit_core", p.honor_rlimit_core},
      {"capture_environ", p.capture_environ},
      {"compression_level", p.compression_level},
      {"max_core_bytes", optional_json(p.max_core_bytes)},
      {"over_size", p.truncate_over_size ? "truncate" : "reject"},
      {"rate_limit", rate_limit_to_json(p.rate_limit)},
      {"max_use", optional_json(p.max_use)},
  };
}

json config_to_json(const Config& c) {
  json rules = json::array();
  for (const auto& r : c.rules) {
    json rule = {{"name", r.name}, {"match", match_to_json(r.match)}};
    rule.update(policy_to_json(r.policy));
    rules.push_back(std::move(rule));
  }
  return {
      {"socket", c.socket_path},
      {"store", c.store_dir},
      {"handshake_timeout_ms", c.handshake_timeout.count()},
      {"stream_idle_timeout_ms", c.stream_idle_timeout.count()},
      {"shutdown_grace_ms", c.shutdown_grace.count()},
      {"listen_backlog", c.listen_backlog},
      {"dump_workers", c.dump_workers},
      {"collector_threads", c.collector_threads},
      {"compression_jobs", c.compression_jobs},
      {"max_concurrent_dumps", c.max_concurrent_dumps},
      {"overload_action", action_name(c.overload_action)},
      {"compression",
       {{"level", c.compression.level}, {"threads", c.compression.threads}, {"core_tables", c.compression.core_tables}}},
      {"close_files_bit", c.close_files_bit},
      {"collector_budget_ms", c.collector_budget.count()},
      {"accept_forwarded", c.accept_forwarded},
      {"spool_direct_io", c.spool_direct_io},
      {"compress_while_streaming", c.compress_while_streaming},
      {"testing", {{"collector_delay_ms", c.test_collector_delay.count()}}},
      {"retention", retention_to_json(c.retention)},
      {"defaults", policy_to_json(c.defaults)},
      {"rules", rules},
  };
}

}  // namespace coredumpd
