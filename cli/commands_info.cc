// `dumpctl info`: every field of one dump (the raw collected metadata with --extra).
#include <sstream>

#include "cli/core_file.h"
#include "cli/dump_source.h"
#include "cli/dumpctl.h"
#include "cli/format.h"
#include "cli/info_details.h"
#include "cli/json_output.h"
#include "cli/commands_info.h"
#include "cli/options.h"
#include "cli/terminal.h"
#include "cli/short_id.h"
#include "cli/stack_trace.h"
#include "store/index.h"
#include "store/record_extras.h"
#include "store/record_query.h"
#include "util/text.h"

namespace coredumpd::cli {

namespace {

/// Escapes a possibly multi-line value line by line (one trailing newline is dropped), so that
/// e.g. a cgroup v1 file shows as several indented lines instead of "\n" escapes.
std::string escape_lines(std::string_view v) {
  if (!v.empty() && v.back() == '\n') v.remove_suffix(1);
  std::string out;
  for (;;) {
    const std::size_t nl = v.find('\n');
    out += escape_for_display(v.substr(0, nl));
    if (nl == std::string_view::npos) break;
    out.push_back('\n');
    v.remove_prefix(nl + 1);
  }
  return out;
}

std::string id_pair(std::int64_t real, std::int64_t effective) {
  const auto show = [](std::int64_t v) { return v >= 0 ? std::to_string(v) : std::string("?"); };
  return show(real) + " (effective " + show(effective) + ")";
}

/// ", N in its <ns> namespace" when the container view of an id (extra.container[key], set by
/// the daemon from NStgid: or the user namespace's map) differs from the host's `host`; else "".
std::string ns_view(const DumpRecord& r, const char* key, std::int64_t host, const char* ns) {
  if (!r.extra.is_object()) return "";
  const auto ct = r.extra.find(extras::kContainer);
  if (ct == r.extra.end() || !ct->is_object()) return "";
  const auto v = ct->find(key);
  if (v == ct->end() || !v->is_number_integer() || v->get<std::int64_t>() == host) return "";
  return ", " + std::to_string(v->get<std::int64_t>()) + " in its " + ns + " namespace";
}

/// "docker:<id>" (the container key) when the daemon found a container, "" for the host.
std::string container_text(const DumpRecord& r) {
  if (!r.extra.is_object()) return "";
  const auto ct = r.extra.find(extras::kContainer);
  if (ct == r.extra.end() || !ct->is_object() || !ct->value("in_container", false)) return "";
  const auto key = ct->find("key");
  return key != ct->end() && key->is_string() ? escape_for_display(key->get<std::string>()) : "";
}

std::string size_text(std::uint64_t bytes) {
  return format_size(bytes) + " (" + std::to_string(bytes) + " bytes)";
}

/// The Compression field: "none (raw core)" for a core stored as is, so that it reads differently
/// from a dump that stored no core at all ("none").
std::string compression_text(const DumpRecord& r) {
  if (r.compression.empty()) return "none";
  if (r.compression == kCompressionNone) return "none (raw core)";
  return escape_for_display(r.compression);
}

/// The warning for a dump whose core is not fully usable, or "" if there is nothing to warn about.
std::string warning_for(const DumpRecord& r, CoreStatus status) {
  const std::string why = r.reason.empty() ? "" : ": " + escape_for_display(r.reason);
  switch (status) {
    case CoreStatus::Truncated:
      if (const auto s = short_core_from_extra(r.extra))  // the stream ended early: say how early
        return "the core is short: " + std::to_string(s->received) + " of " + std::to_string(s->expected) +
               " bytes arrived" + why + "; a debugger will see missing memory";
      return "the core of this dump is truncated" + why + "; a debugger will see missing memory";
    case CoreStatus::Failed: return "no usable core was stored for this dump" + why;
    case CoreStatus::Interrupted:
      return "the daemon stopped while receiving this dump; there is no core" + why;
    case CoreStatus::Missing: return "the core file of this dump is missing from the store";
    case CoreStatus::Vacuumed: return "the core of this dump was deleted by retention (dumpctl vacuum / max_use)";
    case CoreStatus::InProgress: return "this dump is still being received";
    case CoreStatus::Present:
    case CoreStatus::None: break;
  }
  return "";
}

}  // namespace

void print_info_record(DumpSource& source, const DumpRecord& r, const ShortIds& short_ids, const InfoOptions& o,
                       const Io& io) {
  const CoreStatus status = source.core_status(r);
  const std::string warning = warning_for(r, status);
  if (!warning.empty()) io.err << "dumpctl: warning: " << warning << '\n';

  if (o.select.json != JsonMode::Off) {
    auto j = to_json(r);
    j["short_id"] = short_ids.of(r.id);  // what `list` shows for it
    // The analysis as stored (analysis/crash_report.h's shape), for readers of the JSON.
    if (!j.contains("signature")) j["signature"] = r.signature.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.signature);
    if (!j.contains("signature_text")) j["signature_text"] = bytes_to_json(r.signature_text);
    if (!j.contains("analysis")) j["analysis"] = r.analysis;
    print_json_as(j, io, o.select.json);
    return;
  }

