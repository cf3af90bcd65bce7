// The compress stage of a dump (dump_job.h): the spool into the store, behind the drain.
#pragma once

#include <memory>

#include "daemon/dump/handoff.h"

namespace coredumpd {

/// Name (comm, at most 15 bytes) of a thread while it compresses a core, and of the zstd workers it
/// starts: SCHED_IDLE while the core streams in, nice 10 once it has ended (README.md).
inline constexpr const char* kCompressorThreadName = "cd-compress";

/// Runs on the compressor pool. Follows `h->spool` as the drain fills it, compressing it into the
/// core file (or, for an incompressible plain core, keeping the spool itself as the core), takes
/// the drain's results once its input is closed, commits the file unless the dump failed or was
/// forwarded, and hands both reports to finalize_dump() (finalize.h). Applies the retention limits
/// before and after. Never throws on I/O errors (they go to the CompressReport).
void compress_stage(const std::shared_ptr<Handoff>& h);

}  // namespace coredumpd
