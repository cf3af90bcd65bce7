#include "daemon/config.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <fstream>
#include <pwd.h>
#include <thread>
#include <sstream>

#include <nlohmann/json.hpp>

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

// Names of the coredump_filter / memory type bits (spec §3.3), for "memory_types": ["anon_private", ...].
constexpr std::pair<const char*, std::uint64_t> kMemoryTypes[] = {
    {"anon_private", protocol::COREDUMP_MEMORY_ANON_PRIVATE},     {"anon_shared", protocol::COREDUMP_MEMORY_ANON_SHARED},
    {"file_private", protocol::COREDUMP_MEMORY_FILE_PRIVATE},     {"file_shared", protocol::COREDUMP_MEMORY_FILE_SHARED},
    {"elf_headers", protocol::COREDUMP_MEMORY_ELF_HEADERS},       {"hugetlb_private", protocol::COREDUMP_MEMORY_HUGETLB_PRIVATE},
    {"hugetlb_shared", protocol::COREDUMP_MEMORY_HUGETLB_SHARED}, {"dax_private", protocol::COREDUMP_MEMORY_DAX_PRIVATE},
    {"dax_shared", protocol::COREDUMP_MEMORY_DAX_SHARED},
};

std::uint64_t get_memory_types(const std::string& origin, const std::string& key, const json& v) {
  if (v.is_number_integer()) return static_cast<std::uint64_t>(get_int(origin, key, v, 0, 0x1FF));
  if (!v.is_array()) error(origin, key, "expected a list of memory type names or an integer bit mask");
  std::uint64_t bits = 0;
  for (const auto& item : v) {
    const auto name = get_string(origin, key, item);
    const auto* it = std::find_if(std::begin(kMemoryTypes), std::end(kMemoryTypes),
                                  [&](const auto& t) { return name == t.first; });
    if (it == std::end(kMemoryTypes)) error(origin, key, "unknown memory type \"" + name + "\"");
    bits |= it->second;
  }
  return bits;
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

}  // namespace

int default_parallelism() {
  return static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1U, 8U));
}

Config apply_config_json(const std::string& origin, const std::string& text, Config c) {
  json doc;
  try {
    doc = json::parse(text, nullptr, true, /*ignore_comments=*/true);
  } catch (const json::exception& e) {  // parse_error, and out_of_range for numbers like 1e400
    error(origin, "(syntax)", e.what());
  }
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
      if (!v.is_object()) error(origin, key, "expected an object with \"level\" and/or \"threads\"");
      for (const auto& [k2, v2] : v.items()) {
        if (k2 == "level") c.compression.level = static_cast<int>(get_int(origin, "compression.level", v2, 1, 19));
        else if (k2 == "threads") c.compression.threads = static_cast<int>(get_int(origin, "compression.threads", v2, 0, 64));
        else error(origin, "compression." + k2, "unknown key");
      }
    } else if (key == "close_files_bit") {
      const auto bit = get_int(origin, key, v, 1, std::int64_t{1} << 62);
      if ((bit & (bit - 1)) != 0) error(origin, key, "must be a single bit (a power of two)");
      if (static_cast<std::uint64_t>(bit) <= protocol::COREDUMP_MEMORY_TYPES)
        error(origin, key, "collides with a mainline/NEXT mask bit (0x01..0x40)");
      c.close_files_bit = static_cast<std::uint64_t>(bit);
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
      if (!r.contains("name")) error(origin, prefix + ".name", "missing: every rule needs a name");
      rule.name = get_string(origin, prefix + ".name", r["name"]);
      if (!r.contains("match")) error(origin, prefix + ".match", "missing: a rule without conditions would match everything; use \"defaults\"");
      rule.match = parse_match(origin, prefix + ".match", r["match"]);
      apply_policy(origin, prefix, r, rule.policy, {"name", "match"});
      c.rules.push_back(std::move(rule));
    }
  }
  return c;
}

Config load_config_file(const std::string& path, Config base) {
  std::ifstream in(path);
  if (!in) throw ConfigError(path + ": cannot be read");
  std::stringstream ss;
  ss << in.rdbuf();
  return apply_config_json(path, ss.str(), std::move(base));
}

}  // namespace coredumpd
