#include "store/record_query.h"

#include <algorithm>
#include <map>

#include "store/record_facts.h"

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

namespace {

using FieldFn = std::optional<std::string> (*)(const DumpRecord&);

struct Field {
  std::string_view name;
  FieldFn value;
};

// Every journal field of daemon/journal/journal_fields.h that names a fact a user would select
// crashes by (the /proc captures, MESSAGE and package fields are left out: nobody matches a whole
// maps file, and packages come from the analysis), with the same derivations
// (store/record_facts.h), then ours.
constexpr Field kFields[] = {
    {"COREDUMP_PID", [](const DumpRecord& r) { return number(r.pid); }},
    {"COREDUMP_UID", [](const DumpRecord& r) { return number(r.uid); }},
    {"COREDUMP_GID", [](const DumpRecord& r) { return number(r.gid); }},
    {"COREDUMP_SIGNAL",
     [](const DumpRecord& r) { return r.signal ? std::optional(std::to_string(*r.signal)) : std::nullopt; }},
    {"COREDUMP_SIGNAL_NAME",
     [](const DumpRecord& r) { return r.signal ? std::optional(signal_name(*r.signal)) : std::nullopt; }},
    {"COREDUMP_TIMESTAMP", [](const DumpRecord& r) { return std::optional(std::to_string(r.timestamp_us)); }},
    {"COREDUMP_RLIMIT", [](const DumpRecord& r) { return text(rlimit_core_of(r)); }},
    {"COREDUMP_HOSTNAME", [](const DumpRecord& r) { return text(r.hostname); }},
    {"COREDUMP_COMM", [](const DumpRecord& r) { return text(r.comm); }},
    {"COREDUMP_EXE", [](const DumpRecord& r) { return text(r.exe); }},
    {"COREDUMP_CMDLINE", [](const DumpRecord& r) { return text(cmdline_of(r)); }},
    {"COREDUMP_CWD", [](const DumpRecord& r) { return text(r.cwd); }},
    {"COREDUMP_CGROUP", [](const DumpRecord& r) { return text(cgroup_path(r)); }},
    {"COREDUMP_UNIT", [](const DumpRecord& r) { return text(unit_of(r)); }},
    {"COREDUMP_USER_UNIT", [](const DumpRecord& r) { return text(user_unit_of(r)); }},
    {"COREDUMP_SESSION", [](const DumpRecord& r) { return text(session_of(unit_of(r))); }},
    {"COREDUMP_OWNER_UID", [](const DumpRecord& r) { return text(owner_uid_of(r)); }},
    {"COREDUMP_SLICE", [](const DumpRecord& r) { return text(slice_of(r)); }},
    {"COREDUMP_TRUNCATED",
     [](const DumpRecord& r) { return r.state == DumpState::Truncated ? std::optional<std::string>("1") : std::nullopt; }},
    {"OBJECT_PID", [](const DumpRecord& r) { return number(r.pid); }},
    {"_BOOT_ID", [](const DumpRecord& r) { return text(r.boot_id); }},
    {"COREDUMPD_ID", [](const DumpRecord& r) { return text(r.id); }},
    {"COREDUMPD_STATE", [](const DumpRecord& r) { return std::optional(std::string(state_name(r.state))); }},
    {"COREDUMPD_REASON", [](const DumpRecord& r) { return text(r.reason); }},
    {"COREDUMPD_SIGNATURE", [](const DumpRecord& r) { return text(r.signature); }},
    {"COREDUMPD_RULE", [](const DumpRecord& r) { return text(r.rule); }},
    {"COREDUMPD_CONTAINER", [](const DumpRecord& r) { return r.container_key; }},
};

const Field* find_field(std::string_view name) {
  const auto it = std::find_if(std::begin(kFields), std::end(kFields), [&](const Field& f) { return f.name == name; });
  return it != std::end(kFields) ? &*it : nullptr;
}

}  // namespace

std::optional<std::string> record_field(const DumpRecord& r, std::string_view field) {
  const Field* f = find_field(field);
  return f ? f->value(r) : std::nullopt;
}

bool known_field(std::string_view field) { return find_field(field) != nullptr; }

std::vector<std::string_view> known_fields() {
  std::vector<std::string_view> out;
  for (const auto& f : kFields) out.push_back(f.name);
  return out;
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
