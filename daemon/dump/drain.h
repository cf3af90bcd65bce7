// The drain stage of a dump (dump_job.h): the kernel's stream into the spool, at its emit rate.
#pragma once

#include <string>

#include "daemon/dump/dump_job.h"
#include "daemon/dump/handoff.h"

namespace coredumpd {

/// Reads the core stream of `job` to its end: scans the notes, fills `h.spool` up to the policy's
/// max_core_bytes (draining goes on past it, so the kernel finishes), decodes COREDUMP_RECORDS if
/// acked, samples compressibility into `h.sampler`, and relays the bytes to job.forward_socket if
/// set. Then runs the post-dump collectors while WAIT parks the task, waits (bounded by the
/// handshake timeout) for a receiver to take the whole stream, hangs up (which releases the task)
/// and flushes the spool. `spool_error`: why the spool could not be created, if it was not.
/// Returns the job and the report for Handoff::deliver(); never throws on I/O errors (they are
/// in the report).
Drained drain_core_stream(Handoff& h, DumpJob job, std::string spool_error);

}  // namespace coredumpd
