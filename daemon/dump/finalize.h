// The end of a dump: its verdict applied to the record, the index and the counters.
#pragma once

#include "daemon/dump/handoff.h"

namespace coredumpd {

/// Completes `drained.job.record` from the drain's report (size, NT_PRSTATUS facts, forwarding),
/// judges the dump (judge_dump(), outcome.h), writes the verdict to the index (deleting a kept core
/// the index cannot record), counts it, logs it and calls `h.done`. Never throws.
void finalize_dump(Handoff& h, Drained& drained, const CompressReport& compress);

}  // namespace coredumpd
