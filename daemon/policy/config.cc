#include "daemon/policy/config.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <fstream>
#include <map>
#include <pwd.h>
#include <thread>
#include <sstream>

#include <nlohmann/json.hpp>

#include "store/retention_config.h"

namespace coredumpd {

namespace {

using nlohmann::json;

[[noreturn]] void error(const std::string& origin, const std::string& key, const std::string& reason) {
  throw ConfigError(origin + ": " + key + ": " + reason);
}

std::int64_t get_int(const std::string& origin, const std::string& key, const json& v, std::int64_t lo,
                     std::int64_t hi) {
  if (!v.is_number_integer()) error(origin, key, "expected an integer, got " + std::string(v.type_name()));
  const auto n = v.get<std::int64_t>();
  if (n < lo || n > hi)
    error(origin, key, "value " + std::to_string(n) + " out of range [" + std::to_string(lo) + ", " +
                           std::to_string(hi) + "]");
  return n;
}

std::string get_path(const std::string& origin, const std::string& key, const json& v) {
  if (!v.is_string()) error(origin, key, "expected a string, got " + std::string(v.type_name()));
  auto s = v.get<std::string>();
  if (s.empty() || s[0] != '/') error(origin, key, "expected an absolute path, got \"" + s + "\"");
  return s;
}

bool get_bool(const std::string& origin, const std::string& key, const json& v) {
  if (!v.is_boolean()) error(origin, key, "expected true or false, got " + std::string(v.type_name()));
  return v.get<bool>();
}

std::string get_string(const std::string& origin, const std::string& key, const json& v) {
  if (!v.is_string()) error(origin, key, "expected a string, got " + std::string(v.type_name()));
  return v.get<std::string>();
}

std::uint64_t get_memory_types(const std::string& origin, const std::string& key, const json& v) {
  if (v.is_number_integer()) return static_cast<std::uint64_t>(get_int(origin, key, v, 0, 0x1FF));
  if (!v.is_array()) error(origin, key, "expected a list of memory type names or an integer bit mask");
  std::uint64_t bits = 0;
  for (const auto& item : v) {
    const auto name = get_string(origin, key, item);
    const auto& types = memory_type_names();
    const auto it = std::find_if(types.begin(), types.end(), [&](const auto& t) { return name == t.first; });
    if (it == types.end()) error(origin, key, "unknown memory type \"" + name + "\"");
    bits |= it->second;
  }
  return bits;
}

// {"burst": N, "interval_s": W}; both keys required.
RateLimit get_rate_limit(const std::string& origin, const std::string& key, const json& v) {
  if (!v.is_object()) error(origin, key, "expected {\"burst\": N, \"interval_s\": SECONDS} or null");
  RateLimit r;
  bool burst = false, interval = false;
  for (const auto& [k2, v2] : v.items()) {
    if (k2 == "burst") {
      r.burst = static_cast<std::uint32_t>(get_int(origin, key + ".burst", v2, 1, 1'000'000));
      burst = true;
    } else if (k2 == "interval_s") {
      r.interval = std::chrono::seconds(get_int(origin, key + ".interval_s", v2, 1, 7 * 24 * 3600));
      interval = true;
    } else {
      error(origin, key + "." + k2, "unknown key (known: burst, interval_s)");
    }
  }
  if (!burst) error(origin, key + ".burst", "missing");
  if (!interval) error(origin, key + ".interval_s", "missing");
  return r;
}

// A size: integer bytes or a string for parse_size() ("500M", "2G").
std::uint64_t get_size(const std::string& origin, const std::string& key, const json& v) {
  if (v.is_number_integer()) return static_cast<std::uint64_t>(get_int(origin, key, v, 0, INT64_MAX));
  if (!v.is_string()) error(origin, key, "expected a size (bytes, or a string like \"500M\"), got " + std::string(v.type_name()));
  const auto s = v.get<std::string>();
  const auto n = parse_size(s);
  if (!n) error(origin, key, "malformed size \"" + s + "\" (expected e.g. 1048576, \"500M\", \"2G\")");
  return *n;
}

// Applies the policy keys of `obj` (a "defaults" object or a rule) over `p`. `prefix` names the
// object in errors ("defaults", "rules[2]"); keys in `skip` belong to the caller.
void apply_policy(const std::string& origin, const std::string& prefix, const json& obj, Policy& p,
                  std::initializer_list<const char*> skip = {}) {
  if (!obj.is_object()) error(origin, prefix, "expected an object");
  for (const auto& [key, v] : obj.items()) {
    const std::string k = prefix + "." + key;
    if (std::find_if(skip.begin(), skip.end(), [&name = key](const char* s) { return name == s; }) != skip.end()) continue;
    if (key == "action") {
      const auto a = get_string(origin, k, v);
      if (a == "store") p.action = Action::Store;
      else if (a == "reject") p.action = Action::Reject;
      else if (a == "metadata-only") p.action = Action::MetadataOnly;
      else if (a == "forward") p.action = Action::Forward;
      else error(origin, k, "expected \"store\", \"reject\", \"metadata-only\" or \"forward\", got \"" + a + "\"");
    } else if (key == "forward_socket") {
      p.forward_socket = get_path(origin, k, v);
      if (p.forward_socket.find("/../") != std::string::npos || p.forward_socket.ends_with("/.."))
        error(origin, k, "must not contain a \"..\" component");
    } else if (key == "close_files") {
      p.close_files = get_bool(origin, k, v);
    } else if (key == "records") {
      p.records = get_bool(origin, k, v);
    } else if (key == "sparse") {
      p.sparse = get_bool(origin, k, v);
    } else if (key == "memory_types") {
      if (v.is_null()) p.memory_types.reset(); else p.memory_types = get_memory_types(origin, k, v);
    } else if (key == "post_dump") {
      if (!v.is_array()) error(origin, k, "expected a list of post-dump collector names");
      p.post_dump.clear();
      for (const auto& item : v) {
        const auto name = get_string(origin, k, item);
        if (name != "smaps_rollup") error(origin, k, "unknown post-dump collector \"" + name + "\" (known: smaps_rollup)");
        p.post_dump.push_back(name);
      }
    } else if (key == "honor_rlimit_core") {
      p.honor_rlimit_core = get_bool(origin, k, v);
    } else if (key == "capture_environ") {
      p.capture_environ = get_bool(origin, k, v);
    } else if (key == "compression_level") {
      p.compression_level = static_cast<int>(get_int(origin, k, v, 1, 19));
    } else if (key == "max_core_bytes") {
      if (v.is_null()) p.max_core_bytes.reset();
      else p.max_core_bytes = static_cast<std::uint64_t>(get_int(origin, k, v, 4096, INT64_MAX));
    } else if (key == "rate_limit") {
      if (v.is_null()) p.rate_limit.reset(); else p.rate_limit = get_rate_limit(origin, k, v);
    } else if (key == "max_use") {
      if (v.is_null()) p.max_use.reset(); else p.max_use = get_size(origin, k, v);
    } else if (key == "over_size") {
      const auto o = get_string(origin, k, v);
      if (o == "truncate") p.truncate_over_size = true;
      else if (o == "reject") p.truncate_over_size = false;
      else error(origin, k, "expected \"truncate\" or \"reject\", got \"" + o + "\"");
    } else {
      error(origin, k, "unknown key");
    }
  }
}

Match parse_match(const std::string& origin, const std::string& prefix, const json& obj) {
  if (!obj.is_object()) error(origin, prefix, "expected an object of conditions");
  Match m;
  for (const auto& [key, v] : obj.items()) {
    const std::string k = prefix + "." + key;
    if (key == "comm") m.comm = get_string(origin, k, v);
    else if (key == "exe") m.exe = get_string(origin, k, v);
    else if (key == "cgroup") m.cgroup = get_string(origin, k, v);
    else if (key == "uid") m.uid = get_int(origin, k, v, 0, UINT32_MAX);
    else if (key == "user") {
      const auto name = get_string(origin, k, v);
      const passwd* pw = ::getpwnam(name.c_str());
      if (!pw) error(origin, k, "no such user \"" + name + "\"");
      m.uid = pw->pw_uid;
    } else if (key == "runtime") m.runtime = get_string(origin, k, v);
    else if (key == "container") m.container = get_string(origin, k, v);
    else if (key == "unit") m.unit = get_string(origin, k, v);
    else if (key == "slice") m.slice = get_string(origin, k, v);
    else if (key == "namespaces") {
      if (!v.is_object()) error(origin, k, "expected an object like {\"pid\": \"non-host\"}");
      static constexpr const char* kKnown[] = {"cgroup", "ipc", "mnt", "net", "pid", "time", "user", "uts"};
      for (const auto& [ns, want] : v.items()) {
        const std::string nk = k + "." + ns;
        if (std::find(std::begin(kKnown), std::end(kKnown), ns) == std::end(kKnown)) error(origin, nk, "unknown namespace");
        NamespaceMatch nm;
        if (want.is_number_unsigned()) {
          nm.kind = NamespaceMatch::Kind::Inode;
          nm.inode = want.get<std::uint64_t>();
        } else {
          const auto w = get_string(origin, nk, want);
          if (w == "host") nm.kind = NamespaceMatch::Kind::Host;
          else if (w == "non-host") nm.kind = NamespaceMatch::Kind::NonHost;
          else error(origin, nk, "expected \"host\", \"non-host\" or an inode number");
        }
        m.namespaces[ns] = nm;
      }
    } else error(origin, k, "unknown match condition");
  }
  return m;
}

// A rule's "max_use" and retention.max_use_per_rule may both name it only with the same size, and
// two rules of the same name may not ask for different quotas (they share one group).
// Rules are named by their own file and index when `sources` says where each was written.
void check_quotas(const std::string& origin, const Config& c, const std::vector<RuleSource>& sources) {
  struct Seen {
    std::uint64_t bytes;
    std::string file, key;
  };
  std::map<std::string, Seen> seen;  // rule name -> its first quota
  const auto check = [&](const std::string& rule, std::uint64_t bytes, const std::string& file, const std::string& key) {
    const auto it = c.retention.max_use_per_rule_bytes.find(rule);
    if (it != c.retention.max_use_per_rule_bytes.end() && it->second != bytes)
      error(file, key, "conflicts with retention.max_use_per_rule[\"" + rule + "\"] (" + std::to_string(it->second) +
                           " bytes); set the quota in one place");
    const auto [prev, fresh] = seen.try_emplace(rule, Seen{bytes, file, key});
    if (!fresh && prev->second.bytes != bytes) {
      const std::string other = prev->second.file == file ? prev->second.key : prev->second.file + ": " + prev->second.key;
      error(file, key, "conflicts with " + other + " (rules of one name share one quota)");
    }
  };
  if (c.defaults.max_use) check("", *c.defaults.max_use, origin, "defaults.max_use");
  for (std::size_t i = 0; i < c.rules.size(); ++i) {
    if (!c.rules[i].policy.max_use) continue;
    const bool known = i < sources.size() && sources.size() == c.rules.size();
    const std::string file = known ? sources[i].file : origin;
    const std::size_t index = known ? sources[i].index : i;
    check(c.rules[i].name, *c.rules[i].policy.max_use, file, "rules[" + std::to_string(index) + "].max_use");
  }
}

}  // namespace

int default_parallelism() {
  return static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1U, 8U));
}

