// The readers of KeyValue (config_keys.h): each returns the value or throws ConfigError
// "<origin>: <key>: <reason>".
#include <climits>

#include "daemon/policy/config_keys.h"

namespace coredumpd {

using nlohmann::json;

void config_error(const std::string& origin, const std::string& key, const std::string& reason) {
  throw ConfigError(origin + ": " + key + ": " + reason);
}

KeyValue KeyValue::child(const std::string& name, const json& v) const {
  return KeyValue{origin, key.empty() ? name : key + "." + name, v};
}

std::int64_t KeyValue::integer(std::int64_t lo, std::int64_t hi) const {
  if (!value.is_number_integer()) fail("expected an integer, got " + std::string(value.type_name()));
  const auto n = value.get<std::int64_t>();
  if (n < lo || n > hi)
    fail("value " + std::to_string(n) + " out of range [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return n;
}

bool KeyValue::boolean() const {
  if (!value.is_boolean()) fail("expected true or false, got " + std::string(value.type_name()));
  return value.get<bool>();
}

std::string KeyValue::string() const {
  if (!value.is_string()) fail("expected a string, got " + std::string(value.type_name()));
  return value.get<std::string>();
}

std::string KeyValue::path() const {
  auto s = string();
  if (s.empty() || s[0] != '/') fail("expected an absolute path, got \"" + s + "\"");
  return s;
}

std::string KeyValue::choice() const {
  auto s = string();
  for (const auto c : choices)
    if (c == s) return s;
  std::string expected;  // "a", "b" or "c"
  for (std::size_t i = 0; i < choices.size(); ++i)
    expected += (i == 0 ? "" : i + 1 == choices.size() ? " or " : ", ") + ("\"" + std::string(choices[i]) + "\"");
  fail("expected " + expected + ", got \"" + s + "\"");
}

std::uint64_t KeyValue::size() const {
  if (value.is_number_integer()) return static_cast<std::uint64_t>(integer(0, INT64_MAX));
  if (!value.is_string()) fail("expected a size (bytes, or a string like \"500M\"), got " + std::string(value.type_name()));
  const auto s = value.get<std::string>();
  const auto n = parse_size(s);
  if (!n) fail("malformed size \"" + s + "\" (expected e.g. 1048576, \"500M\", \"2G\")");
  return *n;
}

}  // namespace coredumpd
