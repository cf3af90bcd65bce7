#include "daemon/dump/compress_stage.h"

#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <optional>
#include <thread>

#include <spdlog/spdlog.h>

#include "daemon/dump/core_writer.h"
#include "daemon/dump/finalize.h"
#include "daemon/dump/spool_recovery.h"
#include "daemon/report/log_limiter.h"
#include "store/core_accounting.h"
#include "store/vacuum.h"
#include "store/record_extras.h"
#include "util/time.h"

namespace coredumpd {

namespace {

// Bytes the compressor takes between two looks at whether the stream has ended.
constexpr std::uint64_t kStreamingStep = 8 << 20;
// Bytes the compressor lets stream in between two looks at the compressibility verdict.
constexpr std::uint64_t kVerdictStep = 8 << 20;

void enter_idle_class();
void compress_after_stream();
void apply_retention(DumpContext& ctx, const Config& config, const std::string& keep_id);
bool incompressible(const CoreWriter& w);
bool keep_spool_uncompressed(Handoff& h);
[[noreturn]] void hold_forever(const std::string& id);

}  // namespace

// A forwarded dump is compressed only if the receiver did not take it all (it is then stored here):
// until its fate is known at the end of the stream, it waits in the spool. Without
// compress_while_streaming every dump waits there too, but with its file already made.
void compress_stage(const std::shared_ptr<Handoff>& hp) {
  Handoff& h = *hp;
  // Named so that its class and nice can be checked from /proc/<pid>/task/*/comm; the zstd workers
  // it starts inherit the name (tests/e2e/promises_e2e_test.cc).
  ::pthread_setname_np(::pthread_self(), kCompressorThreadName);
  std::optional<Drained> drained;
  if (h.forwarding) {
    if (h.spool) h.spool->wait_beyond(UINT64_MAX);  // returns once the input is closed
    drained = h.take();
  }
  const bool forwarded = drained && drained->report.forward.delivered;
  std::string error = h.spool ? "" : "no spool";
  std::optional<CoreWriter> writer;
  if (error.empty() && !forwarded) {
    if (!h.to_fallback) apply_retention(h.ctx, *h.config, h.id);  // make room before the file grows
    try {
      writer.emplace(h.dirfd, h.core_path, CompressionOptions{h.compression_level, 0, h.config->compression.core_tables});
    } catch (const StoreError& e) {
      error = e.what();
    }
  }
  // Only now idle-class: vacuuming above holds the index's write lock, which sessions wait for.
  enter_idle_class();
  if (h.spool && !h.config->compress_while_streaming) h.spool->wait_beyond(UINT64_MAX);  // config.h
  const bool uncompressed = error.empty() && writer && h.may_store_uncompressed && keep_spool_uncompressed(h);
  std::uint64_t pos = 0;
  bool streamed = false;
  std::uint64_t compressed_while_streaming = 0;
  while (h.spool && !uncompressed) {
    const std::uint64_t end = h.spool->wait_beyond(pos);
    if (end == pos) break;  // input closed, everything read
    if (!streamed && h.spool->closed()) {  // the rest is here: full speed, all workers
      streamed = true;
      compressed_while_streaming = pos;
      compress_after_stream();
      try {
        if (writer && error.empty()) writer->start_new_frame(incompressible(*writer) ? 0 : h.config->compression.threads);
      } catch (const StoreError& e) {
        error = e.what();
      }
    }
    if (!error.empty() || !writer) {  // keep following so we finalize only after the drain
      pos = end;
      continue;
    }
    try {
      // While streaming, look at closed() again every kStreamingStep bytes.
      const std::uint64_t upto = streamed ? end : std::min(end, pos + kStreamingStep);
      while (pos < upto) {
        if (const auto hole = h.spool->hole_at(pos, upto - pos)) {
          writer->write_zeros(hole);
          pos += hole;
          continue;
        }
        const auto bytes = h.spool->view(pos, static_cast<std::size_t>(std::min<std::uint64_t>(upto - pos, Spool::kBlockBytes)));
        writer->write(bytes);
        pos += bytes.size();
      }
      // A spool kept for a restart (spool_recovery.h) keeps all of the core until it is stored; it
      // is kept only once the stream has ended, so nothing is punched before.
      if (streamed && !h.kept_for_recovery) h.spool->release(pos);
    } catch (const StoreError& e) {
      error = e.what();
    }
  }
  if (!streamed) {  // all compressed as it came (or no spool): never idle-class for the index writes below
    compressed_while_streaming = pos;
    compress_after_stream();
  }
  // The input is closed (the loop ended): the drain has handed over.
  if (!drained) drained = h.take();
  if (hold_before_store()) hold_forever(h.id);
  const DrainReport& d = drained->report;
  auto& r = drained->job.record;
  r.extra[extras::kCompressedWhileStreaming] = compressed_while_streaming;
  r.extra[extras::kCompressibilitySamples] = h.sampler.samples();
  // Keep the file only if both stages succeeded; a discarded temporary file frees its space at once
  // (on a full disk the index update needs it).
  CompressReport c;
  const bool keep = error.empty() && d.spool_error.empty() && !d.malformed && writer && !forwarded;
  if (keep && uncompressed) {
    writer.reset();
    r.compression = kCompressionNone;
    r.path = r.id + std::string(kRawExtension);
    try {
      c.stored = h.spool->persist(h.dirfd, r.path);
    } catch (const StoreError& e) {
      error = e.what();
    }
  } else if (keep) {
    try {
      c.stored = writer->commit();
    } catch (const StoreError& e) {
      error = e.what();
    }
  }
  // When the core file was complete: a release must come before it (tests/e2e check this).
  if (keep && error.empty()) r.extra[extras::kCompressedUs] = us_since(h.started);
  writer.reset();
  h.spool.reset();
  c.error = std::move(error);
  // The core is committed (or will not be): the kept spool goes now, before the index update,
  // so that no reader of the index finds it beside a final record. A stop between the two leaves
  // the committed core unindexed, as it did before spools were kept (one index update).
  if (h.spool_named) forget_kept_spool(h.ctx.store_dirfd, h.id);
  finalize_dump(h, *drained, c);
  if (h.to_fallback) {  // the spool's reservation becomes the stored core's size, or goes
    h.ctx.fallback->release(d.fallback_reserved);
    if (holds_core(r)) h.ctx.fallback->hold(r.stored_size);
  } else if (!forwarded) {
    apply_retention(h.ctx, *h.config, h.id);  // quotas, now counting this dump
  }
  // The last dump of a burst gives the arenas' free pages back (main.cc). Not after each one: the
  // dumps still running would fault the trimmed pages in again.
  if (h.ctx.dumps_in_flight.load() == 0) ::malloc_trim(0);
}

namespace {

// While a core streams in, its compressor runs at SCHED_IDLE, on one thread: it takes only CPU
// nothing else wants, so the kernel's emit and our drain never wait for it (on a 2-CPU machine it
// barely runs; with idle cores it keeps up). Once the stream has ended it runs at nice 10 with
// its zstd workers, which inherit that when they are created. Leaving SCHED_IDLE needs
// CAP_SYS_NICE (the unit grants it); without it the compressor stays idle-class, which on an
// otherwise idle machine is as fast.
void enter_idle_class() {
  sched_param idle{};
  ::sched_setscheduler(0, SCHED_IDLE, &idle);  // 0: the calling thread
}

void compress_after_stream() {
  sched_param normal{};
  if (::sched_setscheduler(0, SCHED_OTHER, &normal) == 0)
    ::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), 10);
  else if (log_limiter().allow("sched idle"))
    spdlog::debug("compressor stays SCHED_IDLE after the stream: {}", std::strerror(errno));
}

