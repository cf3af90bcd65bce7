// A dump between its two stages (dump_job.h): what run_dump_job fixes before they start, the
// spool they share while the core streams in, and the one hand-over of the drain's results.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <string>

#include "daemon/dump/compressibility.h"
#include "daemon/dump/dump_context.h"
#include "daemon/dump/dump_job.h"
#include "daemon/dump/spool.h"
#include "daemon/dump/stage_reports.h"
#include "util/time.h"

namespace coredumpd {

using DumpClock = std::chrono::steady_clock;

/// What the drain hands over at its end: the job (its socket closed, the record with the drain's
/// timings and post-dump facts) and what it found in the stream.
struct Drained {
  DumpJob job;
  DrainReport report;
};

/// Shared by the drain and the compress stage of one dump. The fields are set by run_dump_job
/// before either stage starts and only read afterwards, except the spool and the sampler, which
/// are made for one writer (the drain) and one reader (the compressor). Everything else the drain
/// produces crosses once, through deliver() and take().
struct Handoff {
  Handoff(DumpContext& c, const DumpJob& job, DumpClock::time_point started_, bool indexed_,
          std::unique_ptr<Spool> spool_, std::function<void()> done_)
      : ctx(c), config(job.config), id(job.record.id), core_path(job.record.path),
        compression_level(job.policy.compression_level), forwarding(static_cast<bool>(job.forward_socket)),
        may_store_uncompressed(job.negotiation.records != protocol::FlagOutcome::Granted && !forwarding),
        to_fallback(job.to_fallback && c.fallback), dirfd(to_fallback ? c.fallback->dirfd() : c.store_dirfd),
        started(started_), indexed(indexed_), spool(std::move(spool_)), done(std::move(done_)) {}

  DumpContext& ctx;
  const std::shared_ptr<const Config> config;
  const std::string id;         ///< the record's id
  const std::string core_path;  ///< where a compressed core goes, in the store
  const int compression_level;  ///< the policy's zstd level
  const bool forwarding;        ///< a receiver gets the stream; its fate decides whether to store
  const bool may_store_uncompressed;  ///< a plain core stream, not forwarded: the spool can be the core
  const bool to_fallback;       ///< the core goes to ctx.fallback, not the store (core_fallback.h)
  const int dirfd;              ///< where the spool and the core file go: the store or the fallback
  const DumpClock::time_point started;
  const bool indexed;           ///< the InProgress row was inserted
  std::unique_ptr<Spool> spool;  ///< null if it could not be created; the compressor destroys it
  CompressibilitySampler sampler;  ///< fed by the drain, read by the compressor (thread-safe)
  const std::function<void()> done;  ///< called once the dump is indexed
  /// The drain kept the spool for a restart (spool_recovery.h): set before the spool's input is
  /// closed, read by the compressor after; it then never punches the spool. `spool_named`: the
  /// drain tried, and a name may exist, which the compressor removes at the end.
  bool kept_for_recovery = false;
  bool spool_named = false;

  /// The drain's results; call once, before closing the spool's input.
  void deliver(Drained drained) { promise_.set_value(std::move(drained)); }
  /// Waits for deliver() (at once when the spool's input is closed, which comes after it). Call once.
  Drained take() { return future_.get(); }

 private:
  std::promise<Drained> promise_;
  std::future<Drained> future_ = promise_.get_future();
};

}  // namespace coredumpd
