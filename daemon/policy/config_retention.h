// The "retention" object of the configuration: the store's size limits (RetentionLimits, in
// store/retention.h), parsed through the table retention_keys() (config_keys.h).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "store/retention_limits.h"

namespace coredumpd {

/// Parses the `retention` object of the daemon's configuration over `base` (keys present replace
/// the base's value; a JSON null clears that limit). `origin` names the document in errors.
/// Shape (every key optional):
///   { "max_use": SIZE, "keep_free": SIZE or "P%", "max_age": DURATION,
///     "max_use_per_uid": SIZE, "max_use_per_rule": { "<rule name>": SIZE, ... } }
/// SIZE is an integer (bytes) or a string for parse_size(); DURATION is an integer (seconds) or a
/// string for parse_duration(). "keep_free" sets keep_free_percent when given as "P%", else
/// keep_free_bytes (and clears the other form, so a later document can switch between them).
/// "max_use_per_rule" replaces the whole map. Throws ConfigError
/// ("<origin>: retention.<key>: <reason>") for a non-object, an unknown key or a bad value.
RetentionLimits parse_retention(const std::string& origin, const nlohmann::json& j, RetentionLimits base = {});

}  // namespace coredumpd
