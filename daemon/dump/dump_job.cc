#include "daemon/dump/dump_job.h"

#include <boost/asio/post.hpp>

#include <utility>

#include <spdlog/spdlog.h>

#include "daemon/dump/compress_stage.h"
#include "daemon/dump/drain.h"
#include "daemon/dump/handoff.h"
#include "daemon/dump/outcome.h"
#include "daemon/dump/spool_recovery.h"
#include "daemon/report/log_limiter.h"
#include "store/record_extras.h"

namespace coredumpd {

namespace {

void hand_off(const std::shared_ptr<Handoff>& h, Drained drained);
void keep_for_restart(Handoff& h, const Drained& drained);

}  // namespace

// The two stages meet in a Handoff (handoff.h): the drain (drain.h) fills the spool the
// compressor (compress_stage.h) follows, then hands over the job and its DrainReport; the
// compressor ends the dump with finalize_dump() (finalize.h), whose verdict is judge_dump()
// (outcome.h).
void run_dump_job(DumpContext& ctx, DumpJob job, std::function<void()> done) {
  const auto started = DumpClock::now();
  auto& r = job.record;
  r.state = DumpState::InProgress;
  r.compression = kCompressionZstd;
  r.path = r.id + std::string(kZstdExtension);
  const bool indexed = save_record(ctx, r, false);

  std::unique_ptr<Spool> spool;
  std::string spool_error;
  try {
    const int dirfd = job.to_fallback && ctx.fallback ? ctx.fallback->dirfd() : ctx.store_dirfd;
    spool = std::make_unique<Spool>(dirfd, job.config->spool_direct_io, &ctx.spool_memory);
  } catch (const std::exception& e) {  // StoreError; bad_alloc or system_error (its writer thread)
    spool_error = std::string("spool: ") + e.what();
  }
  auto h = std::make_shared<Handoff>(ctx, job, started, indexed, std::move(spool), std::move(done));
  // The compressor starts now and follows the spool as it fills (without a spool it only
  // finalizes, after the drain).
  if (h->spool) boost::asio::post(ctx.compressors, [h] { compress_stage(h); });
  hand_off(h, drain_core_stream(*h, std::move(job), std::move(spool_error)));
}

namespace {

// The drain's last acts: its results to the compressor, then the end of the spool's input, after
// which the compressor owns (and destroys) the spool. Without a spool the compressor starts only now.
void hand_off(const std::shared_ptr<Handoff>& h, Drained drained) {
  Spool* const spool = h->spool.get();
  if (spool) drained.job.record.extra[extras::kSpoolPageCacheBlocks] = spool->overflowed_blocks();
  if (spool) keep_for_restart(*h, drained);
  // Before deliver(): from there the compressor may finish the dump and give the whole share back.
  if (drained.job.on_drained) std::exchange(drained.job.on_drained, nullptr)();
  h->deliver(std::move(drained));
  if (spool) spool->close_input();
  else boost::asio::post(h->ctx.compressors, [h] { compress_stage(h); });
}

// A core whose stream has ended is kept on disk under a name for a restart to find, in case the
// daemon stops before it is stored (spool_recovery.h). After the release of the task: the fsync
// here never makes it wait. Not for what would not be stored: a failed or forwarded dump; nor for
// a core going to the fallback (on /run, which a reboot empties; a restart finds it interrupted).
void keep_for_restart(Handoff& h, const Drained& drained) {
  const DrainReport& d = drained.report;
  if (!d.spool_error.empty() || d.malformed || d.forward.delivered || h.to_fallback) return;
  const DumpVerdict v = judge_dump(d, CompressReport{});
  if (v.state != DumpState::Complete && v.state != DumpState::Truncated) return;
  SpoolManifest m;
  m.id = h.id;
  m.received = d.total;
  m.spooled = d.spooled;
  m.state = v.state;
  m.reason = v.reason;
  // As the compressor will decide (compress_stage.cc, keep_spool_uncompressed): the samples are final.
  m.uncompressed = h.may_store_uncompressed && h.sampler.verdict() == CompressibilitySampler::Verdict::Incompressible;
  m.level = h.compression_level;
  m.signal = d.core_facts.signal;
  m.crashing_tid_ns = d.core_facts.crashing_tid;
  m.extra = drained.job.record.extra;
  h.spool_named = true;
  const std::string error = keep_spool_for_recovery(*h.spool, h.ctx.store_dirfd, m);
  h.kept_for_recovery = error.empty();
  if (!error.empty() && log_limiter().allow("spool not kept"))
    spdlog::warn("dump {}: spool not kept for a restart (a stop before it is stored would lose it): {}", h.id, error);
}

}  // namespace

}  // namespace coredumpd
