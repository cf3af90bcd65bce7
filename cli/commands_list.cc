// `dumpctl list`: one line per dump, or a JSON array.
#include <algorithm>
#include <functional>
#include <map>
#include <memory>

#include "cli/core_file.h"
#include "cli/dump_source.h"
#include "cli/dumpctl.h"
#include "cli/format.h"
#include "cli/json_output.h"
#include "cli/json_stream.h"
#include "cli/record_container.h"
#include "cli/short_id.h"
#include "cli/table.h"
#include "store/index.h"
#include "store/record_query.h"
#include "cli/pending_records.h"
#include "util/text.h"

namespace coredumpd::cli {

namespace {

const std::vector<TableColumn> kColumns{
    {"TIME"}, {"ID"}, {"PID", true}, {"UID", true}, {"SIG"}, {"COREFILE"}, {"CONTAINER"}, {"EXE"}, {"SIZE", true},
};

using Row = std::vector<std::string>;

/// --signature: a hash or a prefix of one (hex, any case), matched against DumpRecord::signature.
std::string signature_prefix(const std::string& spec) {
  if (spec.empty() || spec.size() > 32 || !std::all_of(spec.begin(), spec.end(), is_hex_digit))
    throw DumpctlError("invalid --signature '" + escape_for_display(spec) +
                       "' (want a signature hash or a prefix of it, as `dumpctl signatures` shows)");
  return lower_hex(spec);
}

Row make_row(DumpSource& source, const DumpRecord& r, const ShortIds& short_ids) {
  const CoreStatus status = source.core_status(r);
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
  RecordQuery q;
  q.since_us = o.since ? std::optional(parse_time_option(*o.since, "--since")) : std::nullopt;
  q.until_us = o.until ? std::optional(parse_time_option(*o.until, "--until")) : std::nullopt;
  if (o.signature) q.matches.push_back({"COREDUMPD_SIGNATURE", signature_prefix(*o.signature)});
  q.newest_first = o.reverse;
  q.with_extra = o.json;  // the table reads only columns and the container (record_query.h)

  const std::unique_ptr<DumpSource> source = open_source(g, io.err);
  // Records stream from the source; what stays is the set of ids and, for the table, its cells.
  std::map<std::string, nlohmann::json> pending;
  std::vector<std::string> ids = all_ids(*source, pending);
  if (source->kind() == SourceKind::Store) {
    pending = pending_by_id(g, io.err, ids);
    for (const auto& [id, p] : pending) ids.push_back(id);
  }
  const ShortIds short_ids(std::move(ids));
  const auto each_selected = [&](const std::function<void(const DumpRecord&)>& f) {
    source->scan(q, [&](DumpRecord&& r) {
      if (!o.container || record_in_container(r, *o.container)) f(r);
      return true;
    });
  };

  if (o.json) {
    JsonArrayWriter arr(io);
    each_selected([&](const DumpRecord& r) {
      auto j = to_json(r);
      j["container"] = record_container(r);
      j["short_id"] = short_ids.of(r.id);
      if (const auto it = pending.find(r.id); it != pending.end()) j["pending"] = it->second;
      arr.add(j);
    });
    arr.finish();
    return 0;
  }
  std::vector<Row> rows;
  each_selected([&](const DumpRecord& r) {
    rows.push_back(make_row(*source, r, short_ids));
    if (pending.contains(r.id)) rows.back()[5] = "pending";  // COREFILE: not in the index yet
  });
  if (rows.empty()) {
    io.err << "No coredumps found.\n";
    return 1;
  }
  print_table(kColumns, rows, io.out);
  return io.out ? 0 : 1;
}

}  // namespace coredumpd::cli