// Applies the retention limits, never touching `keep_id`; logs what went. Off the kernel's path.
void apply_retention(DumpContext& ctx, const Config& config, const std::string& keep_id) {
  const RetentionLimits limits = effective_retention(config);
  if (!limits.any()) return;
  try {
    std::lock_guard lock(ctx.vacuum_mu);
    const auto result = vacuum(ctx.index, ctx.store_dirfd, limits, keep_id, std::chrono::system_clock::now());
    if (!result.removed.empty() && log_limiter().allow("vacuum"))
      spdlog::info("vacuum: removed {} core(s), {} bytes", result.removed.size(), result.bytes_removed);
    for (const auto& e : result.errors) spdlog::warn("vacuum: {}", e);
  } catch (const std::exception& e) {
    spdlog::error("vacuum failed: {}", e.what());
  }
}

// What the compressor saw while the core streamed in (at least 4 MiB) shrank by less than 5 %: zstd
// then only copies, which one thread does faster than a multithreaded context, whose workers add
// copies and hand-offs (bench/README.md, "Incompressible cores: samples, and one thread for the copy").
bool incompressible(const CoreWriter& w) {
  return w.bytes_in() >= (4 << 20) && w.bytes_out() * 100 >= w.bytes_in() * 95;
}

// Waits while the drain's samples cannot tell or say the core is incompressible. Returns true if,
// when the stream has ended, it is still judged incompressible: the spool is then the stored core.
// Returns false as soon as the samples say it compresses (nothing of it was compressed yet: the
// caller starts from byte 0). Nothing is compressed while the verdict is open, because a compressed
// part is punched out of the spool, which could then no longer be kept.
//
// The spool's writer has put the core on the disk as it came (O_DIRECT, spool.h), so a raw core
// is durable after an fsync that commits the file's block allocation and flushes the device.
bool keep_spool_uncompressed(Handoff& h) {
  for (std::uint64_t seen = 0;;) {
    const bool closed = h.spool->closed();  // before the verdict: the drain samples, then closes
    const auto verdict = h.sampler.verdict();
    if (verdict == CompressibilitySampler::Verdict::Compressible) return false;
    if (closed) return verdict == CompressibilitySampler::Verdict::Incompressible;
    // The drain samples once per 16 MiB: looking again after each 8 MiB (not each block) finds a
    // new verdict soon enough, without a wakeup per block.
    seen = h.spool->wait_beyond(seen + kVerdictStep - 1);
  }
}

// --test-hold-before-store: this compressor stops here for good (the test kills the daemon).
void hold_forever(const std::string& id) {
  spdlog::warn("dump {}: holding before storing the core (--test-hold-before-store)", id);
  for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
}

}  // namespace

}  // namespace coredumpd
