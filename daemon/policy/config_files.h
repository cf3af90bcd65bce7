// Where the configuration comes from: a main file and its drop-ins, merged into one document.
//
// The main file (default /etc/coredumpd/coredumpd.json, or --config FILE) is read first, then every
// `<directory of the main file>/conf.d/*.json`, in lexical (byte) order of file name. Either may be
// missing: with neither, the built-in defaults apply. Merge semantics (merge_config_json()):
//  - objects ("compression", "retention", "defaults", "testing", ...) are merged key by key,
//    recursively, so a drop-in can change one policy key of "defaults" and keep the others;
//  - scalars, arrays and null replace what came before (null keeps its meaning, e.g. "no limit");
//  - the top-level "rules" arrays are concatenated: a drop-in's rules come after those of the main
//    file and of earlier drop-ins (first match wins, so earlier files take precedence).
// Rules start from the merged "defaults", wherever each was written.
//
// Every file is first checked on its own, so an error names the file it is in (a drop-in's own
// path), the key and the reason, and rule indexes count within that file. The merged result can
// only add quota conflicts between files (two rules of one name, or a rule and
// retention.max_use_per_rule, with different sizes); they too name the rule's file and index.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "daemon/policy/config.h"

namespace coredumpd {

/// The main configuration file read when --config is not given.
inline constexpr const char* kDefaultConfigFile = "/etc/coredumpd/coredumpd.json";

/// A configuration and the files it was read from, in the order they were applied.
struct LoadedConfig {
  Config config;
  std::vector<std::string> sources;  ///< the main file if it exists, then the drop-ins
};

/// The drop-in files of `main_path`: regular files (or links to them) named `*.json`, not starting
/// with '.', in `<dirname(main_path)>/conf.d/`, sorted by name. Empty if that directory is missing.
/// Throws ConfigError if it exists but cannot be listed.
std::vector<std::string> config_dropins(const std::string& main_path);

/// Merges the document `from` into `into` with the semantics described above. `top_level` selects
/// the concatenation of "rules" (only the configuration's top-level object has rules).
void merge_config_json(nlohmann::json& into, const nlohmann::json& from, bool top_level = true);

/// Reads `main_path` (skipped when it does not exist) and its drop-ins, merges them and applies
/// the result over `base`. Throws ConfigError "<file>: <key>: <reason>" naming the file at fault.
LoadedConfig load_config(const std::string& main_path, Config base);

}  // namespace coredumpd