// Names of the coredump_filter / memory type bits (spec §3.3), for "memory_types": ["anon_private", ...].
const std::vector<std::pair<std::string, std::uint64_t>>& memory_type_names() {
  static const std::vector<std::pair<std::string, std::uint64_t>> kNames = {
      {"anon_private", protocol::COREDUMP_MEMORY_ANON_PRIVATE},     {"anon_shared", protocol::COREDUMP_MEMORY_ANON_SHARED},
      {"file_private", protocol::COREDUMP_MEMORY_FILE_PRIVATE},     {"file_shared", protocol::COREDUMP_MEMORY_FILE_SHARED},
      {"elf_headers", protocol::COREDUMP_MEMORY_ELF_HEADERS},       {"hugetlb_private", protocol::COREDUMP_MEMORY_HUGETLB_PRIVATE},
      {"hugetlb_shared", protocol::COREDUMP_MEMORY_HUGETLB_SHARED}, {"dax_private", protocol::COREDUMP_MEMORY_DAX_PRIVATE},
      {"dax_shared", protocol::COREDUMP_MEMORY_DAX_SHARED},
  };
  return kNames;
}

json parse_config_text(const std::string& origin, const std::string& text) {
  try {
    return json::parse(text, nullptr, true, /*ignore_comments=*/true);
  } catch (const json::exception& e) {  // parse_error, and out_of_range for numbers like 1e400
    error(origin, "(syntax)", e.what());
  }
}

