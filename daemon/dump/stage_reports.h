// What the two stages of a dump report at their ends: the drain (DrainReport, handed to the
// compress stage with the job) and the compressor (CompressReport). Plain values: the dump's
// verdict (outcome.h) is judged from them alone.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "protocol/core_notes.h"

namespace coredumpd {

/// How the drain's read loop ended.
struct StreamEnd {
  bool eof = false;   ///< the kernel half-closed: the whole stream came
  std::string error;  ///< why draining stopped before EOF ("" for a malformed record stream)
};

/// A forward's fate, for a job with a receiver (DumpJob::forward_socket).
struct ForwardReport {
  bool attempted = false;   ///< a receiver was handed the stream
  bool delivered = false;   ///< ... and took all of it: no core is kept here
  std::string error;        ///< why the forward fell back to storing here
  std::uint64_t bytes = 0;  ///< stream bytes the receiver took
};

/// How the crashing task ended, asked of its pidfd (PIDFD_INFO_EXIT) only when its stream came
/// short of what the core's headers promise: it names the cause (docs/PROTOCOL.md §3.3).
struct TaskExit {
  std::optional<int> status;  ///< wait status (WIFSIGNALED, WTERMSIG, WCOREDUMP apply); empty if unknown
  std::string error;          ///< why it is unknown ("" if known or never asked)
};

/// What the drain found in the kernel's stream. Filled by the drain alone; the compress stage
/// sees it only after the drain is over (Handoff::take(), handoff.h).
struct DrainReport {
  std::uint64_t total = 0;         ///< core bytes the kernel sent
  std::uint64_t spooled = 0;       ///< of them, put in the spool (max_core_bytes cuts the rest)
  std::string spool_error;         ///< the spool could not be created or written: no core to store
  std::string cut_reason;          ///< why spooling stopped short other than max_core_bytes (keep_free)
  std::uint64_t fallback_reserved = 0;  ///< bytes reserved in the fallback for the spool (core_fallback.h)
  StreamEnd stream;
  bool records = false;            ///< a COREDUMP_RECORDS stream
  bool malformed = false;          ///< ... that broke the protocol (record_error says how)
  std::string record_error;
  bool records_ended = false;      ///< ... that ended with its END record
  std::uint64_t records_count = 0;
  protocol::CoreFacts core_facts;  ///< what the note scanner found (NT_PRSTATUS, NT_SIGINFO, ...)
  ForwardReport forward;
  TaskExit task_exit;              ///< asked only for a short stream (core_facts.promised_size > total)
};

/// What the compress stage made of the spool.
struct CompressReport {
  std::uint64_t stored = 0;  ///< bytes of the core file linked into the store (0: none)
  std::string error;         ///< why the core could not be written to the store ("" if it was, or need not be)
};

}  // namespace coredumpd
