#include "store/record_query.h"

#include <algorithm>
#include <map>

namespace coredumpd {

namespace {

std::optional<std::string> number(std::int64_t v) {
  if (v < 0) return std::nullopt;
  return std::to_string(v);
}

std::optional<std::string> text(const std::string& s) {
  if (s.empty()) return std::nullopt;
  return s;
}

bool is_prefix_field(std::string_view field) { return field == "COREDUMPD_ID" || field == "COREDUMPD_SIGNATURE"; }

}  // namespace

std::optional<std::string> record_field(const DumpRecord& r, std::string_view field) {
  if (field == "COREDUMP_PID") return number(r.pid);
  if (field == "COREDUMP_UID") return number(r.uid);
  if (field == "COREDUMP_GID") return number(r.gid);
  if (field == "COREDUMP_SIGNAL") return r.signal ? std::optional(std::to_string(*r.signal)) : std::nullopt;
  if (field == "COREDUMP_SIGNAL_NAME") return r.signal ? std::optional(signal_name(*r.signal)) : std::nullopt;
  if (field == "COREDUMP_TIMESTAMP") return std::to_string(r.timestamp_us);
  if (field == "COREDUMP_COMM") return text(r.comm);
  if (field == "COREDUMP_EXE") return text(r.exe);
  if (field == "COREDUMP_CWD") return text(r.cwd);
  if (field == "COREDUMP_HOSTNAME") return text(r.hostname);
  if (field == "_BOOT_ID") return text(r.boot_id);
  if (field == "COREDUMPD_ID") return text(r.id);
  if (field == "COREDUMPD_STATE") return std::string(state_name(r.state));
  if (field == "COREDUMPD_SIGNATURE") return text(r.signature);
  if (field == "COREDUMPD_RULE") return text(r.rule);
  if (field == "COREDUMPD_CONTAINER") return r.container_key;
  return std::nullopt;
}

bool known_field(std::string_view field) {
  static constexpr std::string_view kKnown[] = {
      "COREDUMP_PID",      "COREDUMP_UID", "COREDUMP_GID",      "COREDUMP_SIGNAL", "COREDUMP_SIGNAL_NAME",
      "COREDUMP_TIMESTAMP", "COREDUMP_COMM", "COREDUMP_EXE",     "COREDUMP_CWD",    "COREDUMP_HOSTNAME",
      "_BOOT_ID",          "COREDUMPD_ID", "COREDUMPD_STATE",   "COREDUMPD_SIGNATURE", "COREDUMPD_RULE",
      "COREDUMPD_CONTAINER"};
  return std::find(std::begin(kKnown), std::end(kKnown), field) != std::end(kKnown);
}

bool record_matches(const RecordQuery& q, const DumpRecord& r) {
  if (q.since_us && r.timestamp_us < *q.since_us) return false;
  if (q.until_us && r.timestamp_us > *q.until_us) return false;
  // Journal semantics: OR within a field, AND across fields.
  std::map<std::string_view, bool> satisfied;
  for (const auto& m : q.matches) {
    bool& ok = satisfied[m.field];
    if (ok) continue;
    const auto value = record_field(r, m.field);
    if (!value) continue;
    ok = is_prefix_field(m.field) ? !m.value.empty() && value->starts_with(m.value) : *value == m.value;
  }
  return std::all_of(satisfied.begin(), satisfied.end(), [](const auto& s) { return s.second; });
}

}  // namespace coredumpd
