// The configuration keys, each declared once in a table (ConfigKey): its name, its type, its
// accepted values, its default, a one-line description, how it is applied to the configuration and
// how it is written back. Parsing (config.cc), `--check-config` (config_json.cc), the check of the
// shipped config/coredumpd.json and docs/configuration.md (config_doc.cc) all read these tables.
//
// The tables, one per place a key can live in the document:
//   global_keys()      top level                       config_keys.cc
//   compression_keys() "compression": {...}             config_keys.cc
//   testing_keys()     "testing": {...}                 config_keys.cc
//   retention_keys()   "retention": {...}               config_retention.cc
//   analysis_keys()    "analysis": {...}                config_analysis.cc
//   debuginfod_keys()  "analysis": {"debuginfod": {...}} config_analysis.cc
//   policy_keys()      "defaults": {...} and each rule  config_policy_keys.cc
//   rate_limit_keys()  a policy's "rate_limit": {...}   config_policy_keys.cc
//   rule_keys()        a rule's own keys ("name", "match")
//   match_keys()       a rule's "match": {...}
#pragma once

#include <chrono>
#include <cstdint>
#include <type_traits>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "daemon/policy/config.h"

namespace coredumpd {

/// An optional setting as JSON: its value, or null when unset (--check-config's form).
inline nlohmann::json optional_json(const auto& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); }

/// Throws ConfigError "<origin>: <key>: <reason>".
[[noreturn]] void config_error(const std::string& origin, const std::string& key, const std::string& reason);

/// One value being applied: the document it came from, its key as errors name it
/// ("compression.level", "rules[2].action") and, copied from its table entry, what it accepts.
/// The readers return the value or throw ConfigError naming origin, key and reason.
struct KeyValue {
  const std::string& origin;
  std::string key;
  const nlohmann::json& value;
  std::int64_t min = 0, max = 0;                    ///< integer(): the accepted range
  std::span<const std::string_view> choices = {};  ///< choice(): the accepted strings

  [[noreturn]] void fail(const std::string& reason) const { config_error(origin, key, reason); }
  /// A value nested below this one, named "<key>.<name>" (or `name` at the top level).
  KeyValue child(const std::string& name, const nlohmann::json& v) const;

  std::int64_t integer() const { return integer(min, max); }  ///< an integer in [min, max]
  std::int64_t integer(std::int64_t lo, std::int64_t hi) const;
  bool boolean() const;
  std::string string() const;
  std::string path() const;    ///< an absolute path
  std::string choice() const;  ///< one of `choices`
  /// A size: integer bytes or a string for parse_size() ("500M", "2G").
  std::uint64_t size() const;
};

/// One configuration key of an object whose settings are a T (Config, Policy, Match, ...).
template <class T>
struct ConfigKey {
  std::string_view name;
  std::string_view type;          ///< for the documentation: "integer", "boolean", "path", "size"...
  std::int64_t min = 0, max = 0;  ///< for integers: the accepted range, read by KeyValue::integer()
  std::span<const std::string_view> choices = {};  ///< for strings: the accepted values
  std::string_view values = {};   ///< for the documentation, other constraints ("> 0x40, one bit")
  /// For the documentation, a default that depends on the host; otherwise it is write(T{}).
  std::string_view default_text = {};
  std::string_view description;   ///< one line
  void (*apply)(const KeyValue&, T&) = nullptr;  ///< reads the value into the settings; throws ConfigError
  nlohmann::json (*write)(const T&) = nullptr;   ///< the setting as JSON; discarded or no writer: not written
  /// Applied after every other key of the object ("rules" start from the final "defaults").
  void (*apply_late)(const KeyValue&, T&) = nullptr;
};

namespace key_detail {
template <class>
struct MemberOf;
template <class T, class V>
struct MemberOf<V T::*> {
  using Owner = T;
  using Value = V;
};
}  // namespace key_detail

/// An entry for the boolean field `M` (&T::field).
template <auto M>
constexpr auto boolean_key(std::string_view name, std::string_view description, std::string_view default_text = {}) {
  using T = typename key_detail::MemberOf<decltype(M)>::Owner;
  return ConfigKey<T>{.name = name, .type = "boolean", .default_text = default_text, .description = description,
                      .apply = [](const KeyValue& v, T& t) { t.*M = v.boolean(); },
                      .write = [](const T& t) -> nlohmann::json { return t.*M; }};
}

/// An entry for the integer field `M` (&T::field, an int or a std::chrono duration) in [min, max].
template <auto M>
constexpr auto integer_key(std::string_view name, std::int64_t min, std::int64_t max, std::string_view description,
                           std::string_view default_text = {}) {
  using T = typename key_detail::MemberOf<decltype(M)>::Owner;
  using V = typename key_detail::MemberOf<decltype(M)>::Value;
  constexpr bool kDuration = requires(V d) { d.count(); };
  const std::string_view type = !kDuration ? "integer" : std::is_same_v<V, std::chrono::seconds> ? "integer (s)" : "integer (ms)";
  return ConfigKey<T>{.name = name, .type = type, .min = min, .max = max, .default_text = default_text,
                      .description = description,
                      .apply = [](const KeyValue& v, T& t) { t.*M = static_cast<V>(v.integer()); },
                      .write = [](const T& t) -> nlohmann::json {
                        if constexpr (kDuration) return (t.*M).count();
                        else return t.*M;
                      }};
}

