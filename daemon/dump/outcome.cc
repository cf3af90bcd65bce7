#include "daemon/dump/outcome.h"

#include <sys/wait.h>

#include <csignal>

namespace coredumpd {

Outcome DumpVerdict::outcome() const {
  switch (state) {
    case DumpState::Complete: return Outcome::Stored;
    case DumpState::Truncated: return Outcome::Truncated;
    case DumpState::Forwarded: return Outcome::Forwarded;
    default: return Outcome::Failed;
  }
}

DumpVerdict judge_dump(const DrainReport& d, const CompressReport& c) {
  DumpVerdict v;
  v.forward_fallback = d.forward.attempted && !d.forward.delivered;
  if (d.forward.delivered) {
    v.state = DumpState::Forwarded;
    return v;
  }
  const std::string& store_error = !d.spool_error.empty() ? d.spool_error : c.error;
  if (d.malformed || !store_error.empty()) {
    v.state = DumpState::Failed;
    v.reason = d.malformed ? "malformed record stream: " + d.record_error : store_error;
    return v;
  }
  std::string truncation;
  if (!d.stream.eof) truncation = d.stream.error;
  else if (d.records && !d.records_ended)
    truncation = "record stream ended without an END record (task killed mid-dump?)";
  // A plain stream has no trailer: only the headers tell that its EOF came early (docs/PROTOCOL.md §5.1).
  if (d.stream.eof && d.core_facts.promised_size > d.total) {
    v.expected_size = d.core_facts.promised_size;
    if (truncation.empty())
      truncation = "core stream ended after " + std::to_string(d.total) + " of the " +
                   std::to_string(d.core_facts.promised_size) + " bytes its program headers promise: " +
                   short_stream_cause(d.task_exit);
  }
  const bool cut = d.spooled < d.total;
  v.stored_size = c.stored;
  if (!truncation.empty() || cut) {
    v.state = DumpState::Truncated;
    v.reason = !truncation.empty() ? truncation
               : !d.cut_reason.empty() ? d.cut_reason
                                   : "core of " + std::to_string(d.total) + " bytes cut at max_core_bytes " +
                                         std::to_string(d.spooled);
  }
  return v;
}

std::string short_stream_cause(const TaskExit& exit) {
  if (!exit.status) return "cause unknown (" + (exit.error.empty() ? std::string("no exit status") : exit.error) + ")";
  const int status = *exit.status;
  if (WIFEXITED(status)) return "the task exited with status " + std::to_string(WEXITSTATUS(status)) + " while its core streamed";
  const int sig = WTERMSIG(status);
  // A signal sent during the dump replaces the crash signal in the exit status (kernel/signal.c
  // complete_signal), and the kernel then does not count the core as dumped.
  if (sig == SIGKILL) return "the crashing task was killed by SIGKILL while its core streamed";
  if (WCOREDUMP(status))
    return "the kernel stopped writing early yet reports the core dumped (task ended by " + signal_name(sig) + ")";
  return "the kernel gave up the dump (task ended by " + signal_name(sig) + ", no core dumped)";
}

DumpVerdict core_not_indexed(const DumpVerdict& stored) {
  DumpVerdict v = stored;
  v.state = DumpState::Failed;
  v.reason = "the index could not record the stored core (store full?); core deleted";
  v.stored_size = 0;
  return v;
}

}  // namespace coredumpd
