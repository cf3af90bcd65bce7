#include "daemon/dump/finalize.h"

#include <unistd.h>

#include <optional>

#include <spdlog/spdlog.h>

#include "daemon/dump/core_fill.h"
#include "daemon/dump/outcome.h"
#include "daemon/report/log_limiter.h"
#include "daemon/report/logging.h"
#include "store/core_accounting.h"
#include "store/record_extras.h"

namespace coredumpd {

namespace {

void apply_core_facts(const protocol::CoreFacts& core, const HandshakeFacts& facts, DumpRecord& r);
void apply_verdict(const DumpVerdict& v, const DrainReport& d, DumpRecord& r);
void log_dump(const DumpRecord& r, const DumpJob& job, const DrainReport& d);

}  // namespace

void finalize_dump(Handoff& h, Drained& drained, const CompressReport& compress) {
  const DrainReport& d = drained.report;
  auto& r = drained.job.record;
  auto& ctx = h.ctx;
  r.core_size = d.total;
  apply_core_facts(d.core_facts, drained.job.facts, r);
  if (d.records) r.extra[extras::kRecords] = d.records_count;

  DumpVerdict verdict = judge_dump(d, compress);
  if (d.forward.attempted) {
    r.extra[extras::kForward]["bytes_relayed"] = d.forward.bytes;
    r.extra[extras::kForward]["outcome"] = d.forward.delivered ? "delivered" : "fallback";
    if (verdict.forward_fallback) {
      r.extra[extras::kForward]["error"] = d.forward.error;
      if (log_limiter().allow("forward failed"))
        spdlog::warn("dump {}: forwarding to {} failed: {}; stored on the host", r.id,
                     escape_for_log(drained.job.policy.forward_socket), escape_for_log(d.forward.error));
    }
  }
  apply_verdict(verdict, d, r);
  r.extra[extras::kStoredUs] = us_since(h.started);
  bool saved = save_record(ctx, r, h.indexed, /*journal_if_refused=*/!holds_core(r));
  if (!saved && holds_core(r)) {
    // The core is linked but the index cannot say so (a full store: a raw core can take its last
    // page). Left, it would be an orphan no vacuum counts; deleting it frees the space the index
    // needs to record the failure.
    ::unlinkat(ctx.store_dirfd, r.path.c_str(), 0);
    verdict = core_not_indexed(verdict);
    apply_verdict(verdict, d, r);
    saved = save_record(ctx, r, h.indexed);
  }
  ctx.stats.count(verdict.outcome());
  if (verdict.forward_fallback) ctx.stats.count(Outcome::ForwardFallback);
  log_dump(r, drained.job, d);
  if (saved && holds_core(r) && ctx.on_stored) ctx.on_stored(r);  // the analysis, after the store
  else if (ctx.on_final) ctx.on_final(r);  // the journal entry of a dump with nothing to analyse
  if (h.done) h.done();
}

namespace {

// Maps the crashing thread named by NT_PRSTATUS (a TID in the task's own pid namespace) to a host TID.
std::optional<std::int64_t> host_tid(const HandshakeFacts& facts, std::int64_t ns_tid) {
  for (const auto& t : facts.threads)
    if (t.ns_tid == ns_tid) return t.host_tid;
  return std::nullopt;
}

void apply_core_facts(const protocol::CoreFacts& core, const HandshakeFacts& facts, DumpRecord& r) {
  fill_from_core(core, r);  // what the handshake missed (extra.from_core)
  if (core.signal) r.signal = *core.signal;
  if (core.crashing_tid) {
    r.crashing_tid_ns = *core.crashing_tid;
    r.tid = host_tid(facts, *core.crashing_tid);
  }
  if (core.si_code) r.extra[extras::kSiCode] = *core.si_code;
  if (core.fault_address) r.extra[extras::kFaultAddress] = *core.fault_address;
  r.extra[extras::kThreads] = core.thread_tids.size();
  if (!core.error.empty()) r.extra[extras::kCoreNoteError] = core.error;
}

// The record as the verdict says: a Failed or Forwarded dump keeps no core file.
void apply_verdict(const DumpVerdict& v, const DrainReport& d, DumpRecord& r) {
  r.state = v.state;
  r.stored_size = v.stored_size;
  switch (v.state) {
    case DumpState::Forwarded:
      r.path.clear();
      r.compression.clear();
      break;
    case DumpState::Failed:
      r.reason = v.reason;
      r.path.clear();
      break;
    case DumpState::Truncated:
      r.reason = v.reason;
      r.extra[extras::kStoredCoreBytes] = d.spooled;
      if (v.expected_size > 0) {  // a short stream (outcome.cc): kept, but never called complete
        r.extra[extras::kCoreExpectedBytes] = v.expected_size;
        r.extra[extras::kCoreReceivedBytes] = d.total;
        if (d.task_exit.status) r.extra[extras::kTaskExitStatus] = *d.task_exit.status;
      }
      break;
    default:
      break;
  }
}

void log_dump(const DumpRecord& r, const DumpJob& job, const DrainReport& d) {
  const bool fine = r.state == DumpState::Complete || r.state == DumpState::Forwarded;
  if (!log_limiter().allow(fine ? "dump stored" : "dump not stored")) return;
  const auto sig = r.signal ? signal_name(*r.signal) : std::string("?");
  if (r.state == DumpState::Forwarded)
    spdlog::info("dump {}: pid {} ({}) {} forwarded to {}, {} bytes relayed", r.id, r.pid, escape_for_log(r.comm), sig,
                 escape_for_log(job.policy.forward_socket), d.forward.bytes);
  else if (r.state == DumpState::Complete)
    spdlog::info("dump {}: pid {} ({}) {} stored, {} bytes -> {} bytes, task released after {} ms", r.id, r.pid,
                 escape_for_log(r.comm), sig, r.core_size, r.stored_size, r.extra.value(extras::kReleasedUs, 0) / 1000);
  else
    spdlog::warn("dump {}: pid {} ({}) {} {}: {}", r.id, r.pid, escape_for_log(r.comm), sig, state_name(r.state),
                 escape_for_log(r.reason));
}

}  // namespace

}  // namespace coredumpd
