// The `retention` object of the daemon's configuration, parsed into RetentionLimits.
#pragma once

#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "store/retention_limits.h"

namespace coredumpd {

/// A bad `retention` configuration; what() reads "<origin>: retention.<key>: <reason>".
class RetentionConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Parses the `retention` object of the daemon's configuration over `base` (keys present replace
/// the base's value; a JSON null clears that limit). `origin` names the document in errors.
/// Shape (every key optional):
///   { "max_use": SIZE, "keep_free": SIZE or "P%", "max_age": DURATION,
///     "max_use_per_uid": SIZE, "max_use_per_rule": { "<rule name>": SIZE, ... } }
/// SIZE is an integer (bytes) or a string for parse_size(); DURATION is an integer (seconds) or a
/// string for parse_duration(). "keep_free" sets keep_free_percent when given as "P%", else
/// keep_free_bytes (and clears the other form, so a later document can switch between them).
/// "max_use_per_rule" replaces the whole map. Throws RetentionConfigError
/// ("<origin>: retention.<key>: <reason>") for a non-object, an unknown key or a bad value.
RetentionLimits parse_retention(const std::string& origin, const nlohmann::json& j,
                                RetentionLimits base = {});

}  // namespace coredumpd