/// The entry named `name`, or nullptr.
template <class T>
const ConfigKey<T>* find_key(std::span<const ConfigKey<T>> keys, std::string_view name) {
  for (const auto& k : keys)
    if (k.name == name) return &k;
  return nullptr;
}

/// The value `v` of key `k` of the object `parent`, with what `k` accepts.
template <class T>
KeyValue key_value(const KeyValue& parent, const ConfigKey<T>& k, const nlohmann::json& v) {
  KeyValue kv = parent.child(std::string(k.name), v);
  kv.min = k.min;
  kv.max = k.max;
  kv.choices = k.choices;
  return kv;
}

/// Why an object is refused: not an object, or a key its table lacks.
struct ObjectErrors {
  std::string not_object = "expected an object";
  std::string unknown_key = "unknown key";
};

/// Applies every key of the object `obj` over `target` in document order (then the entries with
/// apply_late), skipping the names in `skip`. Throws ConfigError.
template <class T>
void apply_keys(std::span<const ConfigKey<T>> keys, const KeyValue& obj, T& target, const ObjectErrors& errors = {},
                std::span<const std::string_view> skip = {}) {
  if (!obj.value.is_object()) obj.fail(errors.not_object);
  std::vector<std::pair<const ConfigKey<T>*, const nlohmann::json*>> late;
  for (const auto& [name, v] : obj.value.items()) {
    bool skipped = false;
    for (const auto s : skip) skipped = skipped || s == name;
    if (skipped) continue;
    const auto* k = find_key(keys, name);
    if (!k) obj.child(name, v).fail(errors.unknown_key);
    if (k->apply) k->apply(key_value(obj, *k, v), target);
    if (k->apply_late) late.emplace_back(k, &v);
  }
  for (const auto& [k, v] : late) k->apply_late(key_value(obj, *k, *v), target);
}

/// The settings of `t` as an object of every key with a writer.
template <class T>
nlohmann::json keys_to_json(std::span<const ConfigKey<T>> keys, const T& t) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& k : keys) {
    if (!k.write) continue;
    auto v = k.write(t);
    if (!v.is_discarded()) j[std::string(k.name)] = std::move(v);
  }
  return j;
}

/// "unknown key (known: a, b, c)": the reason for a key not in `keys`, naming those it has.
template <class T>
std::string unknown_key_naming(std::span<const ConfigKey<T>> keys) {
  std::string s = "unknown key (known: ";
  for (std::size_t i = 0; i < keys.size(); ++i) s += (i ? ", " : "") + std::string(keys[i].name);
  return s + ")";
}

std::span<const ConfigKey<Config>> global_keys();
std::span<const ConfigKey<CompressionOptions>> compression_keys();
std::span<const ConfigKey<Config>> testing_keys();
std::span<const ConfigKey<RetentionLimits>> retention_keys();
std::span<const ConfigKey<AnalysisSettings>> analysis_keys();
std::span<const ConfigKey<DebuginfodSettings>> debuginfod_keys();
std::span<const ConfigKey<JournalSettings>> journal_keys();
std::span<const ConfigKey<UploadSettings>> upload_keys();
std::span<const ConfigKey<Policy>> policy_keys();
std::span<const ConfigKey<RateLimit>> rate_limit_keys();
std::span<const ConfigKey<Rule>> rule_keys();
std::span<const ConfigKey<Match>> match_keys();

/// Applies a "defaults" object or a rule's policy keys (`skip`: the rule's own keys) over `p`.
void apply_policy(const KeyValue& obj, Policy& p, std::span<const std::string_view> skip = {});

/// Parses the "rules" list over `c` (each rule starting from c.defaults). Throws ConfigError.
void apply_rules(const KeyValue& rules, Config& c);

/// A rule's "match" object as written back: only the conditions it sets ("user" as "uid").
nlohmann::json match_to_json(const Match& m);

/// One key as docs/configuration.md lists it.
struct KeyDoc {
  std::string section;  ///< the object it lives in ("(top level)", "compression", "rules[].match", ...)
  std::string key;      ///< its name, as written in a file ("level")
  std::string type, default_value, values, description;
};

/// Every configuration key, table by table in the order above.
std::vector<KeyDoc> config_key_docs();

/// docs/configuration.md: config_key_docs() as markdown tables.
std::string config_keys_markdown();

/// The KEYS section's body of coredumpd.json(5) (docs/man/coredumpd.json.5.scd): config_key_docs()
/// in scdoc syntax, one "## section" per table and one indented paragraph per key, starting with
/// scdoc comment lines saying it is generated.
std::string config_keys_scdoc();

}  // namespace coredumpd
