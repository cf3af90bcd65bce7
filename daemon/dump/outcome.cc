#include "daemon/dump/outcome.h"

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

DumpVerdict core_not_indexed(const DumpVerdict& stored) {
  DumpVerdict v = stored;
  v.state = DumpState::Failed;
  v.reason = "the index could not record the stored core (store full?); core deleted";
  v.stored_size = 0;
  return v;
}

}  // namespace coredumpd
