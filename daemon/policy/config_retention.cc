// The table of the "retention" keys (config_keys.h) and parse_retention().
#include "daemon/policy/config_retention.h"

#include <sys/statvfs.h>

#include <cstdio>
#include <filesystem>
#include <limits>

#include <fmt/format.h>

#include "daemon/policy/config_keys.h"
#include "util/text.h"

namespace coredumpd {

namespace {

using nlohmann::json;

constexpr std::uint64_t kMaxSize = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
// Durations are compared in microseconds (the index's unit), which must not overflow int64.
constexpr std::int64_t kMaxDurationSeconds = std::numeric_limits<std::int64_t>::max() / 1'000'000;


/// A size from JSON: a non-negative integer, or a string for parse_size().
std::uint64_t retention_size(const KeyValue& kv) {
  const json& v = kv.value;
  if (v.is_number_unsigned()) {
    const auto n = v.get<std::uint64_t>();
    if (n > kMaxSize) kv.fail("size " + std::to_string(n) + " is too large");
    return n;
  }
  if (v.is_number_integer()) kv.fail("a size cannot be negative");
  if (v.is_string()) {
    const auto s = v.get<std::string>();
    if (const auto n = parse_size(s)) return *n;
    kv.fail("invalid size \"" + s + "\" (want bytes, or a number with K, M, G or T: \"500M\")");
  }
  kv.fail("expected a size (integer bytes or a string like \"2G\"), got " + std::string(v.type_name()));
}

std::chrono::seconds retention_duration(const KeyValue& kv) {
  const json& v = kv.value;
  if (v.is_number_integer()) {
    const auto n = v.get<std::int64_t>();
    if (n <= 0 || n > kMaxDurationSeconds) kv.fail("duration " + v.dump() + " out of range (1 second .. 292000 years)");
    return std::chrono::seconds(n);
  }
  if (v.is_string()) {
    const auto s = v.get<std::string>();
    if (const auto d = parse_duration(s)) return *d;
    kv.fail("invalid duration \"" + s + "\" (want seconds, or units s, min, h, d, w: \"7d\")");
  }
  kv.fail("expected a duration (integer seconds or a string like \"7d\"), got " + std::string(v.type_name()));
}

// A percentage as parse_percent() reads it: fixed notation (never "1e-05"), with the 9 decimals it
// keeps at most, trailing zeros dropped; it reads back as the same double.
std::string percent_text(double p) {
  std::string s = fmt::format("{:.9f}", p);
  s.erase(s.find_last_not_of('0') + 1);
  if (s.back() == '.') s.pop_back();
  return s + "%";
}


// A size limit (a std::optional<std::uint64_t> field `M`); null clears it.
template <auto M>
constexpr ConfigKey<RetentionLimits> size_limit(std::string_view name, std::string_view description) {
  return {.name = name, .type = "size or null", .description = description,
          .apply = [](const KeyValue& v, RetentionLimits& l) {
            if (v.value.is_null()) (l.*M).reset();
            else l.*M = retention_size(v);
          },
          .write = [](const RetentionLimits& l) { return optional_json(l.*M); }};
}

// A limit written as a size or as "P%" of the filesystem (fields `B` and `P`): a document sets one
// form and clears the other, so a later one can switch between them; null clears both.
template <auto B, auto P>
constexpr ConfigKey<RetentionLimits> size_or_percent(std::string_view name, std::string_view description) {
  return {.name = name, .type = "size, \"P%\" or null", .values = "0% < P < 100%", .description = description,
          .apply = [](const KeyValue& v, RetentionLimits& l) {
            (l.*B).reset();
            (l.*P).reset();
            if (v.value.is_null()) return;
            if (v.value.is_string() && trim_blanks(v.value.get_ref<const std::string&>()).ends_with('%')) {
              const auto& s = v.value.get_ref<const std::string&>();
              const auto p = parse_percent(s);
              if (!p) v.fail("invalid percentage \"" + s + "\" (want more than 0% and less than 100%)");
              l.*P = *p;
            } else {
              l.*B = retention_size(v);
            }
          },
          .write = [](const RetentionLimits& l) { return (l.*P) ? json(percent_text(*(l.*P))) : optional_json(l.*B); }};
}

constexpr ConfigKey<RetentionLimits> kRetention[] = {
    size_or_percent<&RetentionLimits::max_use_bytes, &RetentionLimits::max_use_percent>(
        "max_use", "All stored cores together, the oldest going first; \"P%\" of the filesystem's size, at most "
                   "percent_cap (default 10%, as systemd-coredump's MaxUse=)."),
    size_or_percent<&RetentionLimits::keep_free_bytes, &RetentionLimits::keep_free_percent>(
        "keep_free", "Free space to leave on the store's filesystem; \"P%\" of its size, at most percent_cap "
                     "(default 15%, as systemd-coredump's KeepFree=)."),
    size_limit<&RetentionLimits::percent_cap_bytes>(
        "percent_cap", "The most a max_use or keep_free given as \"P%\" comes to (default 4G, systemd-coredump's bound)."),
    {.name = "max_age", .type = "duration or null",
     .description = "Dumps older than this are deleted, record and core (default none: records stay).",
     .apply = [](const KeyValue& v, RetentionLimits& l) {
       if (v.value.is_null()) l.max_age.reset();
       else l.max_age = retention_duration(v);
     },
     .write = [](const RetentionLimits& l) { return l.max_age ? json(l.max_age->count()) : json(nullptr); }},
    {.name = "max_core_age", .type = "duration or null",
     .description = "Cores older than this are deleted, their records stay (default 3d, systemd-tmpfiles' age for "
                    "systemd-coredump's cores).",
     .apply = [](const KeyValue& v, RetentionLimits& l) {
       if (v.value.is_null()) l.max_core_age.reset();
       else l.max_core_age = retention_duration(v);
     },
     .write = [](const RetentionLimits& l) { return l.max_core_age ? json(l.max_core_age->count()) : json(nullptr); }},
    size_limit<&RetentionLimits::max_use_per_uid_bytes>("max_use_per_uid", "Cores of one real uid together."),
    {.name = "max_use_per_rule", .type = "object or null", .values = "{\"<rule name>\": SIZE}",
     .description = "Cores of the dumps each rule chose together (\"\": dumps no rule matched).",
     .apply = [](const KeyValue& v, RetentionLimits& l) {
       l.max_use_per_rule_bytes.clear();
       if (v.value.is_null()) return;
       if (!v.value.is_object()) v.fail("expected an object of rule name -> size, got " + std::string(v.value.type_name()));
       for (const auto& [rule, size] : v.value.items()) l.max_use_per_rule_bytes[rule] = retention_size(v.child(rule, size));
     },
     .write = [](const RetentionLimits& l) {
       json per_rule = json::object();
       for (const auto& [rule, bytes] : l.max_use_per_rule_bytes) per_rule[rule] = bytes;
       return per_rule;
     }},
};

}  // namespace

std::span<const ConfigKey<RetentionLimits>> retention_keys() { return kRetention; }

std::string describe_retention(const RetentionLimits& l, std::optional<std::uint64_t> max_core_bytes,
                               const std::string& store_dir) {
  // The store may not exist before the first start: its filesystem is its nearest existing parent's.
  std::filesystem::path at = store_dir;
  struct statvfs sv{};
  while (::statvfs(at.c_str(), &sv) != 0 && at.has_parent_path() && at != at.parent_path()) at = at.parent_path();
  std::optional<std::uint64_t> fs_total;
  if (::statvfs(at.c_str(), &sv) == 0) fs_total = static_cast<std::uint64_t>(sv.f_blocks) * sv.f_frsize;
  const SpaceLimits space = resolve_space_limits(l, fs_total);
  const auto bytes = [](std::optional<std::uint64_t> b) { return b ? fmt::format("{} bytes", *b) : std::string("none"); };
  const auto form = [&](std::optional<double> percent, std::optional<std::uint64_t> fixed) {
    if (!percent) return std::string();
    std::string s = " (" + percent_text(*percent) + " of the filesystem";
    if (l.percent_cap_bytes) s += fmt::format(", at most {}", *l.percent_cap_bytes);
    if (fixed) s += fmt::format(", and {} bytes", *fixed);
    return s + ")";
  };
  std::string out = "retention for " + store_dir +
                    (fs_total ? fmt::format(" (filesystem of {} bytes): ", *fs_total)
                              : std::string(" (filesystem size unreadable: percentages do not apply): "));
  out += "max_use " + bytes(space.max_use_bytes) + form(l.max_use_percent, l.max_use_bytes);
  out += ", keep_free " + bytes(space.keep_free_bytes) + form(l.keep_free_percent, l.keep_free_bytes);
  out += ", max_age " + (l.max_age ? fmt::format("{} s", l.max_age->count()) : std::string("none"));
  out += ", max_core_age " + (l.max_core_age ? fmt::format("{} s", l.max_core_age->count()) : std::string("none"));
  out += ", max_use_per_uid " + bytes(l.max_use_per_uid_bytes);
  out += ", max_core_bytes " + bytes(max_core_bytes);
  return out;
}

RetentionLimits parse_retention(const std::string& origin, const json& j, RetentionLimits base) {
  RetentionLimits l = std::move(base);
  apply_keys(retention_keys(), KeyValue{origin, "retention", j}, l,
             {.unknown_key = unknown_key_naming(retention_keys())});
  return l;
}

}  // namespace coredumpd
