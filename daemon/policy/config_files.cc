#include "daemon/policy/config_files.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace coredumpd {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string read_whole(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) throw ConfigError(path + ": cannot be read: it is a directory");
  std::ifstream in(path);
  if (!in) throw ConfigError(path + ": cannot be read: " + std::strerror(errno));
  std::stringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw ConfigError(path + ": cannot be read");
  return ss.str();
}

}  // namespace

std::vector<std::string> config_dropins(const std::string& main_path) {
  const fs::path dir = fs::path(main_path).parent_path() / "conf.d";
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return {};
  std::vector<std::string> names;
  fs::directory_iterator it(dir, ec);
  if (ec) throw ConfigError(dir.string() + ": cannot be listed: " + ec.message());
  for (const auto& entry : it) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name[0] == '.' || !name.ends_with(".json")) continue;
    std::error_code type_ec;
    if (!entry.is_regular_file(type_ec)) continue;  // follows symlinks, as systemd's drop-ins do
    names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  std::vector<std::string> paths;
  paths.reserve(names.size());
  for (const auto& n : names) paths.push_back((dir / n).string());
  return paths;
}

void merge_config_json(json& into, const json& from, bool top_level) {
  if (!into.is_object() || !from.is_object()) {
    into = from;
    return;
  }
  for (const auto& [key, value] : from.items()) {
    auto it = into.find(key);
    if (it == into.end()) {
      into[key] = value;
    } else if (top_level && key == "rules" && it->is_array() && value.is_array()) {
      for (const auto& rule : value) it->push_back(rule);
    } else if (it->is_object() && value.is_object()) {
      merge_config_json(*it, value, /*top_level=*/false);
    } else {
      *it = value;
    }
  }
}

LoadedConfig load_config(const std::string& main_path, Config base) {
  LoadedConfig out;
  struct stat st {};
  if (::stat(main_path.c_str(), &st) == 0 || errno != ENOENT) out.sources.push_back(main_path);
  for (auto& d : config_dropins(main_path)) out.sources.push_back(std::move(d));

  json merged = json::object();
  std::vector<RuleSource> rule_sources;  // the file and index of each merged rule
  for (const auto& path : out.sources) {
    const json doc = parse_config_text(path, read_whole(path));
    // Checked alone first, so that an error names this file and a rule index within it.
    Config alone;
    alone.test_hooks = base.test_hooks;  // a "testing" section is refused in any file without the flag
    (void)apply_config(path, doc, alone);
    if (const auto rules = doc.find("rules"); rules != doc.end()) {
      for (std::size_t i = 0; i < rules->size(); ++i) rule_sources.push_back({path, i});
    }
    merge_config_json(merged, doc);
  }
  const std::string origin = out.sources.size() == 1 ? out.sources[0] : main_path + " and its drop-ins";
  out.config = out.sources.empty() ? std::move(base) : apply_config(origin, merged, std::move(base), rule_sources);
  return out;
}

}  // namespace coredumpd
