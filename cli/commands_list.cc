// `dumpctl list`: one line per dump, or a JSON array.
#include <unistd.h>

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <optional>

#include "cli/core_file.h"
#include "cli/dump_source.h"
#include "cli/dumpctl.h"
#include "cli/format.h"
#include "cli/json_output.h"
#include "cli/json_stream.h"
#include "cli/options.h"
#include "cli/record_container.h"
#include "cli/short_id.h"
#include "cli/table.h"
#include "cli/terminal.h"
#include "store/record_query.h"
#include "store/index.h"
#include "cli/pending_records.h"
#include "util/text.h"

namespace coredumpd::cli {

namespace {

const std::vector<TableColumn> kColumns{
    {"TIME"}, {"ID"}, {"PID", true}, {"UID", true}, {"SIG"}, {"COREFILE"}, {"CONTAINER"}, {"EXE"}, {"SIZE", true},
};

using Row = std::vector<std::string>;
constexpr std::size_t kCorefileColumn = 5;

/// --signature: a hash or a prefix of one (hex, any case), matched against DumpRecord::signature.
std::string signature_prefix(const std::string& spec) {
  if (spec.empty() || spec.size() > 32 || !std::all_of(spec.begin(), spec.end(), is_hex_digit))
    throw DumpctlError("invalid --signature '" + escape_for_display(spec) +
                       "' (want a signature hash or a prefix of it, as `dumpctl signatures` shows)");
  return lower_hex(spec);
}

Row make_row(const DumpRecord& r, CoreStatus status, const ShortIds& short_ids) {
  const bool has_file = status == CoreStatus::Present || status == CoreStatus::Truncated;
  // The exe path, or the comm in brackets when the exe is unknown (kernel threads, early exits).
  const std::string exe = !r.exe.empty()    ? escape_for_display(r.exe)
                          : !r.comm.empty() ? "[" + escape_for_display(r.comm) + "]"
                                            : "-";
  return Row{
      format_timestamp(r.timestamp_us, false),
      escape_for_display(short_ids.of(r.id)),
      std::to_string(r.pid),
      r.uid >= 0 ? std::to_string(r.uid) : "-",
      r.signal ? signal_name(*r.signal) : "-",
      core_status_name(status),
      container_short(r),
      exe,
      has_file ? format_size(r.stored_size) : "-",
  };
}

/// The COREFILE cell's colour, as coredumpctl 252's analyze_coredump_file(): red for a core that
/// should be there and is not usable (missing from the store, failed, interrupted: its "error"),
/// grey for none (its "none", and its "missing", which systemd's retention causes: our vacuumed).
const char* corefile_colour(CoreStatus s, bool colour) {
  switch (s) {
    case CoreStatus::Missing:
    case CoreStatus::Failed:
    case CoreStatus::Interrupted: return ansi_highlight_red(colour);
    case CoreStatus::None:
    case CoreStatus::Vacuumed: return ansi_grey(colour);
    case CoreStatus::Present:
    case CoreStatus::Truncated:
    case CoreStatus::InProgress: break;
  }
  return "";
}

/// Every id the reader can name, sorted: ids are shortened against all of them, since `info`
/// resolves a prefix against the whole store (the service: the user's own dumps), whatever `list`
/// filtered. Only the ids: a listing holds no record it is not printing.
std::vector<std::string> all_ids(DumpSource& source, const std::map<std::string, nlohmann::json>& pending) {
  std::vector<std::string> ids;
  if (const Index* index = source.index()) {
    ids = index->list_ids();
  } else if (source.kind() == SourceKind::Service) {
    RecordQuery every;
    every.with_extra = false;
    source.scan(every, [&](DumpRecord&& r) {
      ids.push_back(std::move(r.id));
      return true;
    });
  }
  for (const auto& [id, p] : pending) ids.push_back(id);
  std::sort(ids.begin(), ids.end());
  return ids;
}

/// The pending journal's records that the index does not hold yet, by id (their "pending" facts);
/// `sorted_ids` are the index's.
std::map<std::string, nlohmann::json> pending_by_id(const GlobalOptions& g, std::ostream& err,
                                                    const std::vector<std::string>& sorted_ids) {
  std::vector<DumpRecord> records;
  std::map<std::string, nlohmann::json> pending = add_pending(g, err, records);
  std::erase_if(pending, [&](const auto& p) { return std::binary_search(sorted_ids.begin(), sorted_ids.end(), p.first); });
  return pending;
}

}  // namespace

int cmd_list(const GlobalOptions& g, const ListOptions& o, const Io& io) {
  const SelectOptions& sel = o.select;
  const std::optional<std::string> signature = o.signature ? std::optional(signature_prefix(*o.signature)) : std::nullopt;
  const bool colour = io.out_is_tty && colour_wanted(STDOUT_FILENO);  // before a pager takes standard output

  const std::unique_ptr<DumpSource> source = open_source(g, io.err);
  RecordQuery q = query_of(sel, *source);
  if (signature) q.matches.push_back({"COREDUMPD_SIGNATURE", *signature});
  // The table and the JSON listing show columns only (the /proc capture is `info`'s); -F may ask
  // for a field derived from `extra`.
  q.with_extra = sel.field.has_value();
  std::function<bool(const DumpRecord&)> keep;
  if (o.container) keep = [&](const DumpRecord& r) { return record_in_container(r, *o.container); };

  std::unique_ptr<Pager> pager;
  if (sel.field) {  // -F: values only, no legend, no "No coredumps found." (coredumpctl's print_field())
    if (io.out_is_tty) pager = start_pager(sel.no_pager);
    for_each_selected(*source, q, sel, keep, [&](DumpRecord&& r) {
      if (const auto v = record_field(r, *sel.field)) io.out << *v << '\n';
    });
    io.out.flush();
    return io.out ? 0 : 1;
  }

  // Records stream from the source; what stays is the set of ids and, for the table, its cells.
  std::map<std::string, nlohmann::json> pending;
  std::vector<std::string> ids = all_ids(*source, pending);
  if (source->kind() == SourceKind::Store) {
    pending = pending_by_id(g, io.err, ids);
    for (const auto& [id, p] : pending) ids.push_back(id);
  }
  const ShortIds short_ids(std::move(ids));

  if (sel.json != JsonMode::Off) {
    std::optional<JsonArrayWriter> arr;  // coredumpctl prints nothing, not [], when nothing matches
    const std::size_t n = for_each_selected(*source, q, sel, keep, [&](DumpRecord&& r) {
      if (!arr) {
        if (io.out_is_tty) pager = start_pager(sel.no_pager);
        arr.emplace(io, sel.json);
      }
      auto j = list_entry_json(*source, r, short_ids.of(r.id));
      if (const auto it = pending.find(r.id); it != pending.end()) j["pending"] = it->second;
      arr->add(j);
    });
    if (n == 0) {
      if (!sel.quiet) io.err << "No coredumps found.\n";
      return 1;
    }
    arr->finish();
    io.out.flush();
    return io.out ? 0 : 1;
  }
  std::vector<Row> rows;
  std::vector<const char*> colours;
  for_each_selected(*source, q, sel, keep, [&](DumpRecord&& r) {
    const CoreStatus status = source->core_status(r);
    rows.push_back(make_row(r, status, short_ids));
    colours.push_back(corefile_colour(status, colour));
    if (pending.contains(r.id)) {
      rows.back()[kCorefileColumn] = "pending";  // COREFILE: not in the index yet
      colours.back() = "";
    }
  });
  if (rows.empty()) {
    if (!sel.quiet) io.err << "No coredumps found.\n";
    return 1;
  }
  if (io.out_is_tty) pager = start_pager(sel.no_pager);
  print_table(kColumns, rows, io.out, TableStyle{sel.legend, [&](std::size_t row, std::size_t column) -> CellColour {
                if (column != kCorefileColumn || colours[row][0] == '\0') return {};
                return {colours[row], ansi_normal(colour)};
              }});
  io.out.flush();
  return io.out ? 0 : 1;
}

}  // namespace coredumpd::cli
