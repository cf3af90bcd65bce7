#include "daemon/policy/config.h"

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "daemon/policy/config_keys.h"

namespace coredumpd {

namespace {

using nlohmann::json;

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
      config_error(file, key, "conflicts with retention.max_use_per_rule[\"" + rule + "\"] (" + std::to_string(it->second) +
                           " bytes); set the quota in one place");
    const auto [prev, fresh] = seen.try_emplace(rule, Seen{bytes, file, key});
    if (!fresh && prev->second.bytes != bytes) {
      const std::string other = prev->second.file == file ? prev->second.key : prev->second.file + ": " + prev->second.key;
      config_error(file, key, "conflicts with " + other + " (rules of one name share one quota)");
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

// Names of the coredump_filter / memory type bits (docs/PROTOCOL.md §6.3), for "memory_types": ["anon_private", ...].
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
    config_error(origin, "(syntax)", e.what());
  }
}

Config apply_config_json(const std::string& origin, const std::string& text, Config base) {
  return apply_config(origin, parse_config_text(origin, text), std::move(base));
}

Config apply_config(const std::string& origin, const json& doc, Config c, const std::vector<RuleSource>& rule_sources) {
  if (!doc.is_object()) config_error(origin, "(top level)", "expected a JSON object");
  apply_keys(global_keys(), KeyValue{origin, "", doc}, c);
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

std::string pending_dir_of(const Config& c) {
  if (!c.pending_dir.empty()) return c.pending_dir;
  return (std::filesystem::path(c.socket_path).parent_path() / "pending").string();
}

std::string fallback_dir_of(const Config& c) {
  if (!c.fallback_dir.empty()) return c.fallback_dir;
  return (std::filesystem::path(c.socket_path).parent_path() / "fallback").string();
}

Config load_config_file(const std::string& path, Config base) {
  std::ifstream in(path);
  if (!in) throw ConfigError(path + ": cannot be read");
  std::stringstream ss;
  ss << in.rdbuf();
  return apply_config_json(path, ss.str(), std::move(base));
}

}  // namespace coredumpd