Config apply_config_json(const std::string& origin, const std::string& text, Config base) {
  return apply_config(origin, parse_config_text(origin, text), std::move(base));
}

Config apply_config(const std::string& origin, const json& doc, Config c, const std::vector<RuleSource>& rule_sources) {
  if (!doc.is_object()) error(origin, "(top level)", "expected a JSON object");
  const json* pending_rules = nullptr;
  for (const auto& [key, v] : doc.items()) {
    if (key == "socket") {
      c.socket_path = get_path(origin, key, v);
      if (c.socket_path.size() >= 108) error(origin, key, "path must be shorter than 108 bytes (UNIX_PATH_MAX)");
      if (c.socket_path.find(' ') != std::string::npos) error(origin, key, "the kernel refuses socket paths with spaces");
    } else if (key == "store") {
      c.store_dir = get_path(origin, key, v);
    } else if (key == "handshake_timeout_ms") {
      c.handshake_timeout = std::chrono::milliseconds(get_int(origin, key, v, 10, 60'000));
    } else if (key == "stream_idle_timeout_ms") {
      c.stream_idle_timeout = std::chrono::milliseconds(get_int(origin, key, v, 100, 3'600'000));
    } else if (key == "shutdown_grace_ms") {
      c.shutdown_grace = std::chrono::milliseconds(get_int(origin, key, v, 0, 3'600'000));
    } else if (key == "listen_backlog") {
      c.listen_backlog = static_cast<int>(get_int(origin, key, v, 16, 65535));
    } else if (key == "compression_jobs") {
      c.compression_jobs = static_cast<int>(get_int(origin, key, v, 1, 64));
    } else if (key == "dump_workers") {
      c.dump_workers = static_cast<int>(get_int(origin, key, v, 1, 256));
    } else if (key == "max_concurrent_dumps") {
      c.max_concurrent_dumps = static_cast<int>(get_int(origin, key, v, 1, 4096));
    } else if (key == "overload_action") {
      const auto a = get_string(origin, key, v);
      if (a == "metadata-only") c.overload_action = Action::MetadataOnly;
      else if (a == "reject") c.overload_action = Action::Reject;
      else error(origin, key, "expected \"metadata-only\" or \"reject\", got \"" + a + "\"");
    } else if (key == "collector_threads") {
      c.collector_threads = static_cast<int>(get_int(origin, key, v, 1, 64));
    } else if (key == "compression") {
      if (!v.is_object()) error(origin, key, "expected an object with \"level\", \"threads\" and/or \"core_tables\"");
      for (const auto& [k2, v2] : v.items()) {
        if (k2 == "level") c.compression.level = static_cast<int>(get_int(origin, "compression.level", v2, 1, 19));
        else if (k2 == "threads") c.compression.threads = static_cast<int>(get_int(origin, "compression.threads", v2, 0, 64));
        else if (k2 == "core_tables") c.compression.core_tables = get_bool(origin, "compression.core_tables", v2);
        else error(origin, "compression." + k2, "unknown key");
      }
    } else if (key == "close_files_bit") {
      const auto bit = get_int(origin, key, v, 1, std::int64_t{1} << 62);
      if ((bit & (bit - 1)) != 0) error(origin, key, "must be a single bit (a power of two)");
      if (static_cast<std::uint64_t>(bit) <= protocol::COREDUMP_MEMORY_TYPES)
        error(origin, key, "collides with a mainline/NEXT mask bit (0x01..0x40)");
      c.close_files_bit = static_cast<std::uint64_t>(bit);
    } else if (key == "spool_direct_io") {
      c.spool_direct_io = get_bool(origin, key, v);
    } else if (key == "compress_while_streaming") {
      c.compress_while_streaming = get_bool(origin, key, v);
    } else if (key == "accept_forwarded") {
      c.accept_forwarded = get_bool(origin, key, v);
    } else if (key == "collector_budget_ms") {
      c.collector_budget = std::chrono::milliseconds(get_int(origin, key, v, 1, 60'000));
    } else if (key == "testing") {
      if (!v.is_object()) error(origin, key, "expected an object");
      for (const auto& [k2, v2] : v.items()) {
        if (k2 == "collector_delay_ms") c.test_collector_delay = std::chrono::milliseconds(get_int(origin, "testing." + k2, v2, 0, 600'000));
        else error(origin, "testing." + k2, "unknown key");
      }
    } else if (key == "retention") {
      try {
        c.retention = parse_retention(origin, v, c.retention);
      } catch (const std::exception& e) {
        throw ConfigError(e.what());
      }
    } else if (key == "defaults") {
      apply_policy(origin, "defaults", v, c.defaults);
    } else if (key == "rules") {
      if (!v.is_array()) error(origin, key, "expected a list of rules");
      pending_rules = &v;
    } else {
      error(origin, key, "unknown key");
    }
  }
  // Rules start from the defaults, so they are parsed after "defaults" wherever it appears.
  if (pending_rules) {
    c.rules.clear();
    for (std::size_t i = 0; i < pending_rules->size(); ++i) {
      const auto& r = (*pending_rules)[i];
      const std::string prefix = "rules[" + std::to_string(i) + "]";
      if (!r.is_object()) error(origin, prefix, "expected an object");
      Rule rule;
      rule.policy = c.defaults;
      rule.policy.max_use.reset();  // the defaults' quota is the no-rule group's, not every rule's
      if (!r.contains("name")) error(origin, prefix + ".name", "missing: every rule needs a name");
      rule.name = get_string(origin, prefix + ".name", r["name"]);
      if (!r.contains("match")) error(origin, prefix + ".match", "missing: a rule without conditions would match everything; use \"defaults\"");
      rule.match = parse_match(origin, prefix + ".match", r["match"]);
      apply_policy(origin, prefix, r, rule.policy, {"name", "match"});
      c.rules.push_back(std::move(rule));
    }
  }
  check_quotas(origin, c, rule_sources);
  return c;
}

RetentionLimits effective_retention(const Config& c) {
  RetentionLimits l = c.retention;
  if (c.defaults.max_use) l.max_use_per_rule_bytes[""] = *c.defaults.max_use;
  for (const auto& r : c.rules)
    if (r.policy.max_use && !l.max_use_per_rule_bytes.contains(r.name)) l.max_use_per_rule_bytes[r.name] = *r.policy.max_use;
  return l;
}

Config load_config_file(const std::string& path, Config base) {
  std::ifstream in(path);
  if (!in) throw ConfigError(path + ": cannot be read");
  std::stringstream ss;
  ss << in.rdbuf();
  return apply_config_json(path, ss.str(), std::move(base));
}

}  // namespace coredumpd
