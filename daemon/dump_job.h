// The second half of a KERNEL-mode dump, on the dump pool: drain the core stream (plain or
// records), compress it into the store, run post-dump collectors, release the task, index the result.
#pragma once

#include <sys/types.h>

#include <memory>

#include "daemon/collect.h"
#include "daemon/policy.h"
#include "daemon/server_context.h"
#include "daemon/store/dump_record.h"
#include "daemon/unique_fd.h"
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
};

/// Runs a dump job to the end (blocking; call on the dump pool). Inserts the InProgress row, streams
/// the core through zstd into a temporary file (decoding COREDUMP_RECORDS if acked), stops storing
/// at the policy's max_core_bytes but keeps draining so the kernel finishes, runs the post-dump
/// collectors while WAIT parks the task, closes the connection, then commits the file and updates
/// the row to Complete, Truncated or Failed. Never throws: every failure is logged, counted and recorded.
void run_dump_job(ServerContext& ctx, DumpJob job);

/// Writes `record` to the index (insert, or update if `update`), logging instead of throwing.
/// Returns false on failure.
bool save_record(ServerContext& ctx, const DumpRecord& record, bool update);

}  // namespace coredumpd
