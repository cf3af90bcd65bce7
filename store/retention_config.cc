#include "store/retention_config.h"

#include <utility>

namespace coredumpd {

namespace {

using nlohmann::json;

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

[[noreturn]] void config_error(const std::string& origin, const std::string& key,
                               const std::string& reason) {
  throw RetentionConfigError(origin + ": " + key + ": " + reason);
}

/// What `parse` reads from the JSON string `v`; otherwise throws: "invalid <what> "<s>" (<hint>)"
/// for a string it rejects, "expected <expected>, got <type>" for any other JSON value.
template <typename Parse>
auto json_string_value(const std::string& origin, const std::string& key, const json& v, Parse parse,
                       const std::string& what, const std::string& hint, const std::string& expected) {
  if (v.is_string()) {
    const auto s = v.get<std::string>();
    if (const auto parsed = parse(s)) return *parsed;
    config_error(origin, key, "invalid " + what + " \"" + s + "\" (" + hint + ")");
  }
  config_error(origin, key, "expected " + expected + ", got " + std::string(v.type_name()));
}

/// A size from JSON: a non-negative integer, or a string for parse_size().
std::uint64_t json_size(const std::string& origin, const std::string& key, const json& v) {
  if (v.is_number_unsigned()) {
    const auto n = v.get<std::uint64_t>();
    if (n > kMaxSizeBytes) config_error(origin, key, "size " + std::to_string(n) + " is too large");
    return n;
  }
  if (v.is_number_integer()) config_error(origin, key, "a size cannot be negative");
  return json_string_value(origin, key, v, parse_size, "size",
                           "want bytes, or a number with K, M, G or T: \"500M\"",
                           "a size (integer bytes or a string like \"2G\")");
}

/// A duration from JSON: a positive integer (seconds), or a string for parse_duration().
std::chrono::seconds json_duration(const std::string& origin, const std::string& key,
                                   const json& v) {
  if (v.is_number_integer()) {
    const auto n = v.get<std::int64_t>();
    if (n <= 0 || n > kMaxDurationSeconds)
      config_error(origin, key, "duration " + v.dump() + " out of range (1 second .. 292000 years)");
    return std::chrono::seconds(n);
  }
  return json_string_value(origin, key, v, parse_duration, "duration",
                           "want seconds, or units s, min, h, d, w: \"7d\"",
                           "a duration (integer seconds or a string like \"7d\")");
}

}  // namespace

RetentionLimits parse_retention(const std::string& origin, const nlohmann::json& j,
                                RetentionLimits base) {
  if (!j.is_object()) config_error(origin, "retention", "expected an object");
  RetentionLimits l = std::move(base);
  for (const auto& [key, v] : j.items()) {
    const std::string k = "retention." + key;
    if (key == "max_use") {
      if (v.is_null()) l.max_use_bytes.reset();
      else l.max_use_bytes = json_size(origin, k, v);
    } else if (key == "keep_free") {
      l.keep_free_bytes.reset();
      l.keep_free_percent.reset();
      if (v.is_null()) continue;
      if (v.is_string() && trim(v.get_ref<const std::string&>()).ends_with('%')) {
        const auto& s = v.get_ref<const std::string&>();
        const auto p = parse_percent(s);
        if (!p) config_error(origin, k, "invalid percentage \"" + s + "\" (want more than 0% and less than 100%)");
        l.keep_free_percent = *p;
      } else {
        l.keep_free_bytes = json_size(origin, k, v);
      }
    } else if (key == "max_age") {
      if (v.is_null()) l.max_age.reset();
      else l.max_age = json_duration(origin, k, v);
    } else if (key == "max_use_per_uid") {
      if (v.is_null()) l.max_use_per_uid_bytes.reset();
      else l.max_use_per_uid_bytes = json_size(origin, k, v);
    } else if (key == "max_use_per_rule") {
      l.max_use_per_rule_bytes.clear();
      if (v.is_null()) continue;
      if (!v.is_object())
        config_error(origin, k, "expected an object of rule name -> size, got " + std::string(v.type_name()));
      for (const auto& [rule, size] : v.items())
        l.max_use_per_rule_bytes[rule] = json_size(origin, k + "." + rule, size);
    } else {
      config_error(origin, k,
                   "unknown key (known: max_use, keep_free, max_age, max_use_per_uid, "
                   "max_use_per_rule)");
    }
  }
  return l;
}

}  // namespace coredumpd
