// `dumpctl list`: one line per dump, or a JSON array.
#include <algorithm>
#include <map>
#include <memory>

#include "cli/core_file.h"
#include "cli/dump_source.h"
#include "cli/dumpctl.h"
#include "cli/format.h"
#include "cli/json_output.h"
#include "cli/record_container.h"
#include "cli/short_id.h"
#include "cli/table.h"
#include "store/index.h"
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

}  // namespace

int cmd_list(const GlobalOptions& g, const ListOptions& o, const Io& io) {
  const std::optional<std::int64_t> since = o.since ? std::optional(parse_time_option(*o.since, "--since")) : std::nullopt;
  const std::optional<std::int64_t> until = o.until ? std::optional(parse_time_option(*o.until, "--until")) : std::nullopt;
  const std::optional<std::string> signature = o.signature ? std::optional(signature_prefix(*o.signature)) : std::nullopt;

  const std::unique_ptr<DumpSource> source = open_source(g, io.err);
  std::vector<DumpRecord> records;
  std::optional<ShortIds> short_ids;
  std::map<std::string, nlohmann::json> pending;
  if (const Index* index = source->index()) {
    // --container: the index narrows the rows (container_key column), the match below decides.
    records = o.container ? index->list_container_candidates(*o.container) : index->list();
    pending = add_pending(g, io.err, records);
    // Ids are shortened against the whole store, since `info` resolves a prefix against all of it.
    if (!o.container) {
      short_ids.emplace(ids_of(records));
    } else {
      std::vector<std::string> all;
      for (auto& s : index->list_summaries()) all.push_back(std::move(s.id));
      for (const auto& [id, p] : pending) all.push_back(id);
      short_ids.emplace(std::move(all));
    }
  } else if (source->kind() == SourceKind::Store) {
    pending = add_pending(g, io.err, records);  // early boot: the store is not mounted yet
    short_ids.emplace(ids_of(records));
  } else {
    // The service shows this user's dumps, and `info` resolves prefixes against the same list.
    records = source->list();
    short_ids.emplace(ids_of(records));
  }
  std::erase_if(records, [&](const DumpRecord& r) {
    return (since && r.timestamp_us < *since) || (until && r.timestamp_us > *until) ||
           (o.container && !record_in_container(r, *o.container)) ||
           (signature && !r.signature.starts_with(*signature));
  });
  if (o.reverse) std::reverse(records.begin(), records.end());

  if (o.json) {
    auto arr = nlohmann::json::array();
    for (const auto& r : records) {
      auto j = list_entry_json(*source, r, short_ids->of(r.id));
      if (const auto it = pending.find(r.id); it != pending.end()) j["pending"] = it->second;
      arr.push_back(std::move(j));
    }
    print_json(arr, io);
    return 0;
  }
  if (records.empty()) {
    io.err << "No coredumps found.\n";
    return 1;
  }
  std::vector<Row> rows;
  rows.reserve(records.size());
  for (const auto& r : records) {
    rows.push_back(make_row(*source, r, *short_ids));
    if (pending.contains(r.id)) rows.back()[5] = "pending";  // COREFILE: not in the index yet
  }
  print_table(kColumns, rows, io.out);
  return io.out ? 0 : 1;
}

}  // namespace coredumpd::cli
