// The verdict on a finished dump, judged from what its two stages report. Pure: no I/O.
#pragma once

#include <cstdint>
#include <string>

#include "daemon/dump/stage_reports.h"
#include "daemon/report/outcome.h"
#include "store/dump_record.h"

namespace coredumpd {

/// How a dump ended, for its record and the counters.
struct DumpVerdict {
  DumpState state = DumpState::Complete;  ///< Complete, Truncated, Failed or Forwarded
  std::string reason;          ///< why Truncated or Failed (the record's reason); "" otherwise
  std::uint64_t stored_size = 0;  ///< bytes of the core file in the store; 0 when none is kept
  bool forward_fallback = false;  ///< a receiver had the stream but not all of it: kept here instead
  std::uint64_t expected_size = 0;  ///< a short stream: the bytes the core's headers promise; 0 otherwise

  /// The counter it goes to: Stored, Truncated, Failed or Forwarded.
  Outcome outcome() const;
};

/// Judges a dump whose stages both finished:
///   Forwarded  the receiver took the whole stream (nothing else matters: no core is kept here);
///   Failed     the record stream was malformed, or the spool or the core file failed;
///   Truncated  the stream ended short (no EOF, no END record, or fewer bytes than the core's program
///              headers promise, with the cause from the task's exit status) or max_core_bytes cut it;
///   Complete   otherwise.
DumpVerdict judge_dump(const DrainReport& drain, const CompressReport& compress);

/// Why a stream ended at its EOF short of what the core's headers promise, from the task's exit
/// status (e.g. "the crashing task was killed by SIGKILL while its core streamed").
std::string short_stream_cause(const TaskExit& exit);

/// The verdict when the index cannot record `stored` (a core that was kept): Failed, and the
/// caller deletes the core, which no vacuum would count otherwise.
DumpVerdict core_not_indexed(const DumpVerdict& stored);

}  // namespace coredumpd
