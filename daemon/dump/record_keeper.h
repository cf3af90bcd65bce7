// Every crash keeps a record: into the index when it can take it, else into the pending journal
// (store/pending_journal.h), moved into the index once the store is usable again.
#pragma once

#include <string>

#include "daemon/dump/dump_context.h"

namespace coredumpd {

/// The store's state in one sentence for the log: "writable, <free> free of <size>" or what makes
/// it unusable (store_health.h), and, when the index is not writable, `index_note` (why).
std::string describe_store_state(const DumpContext& ctx, const std::string& index_note);

/// Makes the index writable again where it was not and the store is usable now
/// (Index::reopen_writable()), then moves the pending journal's records into it, logging what it
/// did. `at_start`: no dump is running, so a journaled InProgress record is one the daemon stopped
/// during, and is moved as Interrupted. Blocking (SQLite, fsync): call on the dump pool or at
/// start. Never throws.
void recover_pending_records(DumpContext& ctx, bool at_start);

/// True if `r` is a dump whose core was sent to the fallback (extra.fallback, not yet moved_us):
/// save_record() puts such a record into the pending journal, never the index, so that it reaches
/// the index only with its core (fallback_mover.h).
bool bound_for_fallback(const DumpRecord& r);

}  // namespace coredumpd
