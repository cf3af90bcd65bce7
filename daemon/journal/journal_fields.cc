#include "daemon/journal/journal_fields.h"

#include <cstdint>
#include <exception>
#include <optional>

#include <nlohmann/json.hpp>

#include "analysis/crash_report.h"
#include "analysis/report_text.h"
#include "store/record_extras.h"
#include "store/record_facts.h"
#include "util/text.h"

namespace coredumpd::journal {

namespace {

using nlohmann::json;

/// `s` cut to at most `cap` bytes, not inside a UTF-8 sequence (a cut through one would turn a
/// text field into binary data for journalctl). Returns whether it was cut.
bool cap_at(std::string& s, std::size_t cap) {
  if (s.size() <= cap) return false;
  std::size_t end = cap;
  // Back off continuation bytes (10xxxxxx) to the start of the sequence the cap falls in.
  for (int i = 0; i < 3 && end > 0 && (static_cast<unsigned char>(s[end]) & 0xC0) == 0x80; ++i) --end;
  s.resize(end);
  return true;
}

class Builder {
 public:
  void add(std::string_view name, std::string value, std::size_t cap = kMaxShortField) {
    if (value.empty()) return;
    if (cap_at(value, cap)) truncated_ += (truncated_.empty() ? "" : " ") + std::string(name);
    std::string field;
    field.reserve(name.size() + 1 + value.size());
    field.append(name).push_back('=');
    field += value;
    fields_.push_back(std::move(field));
  }
  void add(std::string_view name, std::int64_t value) { add(name, std::to_string(value)); }
  std::vector<std::string> finish() {
    add("COREDUMPD_TRUNCATED_FIELDS", truncated_);
    return std::move(fields_);
  }

 private:
  std::vector<std::string> fields_;
  std::string truncated_;
};

const json& object_at(const json& obj, const char* key) {
  static const json kNull;
  if (!obj.is_object()) return kNull;
  const auto it = obj.find(key);
  return it != obj.end() && it->is_object() ? *it : kNull;
}

std::string join(const std::vector<std::string>& parts, char sep) {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (i) out.push_back(sep);
    out += parts[i];
  }
  return out;
}

/// systemd's compose_open_fds(): per descriptor "<fd>:<target>\n" and its fdinfo lines, a blank
/// line between descriptors. We kept fdinfo's pos, flags, mnt_id, ino and lock lines.
std::string open_fds(const json& fds) {
  if (!fds.is_array()) return "";
  std::string out;
  for (const auto& fd : fds) {
    if (!fd.is_object() || !fd.contains("fd") || !fd["fd"].is_number_integer()) continue;
    if (!out.empty()) out.push_back('\n');
    out += std::to_string(fd["fd"].get<std::int64_t>()) + ":" + json_bytes_at(fd, "target") + "\n";
    if (const std::string v = json_integer_at(fd, "pos"); !v.empty()) out += "pos:\t" + v + "\n";
    if (const auto f = fd.find("flags"); f != fd.end() && f->is_string()) out += "flags:\t" + f->get<std::string>() + "\n";
    if (const std::string v = json_integer_at(fd, "mnt_id"); !v.empty()) out += "mnt_id:\t" + v + "\n";
    if (const std::string v = json_integer_at(fd, "ino"); !v.empty()) out += "ino:\t" + v + "\n";
    if (const auto l = fd.find("locks"); l != fd.end() && l->is_array())
      for (const auto& lock : *l)
        if (lock.is_string()) out += "lock:\t" + lock.get<std::string>() + "\n";
  }
  return out;
}

}  // namespace

json package_json(const analysis::CrashReport& report) {
  json packages = json::object();
  for (const auto& m : report.modules) {
    if (m.path.empty() || (!m.package.is_object() && m.build_id.empty())) continue;
    json entry = m.package.is_object() ? m.package : json::object();
    if (!m.build_id.empty()) entry["buildId"] = m.build_id;  // systemd merges it over the note's keys
    packages[m.path] = std::move(entry);
  }
  return packages;
}

bool entry_wanted(DumpState s) {
  switch (s) {
    case DumpState::Complete:
    case DumpState::Truncated:
    case DumpState::Failed:
    case DumpState::MetadataOnly:
    case DumpState::Rejected:
      return true;
    case DumpState::InProgress:
    case DumpState::Interrupted:
    case DumpState::Forwarded:
      return false;
  }
  return false;
}

