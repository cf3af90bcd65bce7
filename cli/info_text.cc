#include "cli/info_text.h"

#include <grp.h>
#include <pwd.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <vector>

#include "cli/format.h"
#include "cli/info_details.h"
#include "cli/stack_trace.h"
#include "cli/terminal.h"
#include "store/record_extras.h"
#include "store/record_facts.h"
#include "util/text.h"

namespace coredumpd::cli {

namespace {

/// The buffer size getpwuid_r()/getgrgid_r() want, with a fallback when sysconf() has no answer.
std::size_t name_buffer_size(int what) {
  const long n = sysconf(what);
  return n > 0 ? static_cast<std::size_t>(n) : 16384;
}

/// systemd's uid_to_name(): the user's name, else the number itself. Escaped (a passwd entry is
/// not ours to trust either).
std::string user_name(std::int64_t uid) {
  std::vector<char> buf(name_buffer_size(_SC_GETPW_R_SIZE_MAX));
  struct passwd pw {};
  struct passwd* found = nullptr;
  while (getpwuid_r(static_cast<uid_t>(uid), &pw, buf.data(), buf.size(), &found) == ERANGE && buf.size() < (1U << 20))
    buf.resize(buf.size() * 2);
  return found ? escape_for_display(found->pw_name) : std::to_string(uid);
}

/// systemd's gid_to_name(): the group's name, else the number itself. Escaped.
std::string group_name(std::int64_t gid) {
  std::vector<char> buf(name_buffer_size(_SC_GETGR_R_SIZE_MAX));
  struct group gr {};
  struct group* found = nullptr;
  while (getgrgid_r(static_cast<gid_t>(gid), &gr, buf.data(), buf.size(), &found) == ERANGE && buf.size() < (1U << 20))
    buf.resize(buf.size() * 2);
  return found ? escape_for_display(found->gr_name) : std::to_string(gid);
}

/// "1000 (alice)", as coredumpctl's UID/GID/Owner UID lines; "unknown" when the daemon could not
/// learn it (coredumpctl would print the journal's "-1").
std::string uid_text(std::int64_t uid) { return uid >= 0 ? std::to_string(uid) + " (" + user_name(uid) + ")" : "unknown"; }
std::string gid_text(std::int64_t gid) { return gid >= 0 ? std::to_string(gid) + " (" + group_name(gid) + ")" : "unknown"; }

/// systemd's signal_to_string(): the name without "SIG" ("SEGV").
std::string short_signal_name(int signo) {
  std::string name = signal_name(signo);
  return name.starts_with("SIG") ? name.substr(3) : name;
}

/// /etc/machine-id (32 hex digits), or "" when it cannot be read. coredumpd's store lives on the
/// machine whose daemon wrote it, so this is the machine the crashes happened on, as journald's
/// _MACHINE_ID that coredumpctl shows.
std::string machine_id() {
  std::ifstream in("/etc/machine-id");
  std::string id;
  if (!(in >> id) || id.size() != 32 || id.find_first_not_of("0123456789abcdef") != std::string::npos) return "";
  return id;
}

/// The container's view of an id (extra.container[key], from NStgid: or the user namespace's
/// map) when it differs from the host's `host`.
std::optional<std::int64_t> ns_id(const DumpRecord& r, const char* key, std::int64_t host) {
  const auto& ct = container_facts(r);
  if (!ct.is_object()) return std::nullopt;
  const auto v = ct.find(key);
  if (v == ct.end() || !v->is_number_integer() || v->get<std::int64_t>() == host) return std::nullopt;
  return v->get<std::int64_t>();
}

/// "docker:<id>" (the container key) when the daemon found a container, "" for the host.
std::string container_text(const DumpRecord& r) {
  const auto& ct = container_facts(r);
  if (!ct.is_object() || !ct.value("in_container", false)) return "";
  return escape_for_display(json_bytes_at(ct, "key"));
}

std::string size_text(std::uint64_t bytes) { return format_size(bytes) + " (" + std::to_string(bytes) + " bytes)"; }

/// "none (raw core)" for a core stored as is, so that it reads differently from a dump that stored
/// no core at all ("none").
std::string compression_text(const DumpRecord& r) {
  if (r.compression.empty()) return "none";
  if (r.compression == kCompressionNone) return "none (raw core)";
  return escape_for_display(r.compression);
}

std::string signal_text(const DumpRecord& r) {
  if (r.signal) return std::to_string(*r.signal) + " (" + short_signal_name(*r.signal) + ")";
  // Records written before the daemon said why have no reason.
  const auto it = r.extra.is_object() ? r.extra.find(extras::kSignalUnavailable) : r.extra.end();
  return "not known: " +
         (it != r.extra.end() && it->is_string() ? escape_for_display(it->get<std::string>()) : std::string("not recorded"));
}

/// A line when `value` (raw bytes) is not empty, escaped onto one line.
void optional_line(std::vector<InfoField>& out, const char* label, const std::string& value) {
  if (!value.empty()) out.push_back({label, escape_for_display(value)});
}

/// coredumpctl 252's print_info() lines, up to Hostname.
std::vector<InfoField> identity_lines(const DumpRecord& r, const InfoStyle& s) {
  const std::string bold = ansi_highlight(s.colour), normal = ansi_normal(s.colour);
  std::vector<InfoField> out;
  out.push_back({"PID", bold + std::to_string(r.pid) + normal + (r.comm.empty() ? "" : " (" + escape_for_display(r.comm) + ")")});
  out.push_back({"UID", uid_text(r.uid)});
  out.push_back({"GID", gid_text(r.gid)});
  out.push_back({"Signal", signal_text(r)});
  out.push_back({"Timestamp", format_timestamp(r.timestamp_us, false) + " (" + format_relative(r.timestamp_us, s.now_us) + ")"});
  if (!r.argv.empty()) out.push_back({"Command Line", shell_join(r.argv)});
  if (!r.exe.empty()) out.push_back({"Executable", bold + escape_for_display(r.exe) + normal});
  optional_line(out, "Control Group", cgroup_path(r));
  const std::string unit = unit_of(r);
  optional_line(out, "Unit", unit);
  optional_line(out, "User Unit", user_unit_of(r));
  optional_line(out, "Slice", slice_of(r));
  optional_line(out, "Session", session_of(unit));
  if (const std::string owner = owner_uid_of(r); !owner.empty()) {
    const bool numeric = owner.find_first_not_of("0123456789") == std::string::npos && owner.size() < 11;
    out.push_back({"Owner UID", numeric ? uid_text(std::stoll(owner)) : escape_for_display(owner)});
  }
  optional_line(out, "Boot ID", r.boot_id);
  optional_line(out, "Machine ID", machine_id());
  optional_line(out, "Hostname", r.hostname);
  return out;
}

/// coredumpctl's Storage and Size on Disk lines, for our sources.
std::vector<InfoField> storage_lines(DumpSource& source, const DumpRecord& r, CoreStatus status, const InfoStyle& s) {
  std::vector<InfoField> out;
  const bool has_file = status == CoreStatus::Present || status == CoreStatus::Truncated;
  // coredumpctl: red for a file it cannot use, grey for a missing one.
  const std::string colour = status == CoreStatus::Missing || status == CoreStatus::Vacuumed ? ansi_grey(s.colour)
                             : has_file                                                       ? ""
                                                                                              : ansi_highlight_red(s.colour);
  const std::string normal = colour.empty() ? "" : ansi_normal(s.colour);
  if (const auto path = source.core_location(r)) {
    out.push_back({"Storage", colour + escape_for_display(*path) + " (" + core_status_name(status) + ")" + normal});
  } else if (source.kind() == SourceKind::Service && has_file) {
    out.push_back({"Storage", std::string("kept by coredumpd (") + core_status_name(status) + "; dumpctl dump retrieves it)"});
  } else {
    out.push_back({"Storage", "none"});
  }
  if (has_file) out.push_back({"Size on Disk", format_size(r.stored_size)});
  return out;
}

/// Our lines, after coredumpctl's.
std::vector<InfoField> our_lines(const DumpRecord& r, const AnalysisText& analysis) {
  std::vector<InfoField> out;
  out.push_back({"ID", escape_for_display(r.id)});
  std::string state = state_name(r.state);
  if (!r.reason.empty()) state += " (" + escape_for_display(r.reason) + ")";
  out.push_back({"State", state});
  if (const auto c = container_text(r); !c.empty()) out.push_back({"Container", c});
  if (r.extra.is_object() && r.extra.contains(extras::kRule) && r.extra[extras::kRule].is_string()) {
    const auto rule = r.extra[extras::kRule].get<std::string>();
    out.push_back({"Rule", rule.empty() ? "(defaults)" : escape_for_display(rule)});
  }
  for (const auto& f : analysis.ours)
    if (f.label == "Signature") out.push_back(f);
  if (r.tid || r.crashing_tid_ns) {
    std::string tid = r.tid ? std::to_string(*r.tid) : "?";
    if (r.crashing_tid_ns) tid += " (" + std::to_string(*r.crashing_tid_ns) + " in its pid namespace)";
    out.push_back({"TID", tid});
  }
  if (r.euid != r.uid || r.egid != r.gid)
    out.push_back({"Effective IDs", "uid " + uid_text(r.euid) + ", gid " + gid_text(r.egid)});
  std::string ns;
  if (const auto v = ns_id(r, "ns_pid", r.pid)) ns += "pid " + std::to_string(*v);
  if (const auto v = ns_id(r, "ns_uid", r.uid)) ns += (ns.empty() ? "" : ", ") + std::string("uid ") + std::to_string(*v);
  if (const auto v = ns_id(r, "ns_gid", r.gid)) ns += (ns.empty() ? "" : ", ") + std::string("gid ") + std::to_string(*v);
  if (!ns.empty()) out.push_back({"Namespace IDs", ns + " (as the crashing task's namespaces see them)"});
  optional_line(out, "Working Dir", r.cwd);
  out.push_back({"Coredump Mask", describe_coredump_mask(r.coredump_mask)});
  out.push_back({"Core Size", size_text(r.core_size)});
  out.push_back({"Stored Size", size_text(r.stored_size)});
  out.push_back({"Compression", compression_text(r)});
  // cgroup v1 or a file without a "0::" line: no unified path to show, so the file itself.
  if (cgroup_path(r).empty() && !r.cgroup.empty()) out.push_back({"Cgroup File", escape_for_display(r.cgroup)});
  for (auto& d : info_details(r.extra)) out.push_back(std::move(d));
  for (const auto& f : analysis.ours)
    if (f.label != "Signature") out.push_back(f);
  return out;
}

}  // namespace

std::string info_warning(const DumpRecord& r, CoreStatus status) {
  const std::string why = r.reason.empty() ? "" : ": " + escape_for_display(r.reason);
  switch (status) {
    case CoreStatus::Truncated:
      if (const auto s = short_core_from_extra(r.extra))  // the stream ended early: say how early
        return "the core is short: " + std::to_string(s->received) + " of " + std::to_string(s->expected) +
               " bytes arrived" + why + "; a debugger will see missing memory";
      return "the core of this dump is truncated" + why + "; a debugger will see missing memory";
    case CoreStatus::Failed: return "no usable core was stored for this dump" + why;
    case CoreStatus::Interrupted: return "the daemon stopped while receiving this dump; there is no core" + why;
    case CoreStatus::Missing: return "the core file of this dump is missing from the store";
    case CoreStatus::Vacuumed: return "the core of this dump was deleted by retention (dumpctl vacuum / max_use)";
    case CoreStatus::InProgress: return "this dump is still being received";
    case CoreStatus::Present:
    case CoreStatus::None: break;
  }
  return "";
}

void print_info_text(DumpSource& source, const DumpRecord& r, const InfoStyle& style, const Io& io) {
  const CoreStatus status = source.core_status(r);
  const std::string warning = info_warning(r, status);
  if (!warning.empty()) io.err << "dumpctl: warning: " << warning << '\n';
  const AnalysisText analysis = analysis_text(r, status == CoreStatus::Present || status == CoreStatus::Truncated);

  std::vector<InfoField> lines = identity_lines(r, style);
  for (auto& f : storage_lines(source, r, status, style)) lines.push_back(std::move(f));
  for (const auto& f : analysis.coredumpctl) lines.push_back(f);
  for (auto& f : our_lines(r, analysis)) lines.push_back(std::move(f));
  if (style.extra && !r.extra.is_null() && !(r.extra.is_object() && r.extra.empty())) {
    // JSON escapes C0 controls inside strings; sanitize_json_text() also escapes C1 controls and
    // bidi overrides, which JSON leaves raw.
    lines.push_back({"Extra", sanitize_json_text(r.extra.dump(2, ' ', false, nlohmann::json::error_handler_t::replace))});
  }
  if (!warning.empty()) lines.push_back({"Warning", warning});
  for (const auto& f : lines) print_info_field(io.out, f.label, f.value, kInfoLabelWidth);
}

}  // namespace coredumpd::cli