  std::ostream& out = io.out;
  print_info_field(out, "ID", escape_for_display(r.id));
  print_info_field(out, "PID", std::to_string(r.pid) + " (" + escape_for_display(r.comm) + ")" + ns_view(r, "ns_pid", r.pid, "pid"));
  if (r.tid || r.crashing_tid_ns) {
    std::string tid = r.tid ? std::to_string(*r.tid) : "?";
    if (r.crashing_tid_ns)
      tid += " (" + std::to_string(*r.crashing_tid_ns) + " in its pid namespace)";
    print_info_field(out, "TID", tid);
  }
  print_info_field(out, "UID", id_pair(r.uid, r.euid) + ns_view(r, "ns_uid", r.uid, "user"));
  print_info_field(out, "GID", id_pair(r.gid, r.egid) + ns_view(r, "ns_gid", r.gid, "user"));
  if (const auto c = container_text(r); !c.empty()) print_info_field(out, "Container", c);
  if (r.extra.is_object() && r.extra.contains(extras::kRule) && r.extra[extras::kRule].is_string()) {
    const auto rule = r.extra[extras::kRule].get<std::string>();
    print_info_field(out, "Rule", rule.empty() ? "(defaults)" : escape_for_display(rule));
  }
  // Records written before the daemon said why have no reason.
  const auto signal_unavailable_text = [](const DumpRecord& d) {
    const auto it = d.extra.is_object() ? d.extra.find(extras::kSignalUnavailable) : d.extra.end();
    return it != d.extra.end() && it->is_string() ? escape_for_display(it->get<std::string>()) : std::string("not recorded");
  };
  print_info_field(out, "Signal",
        r.signal ? std::to_string(*r.signal) + " (" + signal_name(*r.signal) + ")"
                 : "not known: " + signal_unavailable_text(r));
  print_info_field(out, "Timestamp",
        format_timestamp(r.timestamp_us, true) + " (" + std::to_string(r.timestamp_us) +
            " us since the epoch)");
  print_info_field(out, "Command Line", r.argv.empty() ? "(empty)" : shell_join(r.argv));
  print_info_field(out, "Executable", escape_for_display(r.exe));
  print_info_field(out, "Comm", escape_for_display(r.comm));
  print_info_field(out, "Working Dir", escape_for_display(r.cwd));
  print_info_field(out, "Control Group", escape_lines(r.cgroup));
  print_info_field(out, "Hostname", escape_for_display(r.hostname));
  print_info_field(out, "Boot ID", escape_for_display(r.boot_id));
  print_info_field(out, "Coredump Mask", describe_coredump_mask(r.coredump_mask));
  std::string state = state_name(r.state);
  if (!r.reason.empty()) state += " (" + escape_for_display(r.reason) + ")";
  print_info_field(out, "State", state);
  print_info_field(out, "Core Size", size_text(r.core_size));
  print_info_field(out, "Stored Size", size_text(r.stored_size));
  print_info_field(out, "Compression", compression_text(r));
  if (const auto path = source.core_location(r)) {
    print_info_field(out, "Storage", escape_for_display(*path) + " (" + core_status_name(status) + ")");
  } else if (source.kind() == SourceKind::Service && (status == CoreStatus::Present || status == CoreStatus::Truncated)) {
    print_info_field(out, "Storage", std::string("kept by coredumpd (") + core_status_name(status) + "; dumpctl dump retrieves it)");
  } else {
    print_info_field(out, "Storage", std::string("none (") + core_status_name(status) + ")");
  }
  for (const auto& d : info_details(r.extra)) print_info_field(out, d.label, d.value);
  const bool has_core = status == CoreStatus::Present || status == CoreStatus::Truncated;
  for (const auto& d : analysis_fields(r, has_core)) print_info_field(out, d.label, d.value);
  if (o.extra && !r.extra.is_null() && !(r.extra.is_object() && r.extra.empty())) {
    // JSON escapes C0 controls inside strings; sanitize_json_text() also escapes C1 controls and
    // bidi overrides, which JSON leaves raw.
    print_info_field(
        out, "Extra",
        sanitize_json_text(r.extra.dump(2, ' ', false, nlohmann::json::error_handler_t::replace)));
  }
  if (!warning.empty()) print_info_field(out, "Warning", warning);
}

int cmd_info(const GlobalOptions& g, const InfoOptions& o, const Io& io) {
  SelectOptions sel = o.select;
  // coredumpctl 252's dump_list(): "info" without a match implies -1 (whatever -n says).
  if (sel.matches.empty()) {
    sel.newest_only = true;
    sel.max_rows.reset();
  }
  const std::unique_ptr<DumpSource> source = open_source(g, io.err);
  RecordQuery q = query_of(sel, *source);
  q.with_extra = sel.field.has_value();  // each record is read again whole (get()) to be printed
  std::unique_ptr<Pager> pager;
  if (io.out_is_tty) pager = start_pager(sel.no_pager);
  if (sel.field) {
    for_each_selected(*source, q, sel, {}, [&](DumpRecord&& r) {
      if (const auto v = record_field(r, *sel.field)) io.out << *v << '\n';
    });
    io.out.flush();
    return io.out ? 0 : 1;
  }
  // JSON's "short_id": what `list` shows, shortened against every id the reader can name.
  std::vector<std::string> ids;
  if (sel.json != JsonMode::Off) {
    if (const Index* index = source->index()) {
      for (auto& s : index->list_summaries()) ids.push_back(std::move(s.id));
    } else if (source->kind() == SourceKind::Service) {
      ids = ids_of(source->list());
    }
  }
  const ShortIds short_ids(std::move(ids));
  std::size_t shown = 0;
  for_each_selected(*source, q, sel, {}, [&](DumpRecord&& listed) {
    // The scan leaves the analysis out (a report may be 1 MiB): read the record in full.
    const std::optional<DumpRecord> full = source->get(listed.id);
    if (!full) return;  // vacuumed while it was read
    if (shown++ > 0 && sel.json == JsonMode::Off) io.out << '\n';  // coredumpctl: a blank line between
    print_info_record(*source, *full, short_ids, o, io);
  });
  io.out.flush();
  if (shown == 0) {
    if (!sel.quiet) io.err << "No coredumps found.\n";
    return 1;
  }
  return io.out ? 0 : 1;
}

}  // namespace coredumpd::cli
