#include "daemon/dump/dump_job.h"

#include <boost/asio/post.hpp>

#include <spdlog/spdlog.h>

#include "daemon/dump/compress_stage.h"
#include "daemon/dump/drain.h"
#include "daemon/dump/handoff.h"
#include "store/record_extras.h"

namespace coredumpd {

namespace {

void hand_off(const std::shared_ptr<Handoff>& h, Drained drained);

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
    spool = std::make_unique<Spool>(ctx.store_dirfd, job.config->spool_direct_io, &ctx.spool_memory);
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
  h->deliver(std::move(drained));
  if (spool) spool->close_input();
  else boost::asio::post(h->ctx.compressors, [h] { compress_stage(h); });
}

}  // namespace

}  // namespace coredumpd
