// The "retention" object of the configuration: the store's size limits (RetentionLimits, in
// store/retention.h), parsed through the table retention_keys() (config_keys.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "store/retention_limits.h"

namespace coredumpd {

/// Parses the `retention` object of the daemon's configuration over `base` (keys present replace
/// the base's value; a JSON null clears that limit). `origin` names the document in errors.
/// Shape (every key optional):
///   { "max_use": SIZE or "P%", "keep_free": SIZE or "P%", "percent_cap": SIZE, "max_age": DURATION,
///     "max_use_per_uid": SIZE, "max_use_per_rule": { "<rule name>": SIZE, ... } }
/// SIZE is an integer (bytes) or a string for parse_size(); DURATION is an integer (seconds) or a
/// string for parse_duration(). "max_use" and "keep_free" set the *_percent field when given as
/// "P%", else the *_bytes one (and clear the other form, so a later document can switch between them).
/// "max_use_per_rule" replaces the whole map. Throws ConfigError
/// ("<origin>: retention.<key>: <reason>") for a non-object, an unknown key or a bad value.
RetentionLimits parse_retention(const std::string& origin, const nlohmann::json& j, RetentionLimits base = {});

/// One line saying what the limits `l` (and `max_core_bytes`, the defaults' per-core cap) come to
/// in bytes on the filesystem holding `store_dir`, or its nearest existing parent when the store
/// does not exist yet: "retention for /var/lib/coredumpd (filesystem of N bytes): max_use N bytes
/// (10% of the filesystem, at most 4294967296), keep_free ..., max_age 259200 s, max_core_bytes N".
/// Never throws; an unreadable filesystem is said in the line.
std::string describe_retention(const RetentionLimits& l, std::optional<std::uint64_t> max_core_bytes,
                               const std::string& store_dir);

}  // namespace coredumpd
