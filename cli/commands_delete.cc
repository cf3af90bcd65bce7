// `dumpctl delete`: a dump's record and core file, on the store directly (root) or through the
// query service (the dump's owner).
#include <unistd.h>

#include <memory>

#include "cli/dump_source.h"
#include "cli/format.h"
#include "cli/options.h"
#include "cli/query_client.h"
#include "cli/store_commands.h"
#include "cli/verb_commands.h"
#include "store/delete_dump.h"
#include "store/index.h"
#include "util/text.h"

namespace coredumpd::cli {

namespace {

/// "<id>  <time>  PID <pid>  <exe or comm>  core <size>", escaped, for one line of output.
std::string describe(const DumpRecord& r) {
  std::string s = escape_for_display(r.id) + "  " + format_timestamp(r.timestamp_us, false) + "  PID " +
                  std::to_string(r.pid) + "  " + escape_for_display(r.exe.empty() ? r.comm : r.exe);
  if (!r.path.empty()) s += "  core " + format_size(r.stored_size);
  return s;
}

int delete_in_store(const GlobalOptions& g, const std::vector<DumpRecord>& chosen, const Io& io) {
  std::unique_ptr<Index> index;
  try {
    index = std::make_unique<Index>(g.store, /*writable=*/true);
  } catch (const IndexError& e) {
    throw DumpctlError(std::string(e.what()) +
                       " (deleting on the store needs root or the store's owner; other users delete their own "
                       "dumps through coredumpd's query service)");
  }
  const UniqueFd dir = open_store_dir(g.store);
  int rc = 0;
  for (const auto& r : chosen) {
    const DeleteOutcome out = delete_dump(*index, dir.get(), r.id, {});
    switch (out.status) {
      case DeleteStatus::Deleted:
        io.out << "Deleted " << describe(out.record)
               << (out.file_missing ? " (its core file was already missing)" : "") << '\n';
        break;
      case DeleteStatus::NotFound:
        io.err << "dumpctl: coredump " << escape_for_display(r.id)
               << " is not in the index (gone already, or still in the pending journal)\n";
        rc = 1;
        break;
      case DeleteStatus::InProgress:
        io.err << "dumpctl: coredump " << escape_for_display(r.id) << " is still being received; try again later\n";
        rc = 1;
        break;
      case DeleteStatus::Failed:
        io.err << "dumpctl: " << escape_for_display(out.error) << '\n';
        rc = 1;
        break;
    }
  }
  return rc;
}

int delete_through_service(const GlobalOptions& g, const std::vector<DumpRecord>& chosen, const Io& io) {
  QueryClient client(g.query_socket);
  int rc = 0;
  for (const auto& r : chosen) {
    try {
      const bool missing = client.remove(r.id);
      io.out << "Deleted " << describe(r) << (missing ? " (its core file was already missing)" : "") << '\n';
    } catch (const QueryRefused& e) {
      io.err << "dumpctl: coredump " << escape_for_display(r.id) << ": " << e.what() << '\n';
      rc = 1;
    }
  }
  return rc;
}

}  // namespace

bool delete_selection_given(const SelectOptions& o) {
  return !o.matches.empty() || o.since || o.until || o.newest_only || o.max_rows;
}

int cmd_delete(const GlobalOptions& g, const DeleteOptions& o, const Io& io) {
  // Every verb reads "no match" as "everything" (list) or "the newest" (info, dump); neither is
  // what someone deleting means by accident, so an empty selection needs --all.
  if (!o.all && !delete_selection_given(o.select))
    throw DumpctlError("delete needs a MATCH (PID, COMM, executable path, FIELD=VALUE, dump id), -S, -U, -1 or -n; "
                       "--all deletes every dump you may delete");
  const SourceKind kind = choose_source(g, ::geteuid());
  std::vector<DumpRecord> chosen;
  {
    std::unique_ptr<DumpSource> source = open_source(g, io.err);
    RecordQuery q = query_of(o.select, *source);
    q.with_extra = false;  // the lines name id, time, pid, exe and size: --all need not hold every capture
    for_each_selected(*source, q, o.select, {}, [&](DumpRecord&& r) { chosen.push_back(std::move(r)); });
  }  // the read-only connection closes before anything is written
  if (chosen.empty()) throw DumpctlError("No match found.");
  if (o.dry_run) {
    for (const auto& r : chosen) io.out << "Would delete " << describe(r) << '\n';
    return 0;
  }
  return kind == SourceKind::Store ? delete_in_store(g, chosen, io) : delete_through_service(g, chosen, io);
}

}  // namespace coredumpd::cli
