// Deleting one dump on request (`dumpctl delete`, the query service's "delete"): its core file and
// its row, in retention's order (store/vacuum.h) and with retention's care about what it unlinks.
//
// Order: the core file is unlinked first, then the row is deleted. Between the two steps (a crash,
// a full disk refusing the SQLite write) the store holds a row whose core is missing: dumpctl
// lists it as "missing", verify reports it, and deleting it again finishes the job (a missing file
// is not an error). The other order would leave a core file without a row: no listing shows it,
// no quota counts it and retention, which works from rows, never removes it: disk lost silently.
// With no failure in between, both steps happen and nobody sees the intermediate state for long.
//
// Concurrency: the daemon serialises this with vacuum() under DumpContext::vacuum_mu; dumpctl
// (root, on the store directly) runs beside the daemon as `dumpctl vacuum` does: the row is read
// again right before the unlink, and a concurrent vacuum() reads it again before each of its own
// removals, so neither acts on a row the other already removed.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "store/dump_record.h"
#include "store/index.h"

namespace coredumpd {

/// What delete_dump() did.
enum class DeleteStatus {
  Deleted,     ///< the core (if any) and the row are gone (or would be, in a dry run)
  NotFound,    ///< no row with this id, or `may_delete` said no (indistinguishable on purpose)
  InProgress,  ///< the dump is still being received: nothing was touched
  Failed,      ///< the file could not be removed, or the row not deleted (`error` says why)
};

/// "deleted", "not_found", "in_progress", "failed".
const char* delete_status_name(DeleteStatus s);

/// The result of one delete_dump().
struct DeleteOutcome {
  DeleteStatus status = DeleteStatus::NotFound;
  DumpRecord record;             ///< the row as it was before deletion (when it existed and was visible)
  std::string path;              ///< the core file name removed, "" if the row had none (vacuumed, no core)
  std::uint64_t stored_size = 0; ///< the row's stored_size (bytes on disk of its core) when it had a core
  bool file_missing = false;     ///< the row named a core file that was already gone
  bool not_regular = false;      ///< the name was not a regular file: the entry itself was unlinked
  std::string error;             ///< for Failed: one line naming the dump and the failing step
};

/// Deletes dump `id`: reads its row, asks `may_delete(row)` (false: NotFound, nothing touched),
/// refuses an InProgress dump, unlinks its core file (unlinkat() relative to `store_dirfd`, never
/// following a symlink, and only a name the daemon gives cores, is_core_file_of(): any other
/// `path` is Failed and nothing is touched), then deletes the row. `dry_run`: the checks only.
/// Throws IndexError only when the row cannot be read; later index failures are Failed.
DeleteOutcome delete_dump(Index& index, int store_dirfd, const std::string& id,
                          const std::function<bool(const DumpRecord&)>& may_delete, bool dry_run = false);

}  // namespace coredumpd