std::vector<std::string> journal_fields(const DumpRecord& r, const EntryOptions& o) {
  const bool stored = !r.path.empty() && (r.state == DumpState::Complete || r.state == DumpState::Truncated);
  const auto report = analysis::stored_report(r);
  const json& proc = object_at(r.extra, extras::kProc);
  Builder b;
  b.add("MESSAGE", analysis::crash_message(r, report, stored, o.stack_trace), kMaxLongField);
  b.add("MESSAGE_ID", std::string(kCoredumpMessageId));
  b.add("PRIORITY", 2);  // LOG_CRIT, as systemd-coredump
  // Always written, unknown or not: systemd 252's `coredumpctl list` aborts (an assertion in
  // safe_atoi()/parse_uid()) on a crash entry that lacks one of these four, and then lists no
  // crash at all. Unknown ids are "-1" (it shows "-"), an unknown signal "0".
  b.add("COREDUMP_PID", r.pid);
  b.add("COREDUMP_UID", r.uid);
  b.add("COREDUMP_GID", r.gid);
  b.add("COREDUMP_SIGNAL", r.signal.value_or(0));
  if (r.signal) b.add("COREDUMP_SIGNAL_NAME", signal_name(*r.signal));
  b.add("COREDUMP_TIMESTAMP", r.timestamp_us);
  b.add("COREDUMP_RLIMIT", rlimit_core_of(r));
  b.add("COREDUMP_HOSTNAME", r.hostname);
  b.add("COREDUMP_COMM", r.comm);
  b.add("COREDUMP_EXE", r.exe);
  b.add("COREDUMP_CMDLINE", cmdline_of(r));
  b.add("COREDUMP_CWD", r.cwd);
  b.add("COREDUMP_CGROUP", cgroup_path(r));
  const std::string unit = unit_of(r);
  b.add("COREDUMP_UNIT", unit);
  b.add("COREDUMP_USER_UNIT", user_unit_of(r));
  b.add("COREDUMP_SESSION", session_of(unit));
  b.add("COREDUMP_OWNER_UID", owner_uid_of(r));
  b.add("COREDUMP_SLICE", slice_of(r));
  b.add("COREDUMP_PROC_STATUS", json_bytes_at(proc, "status"), kMaxLongField);
  b.add("COREDUMP_PROC_MAPS", json_bytes_at(proc, "maps"), kMaxLongField);
  b.add("COREDUMP_PROC_LIMITS", json_bytes_at(proc, "limits"), kMaxLongField);
  b.add("COREDUMP_PROC_CGROUP", r.cgroup, kMaxLongField);
  b.add("COREDUMP_PROC_MOUNTINFO", json_bytes_at(proc, "mountinfo"), kMaxLongField);
  if (const auto env = r.extra.find(extras::kEnviron); env != r.extra.end() && env->is_array()) {
    std::vector<std::string> vars;  // systemd: the NUL-separated environ with NULs as newlines
    for (const auto& v : *env)
      if (auto bytes = bytes_from_json(v)) vars.push_back(std::move(*bytes));
    b.add("COREDUMP_ENVIRON", join(vars, '\n'), kMaxLongField);
  }
  if (proc.is_object())
    if (const auto fds = proc.find("fds"); fds != proc.end()) b.add("COREDUMP_OPEN_FDS", open_fds(*fds), kMaxLongField);
  if (report && report->state == "ok") {
    // systemd: name and version of the executable's module, and the modules' .note.package by path.
    if (const auto* exe = analysis::executable_module(*report, r.exe)) {
      b.add("COREDUMP_PACKAGE_NAME", analysis::package_string(exe->package, "name"));
      b.add("COREDUMP_PACKAGE_VERSION", analysis::package_string(exe->package, "version"));
    }
    json packages = package_json(*report);
    if (!packages.empty())
      b.add("COREDUMP_PACKAGE_JSON", packages.dump(-1, ' ', false, json::error_handler_t::replace), kMaxLongField);
  }
  if (r.state == DumpState::Truncated) b.add("COREDUMP_TRUNCATED", "1");
  if (stored && o.core_present && !o.store_dir.empty())
    b.add("COREDUMP_FILENAME", o.store_dir + (o.store_dir.ends_with('/') ? "" : "/") + r.path);
  b.add("OBJECT_PID", r.pid);
  b.add("COREDUMPD_ID", r.id);
  b.add("COREDUMPD_STATE", state_name(r.state));
  b.add("COREDUMPD_REASON", r.reason);
  b.add("COREDUMPD_SIGNATURE", r.signature);
  b.add("COREDUMPD_SIGNATURE_TEXT", r.signature_text);
  b.add("COREDUMPD_RULE", r.rule);
  if (r.container_key) b.add("COREDUMPD_CONTAINER", *r.container_key);
  return b.finish();
}

std::string field_value(const std::vector<std::string>& fields, std::string_view name) {
  for (const auto& f : fields)
    if (f.size() > name.size() && f.starts_with(name) && f[name.size()] == '=') return f.substr(name.size() + 1);
  return "";
}

}  // namespace coredumpd::journal
