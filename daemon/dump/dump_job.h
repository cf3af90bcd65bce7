// The second half of a KERNEL-mode dump, in two stages that run side by side:
//   drain    (dump pool):        socket -> note scanner + spool; post-dump collectors; hang up,
//                                which releases the task. Runs at the kernel's emit rate. drain.h
//   compress (compressor pool):  spool -> zstd -> core file; commit. Runs behind the drain, at
//                                lower CPU priority, and never makes the kernel wait. compress_stage.h
//   finalize (compressor pool):  the verdict (outcome.h, pure) -> index row, counters, log. finalize.h
// They share a Handoff (handoff.h): the spool while the core streams in, then, once, the job and
// the drain's DrainReport (stage_reports.h).
#pragma once

#include <sys/types.h>

#include <functional>
#include <memory>

#include "daemon/proc/collect.h"
#include "daemon/policy/config.h"
#include "daemon/policy/policy.h"
#include "daemon/dump/dump_context.h"
#include "store/dump_record.h"
#include "util/unique_fd.h"
#include "protocol/negotiate.h"

namespace coredumpd {

/// Everything a dump job needs, handed over by the session after the kernel's REQACK marker.
struct DumpJob {
  UniqueFd socket;                      ///< the connection; closing it releases a WAIT-parked task
  UniqueFd pidfd;                       ///< the crashing process, for post-dump collectors
  DumpRecord record;                    ///< metadata from the handshake; state InProgress
  HandshakeFacts facts;                 ///< for post-dump mapping (thread table)
  protocol::Negotiation negotiation;    ///< what was acked
  Policy policy;                        ///< the policy chosen in the handshake
  std::shared_ptr<const Config> config;
  std::shared_ptr<void> keepalive;      ///< held until the dump is indexed (the session, for shutdown accounting)
  /// Action::Forward with a receiver that acked (daemon/forward/forward.h): the stream is relayed to it and
  /// spooled here; delivered, the record becomes Forwarded without a core, else the core is stored
  /// here (the fallback). Empty: a plain store.
  UniqueFd forward_socket;
  /// Called once on the dump pool when the stream has ended and the spool has taken it (before
  /// compression): a storm's crashes wait for the memory a stream holds, not for the compressor.
  std::function<void()> on_drained;
  /// The store cannot take the core now (store_problem()): it goes to ctx.fallback instead
  /// (core_fallback.h), its record (extra.fallback, set by the session) to the pending journal.
  bool to_fallback = false;
};

/// Runs the drain stage (blocking; call on the dump pool) and posts the compress stage to
/// ctx.compressors. Inserts the InProgress row, spools the core (decoding COREDUMP_RECORDS if acked;
/// spooling stops at the policy's max_core_bytes, draining does not, so the kernel finishes), runs
/// the post-dump collectors while WAIT parks the task, relays the stream to job.forward_socket if
/// set (then waits, bounded by the handshake timeout, for the receiver to hang up before releasing
/// the task), and closes the connection. The compress
/// stage then commits the file and updates the row to Complete, Truncated or Failed, and calls
/// `done`. Never throws: every failure is logged, counted and recorded.
void run_dump_job(DumpContext& ctx, DumpJob job, std::function<void()> done);

/// Writes `record` to the index (insert, or update if `update`), logging instead of throwing. When
/// the index refuses it (a read-only or full store), the record goes to ctx.journal, to be moved
/// into the index later (record_keeper.h). Returns true if the record was kept either way, false
/// if it was lost (both failed; logged with the reasons). `journal_if_refused` false: no journal,
/// the caller has another way (finalize_dump() drops a core the index cannot record, and records
/// that). Defined in record_keeper.cc.
bool save_record(DumpContext& ctx, const DumpRecord& record, bool update, bool journal_if_refused = true);

}  // namespace coredumpd
