#include "daemon/dump/drain.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <vector>

#include "daemon/dump/core_fallback.h"
#include "daemon/dump/core_writer.h"
#include "daemon/dump/keep_free.h"
#include "daemon/forward/forward.h"
#include "daemon/proc/peer.h"
#include "daemon/proc/proc_dir.h"
#include "protocol/records.h"
#include "store/record_extras.h"
#include "util/poll.h"

namespace coredumpd {

namespace {

// Large reads keep the syscall count low at the kernel's ~2 GB/s emit rate (docs/PROTOCOL.md §11.3):
// record streams, and what is dropped past max_core_bytes (a plain core is read into the spool's
// blocks, of the same size).
constexpr std::size_t kReadChunk = Spool::kBlockBytes;

// How long a short stream's dump waits for the task's exit status (its parent's reap).
constexpr std::chrono::milliseconds kExitPatience{250};

// What one pull from the stream did: `n` as read(2) returns it (errno set when -1), or `stop`.
struct Pulled {
  ssize_t n = 0;
  bool stop = false;  ///< the consumer refused the bytes (a malformed record stream)
};

template <typename Pull>
StreamEnd drain(int fd, std::chrono::milliseconds idle, Pull&& pull);

// Drain-side sink: scans notes, spools up to the size limit, keeps counting past it.
class DrainSink {
 public:
  DrainSink(Handoff& h, DrainReport& report, std::uint64_t limit, const RetentionLimits& retention)
      : spool_(h.spool.get()), sampler_(h.sampler), d_(report), limit_(limit),
        keep_free_(h.dirfd, h.to_fallback ? RetentionLimits{} : retention),
        fallback_(h.to_fallback ? h.ctx.fallback : nullptr) {}

  /// Where the next bytes of a plain core stream are read to: the spool's block, at most as much
  /// as the spool may still take (max_core_bytes); empty once it takes nothing more.
  std::span<std::byte> space() {
    const std::uint64_t left = room(UINT64_MAX);
    if (left == 0) return {};
    const auto into = spool_->space();
    return into.first(static_cast<std::size_t>(std::min<std::uint64_t>(left, into.size())));
  }

  /// `bytes` of a plain core stream were read: into space() if `kept`, else elsewhere (past
  /// max_core_bytes, or after a spool error), to be counted only.
  void read(std::span<const std::byte> bytes, bool kept) {
    if (!scanner_.done()) scanner_.feed(bytes);
    d_.total += bytes.size();
    if (!kept) return;
    d_.spooled += bytes.size();
    try {
      if (const auto block = spool_->commit(bytes.size()); !block.empty()) probe(block);
    } catch (const StoreError& e) {
      d_.spool_error = e.what();
    }
  }

  /// Decoded DATA of a record stream.
  void data(std::span<const std::byte> bytes) {
    if (!scanner_.done()) scanner_.feed(bytes);
    d_.total += bytes.size();
    const auto n = room(bytes.size());
    if (n == 0) return;
    try {
      spool_->append(bytes.first(static_cast<std::size_t>(n)));
      d_.spooled += n;
    } catch (const StoreError& e) {
      d_.spool_error = e.what();
    }
  }

  /// A ZERO record of `len` bytes.
  void zeros(std::uint64_t len) {
    static const std::vector<std::byte> zero_block(64 * 1024);
    for (std::uint64_t left = len; left > 0 && !scanner_.done();) {  // holes inside the notes are rare
      const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(left, zero_block.size()));
      scanner_.feed(std::span(zero_block.data(), n));
      left -= n;
    }
    d_.total += len;
    const auto n = room(len);
    if (n == 0) return;
    try {
      spool_->append_zeros(n);
      d_.spooled += n;
    } catch (const StoreError& e) {
      d_.spool_error = e.what();
    }
  }

  protocol::CoreFacts finish() {
    scanner_.finish();
    return scanner_.facts();
  }

 private:
  std::uint64_t room(std::uint64_t len) {
    if (!spool_ || !d_.spool_error.empty() || d_.spooled >= limit_) return 0;
    if (!keep_free_.allows(d_.spooled)) {
      // As at max_core_bytes: the rest is drained and dropped, what came is stored (truncated);
      // with nothing spooled there is no core at all.
      limit_ = d_.spooled;
      (d_.spooled == 0 ? d_.spool_error : d_.cut_reason) = keep_free_.reason();
      return 0;
    }
    const std::uint64_t n = std::min(len, limit_ - d_.spooled);
    return fallback_ ? fallback_room(n) : n;
  }

  // A core going to the fallback reserves its bytes there a block at a time; one that finds no
  // more room has no core at all (a part of a core in early boot is worth less than the /run
  // memory it would hold): the dump is recorded without it, with the reason.
  std::uint64_t fallback_room(std::uint64_t n) {
    const std::uint64_t step = std::min<std::uint64_t>(n, Spool::kBlockBytes);
    if (d_.fallback_reserved < d_.spooled + step) {
      // A block's worth at once: one look at the filesystem per MiB, not per read.
      const std::uint64_t chunk = std::max<std::uint64_t>(d_.spooled + step - d_.fallback_reserved, Spool::kBlockBytes);
      if (std::string why = fallback_->reserve(chunk); !why.empty()) {
        d_.spool_error = std::move(why);
        limit_ = d_.spooled;
        return 0;
      }
      d_.fallback_reserved += chunk;
    }
    return std::min(n, d_.fallback_reserved - d_.spooled);
  }

  // Once per kProbeBlocks blocks of the spool, the first block from there on that is mostly data
  // (not untouched memory, which the kernel sends as zeros and the spool leaves as holes) is a
  // compressibility sample (compressibility.h), from its first page of data on. Blocks hold only
  // bytes the spool keeps: what lies past max_core_bytes never decides the format of what was stored.
  void probe(std::span<const std::byte> block) {
    if (d_.spooled / Spool::kBlockBytes % kProbeBlocks == 0) probe_due_ = true;
    if (!probe_due_) return;
    std::size_t zero_pages = 0, first_data = block.size();
    for (std::size_t i = 0; i < block.size(); i += kPage) {
      const bool zero = all_zero(block.subspan(i, kPage));
      zero_pages += zero;
      if (!zero && first_data == block.size()) first_data = i;
    }
    if (zero_pages * 2 >= block.size() / kPage) return;  // try the next block
    sampler_.sample(block.subspan(first_data));
    probe_due_ = false;
  }

  static constexpr std::size_t kPage = 4096;
  static constexpr std::uint64_t kProbeBlocks = 16;  // one sample per 16 MiB

  Spool* spool_;  // null: none could be created
  CompressibilitySampler& sampler_;
  DrainReport& d_;
  std::uint64_t limit_;
  KeepFreeGuard keep_free_;
  CoreFallback* fallback_;  // null: the core goes to the store
  bool probe_due_ = false;
  protocol::CoreNoteScanner scanner_;
};

void collect_post_dump(const DumpJob& job, DumpRecord& r);

}  // namespace

Drained drain_core_stream(Handoff& h, DumpJob job, std::string spool_error) {
  DrainReport d;
  d.spool_error = std::move(spool_error);
  d.forward.attempted = static_cast<bool>(job.forward_socket);
  d.records = job.negotiation.records == protocol::FlagOutcome::Granted;
  auto& r = job.record;

  std::optional<Relay> relay;
  if (d.forward.attempted) relay.emplace(std::move(job.forward_socket), job.config->stream_idle_timeout);
  DrainSink sink(h, d, job.policy.max_core_bytes.value_or(UINT64_MAX), effective_retention(*job.config));
  protocol::RecordDecoder decoder(job.negotiation.sparse == protocol::FlagOutcome::Granted);
  const protocol::RecordSink record_sink{
      [&](std::uint64_t, std::span<const std::byte> bytes) { sink.data(bytes); },
      [&](std::uint64_t, std::uint64_t len) { sink.zeros(len); },
  };
  // A plain core stream is read straight into the spool's blocks; a record stream is read into
  // `scratch` and decoded, and so is what lies past max_core_bytes, to be dropped. A forwarded
  // stream is also passed on verbatim.
  const int fd = job.socket.get();
  std::vector<std::byte> scratch;  // allocated when first needed
  // What the kernel waited for before the first read (the InProgress row, the spool), in
  // microseconds since this job started.
  r.extra[extras::kDrainStartUs] = us_since(h.started);
  d.stream = drain(fd, job.config->stream_idle_timeout, [&]() -> Pulled {
    auto into = d.records ? std::span<std::byte>() : sink.space();
    const bool kept = !into.empty();
    if (!kept) {
      scratch.resize(kReadChunk);
      into = scratch;
    }
    const ssize_t n = ::read(fd, into.data(), into.size());
    if (n <= 0) return {n};
    const std::span<const std::byte> chunk(into.data(), static_cast<std::size_t>(n));
    if (relay) relay->send(chunk);  // the receiver acked the same stream format: bytes go verbatim
    if (d.records) {
      if (!decoder.feed(chunk, record_sink)) return {n, true};  // a malformed stream stops the dump
      return {n};
    }
    sink.read(chunk, kept);
    return {n};
  });
  r.extra[extras::kStreamUs] = us_since(h.started);
  d.core_facts = sink.finish();
  d.malformed = d.records && decoder.failed();
  d.record_error = decoder.error();
  d.records_ended = decoder.ended();
  d.records_count = decoder.records();

  collect_post_dump(job, r);
  if (relay) {
    // Delivered only if the kernel's stream was whole and the receiver took it all and hung up.
    const bool whole = d.stream.eof && !d.malformed && (!d.records || d.records_ended);
    if (whole) d.forward.delivered = relay->finish(job.config->handshake_timeout);
    else relay->abandon("the kernel's stream was incomplete: " +
                        (d.malformed ? d.record_error : d.stream.error.empty() ? "no END record" : d.stream.error));
    d.forward.error = relay->error();
    d.forward.bytes = relay->bytes_sent();
  }
  job.socket.reset();  // hang up: releases a WAIT-parked task
  r.extra[extras::kReleasedUs] = us_since(h.started);
  // A stream that ended short of what the core's headers promise: the task's exit names the cause
  // (a SIGKILL mid-dump). Asked only then, after the release, and bounded: its parent must reap it.
  if (d.stream.eof && d.core_facts.promised_size > d.total) {
    if (job.pidfd) d.task_exit.status = pidfd_exit_status(job.pidfd.get(), kExitPatience, d.task_exit.error);
    else d.task_exit.error = "no pidfd for the task";
  }
  if (h.spool && d.spool_error.empty()) {
    try {
      h.spool->flush();  // the last blocks (a few milliseconds of the disk), after the release
    } catch (const StoreError& e) {
      d.spool_error = e.what();
    }
  }
  return {std::move(job), std::move(d)};
}

namespace {

// Pulls the core stream from `fd` to EOF; `pull()` reads the next bytes. Each wait
// for data is bounded by `idle`.
template <typename Pull>
StreamEnd drain(int fd, std::chrono::milliseconds idle, Pull&& pull) {
  StreamEnd r;
  while (true) {
    const Pulled p = pull();
    if (p.stop) return r;
    if (p.n > 0) continue;
    if (p.n == 0) {
      r.eof = true;
      return r;
    }
    if (errno == EINTR) continue;
    if (errno != EAGAIN) {
      r.error = std::string("reading the core stream: ") + std::strerror(errno);
      return r;
    }
    const PollResult ready = poll_for(fd, POLLIN, idle);
    if (ready.status == PollStatus::Timeout) {
      r.error = "core stream stalled for " + std::to_string(idle.count()) + " ms";
      return r;
    }
    if (ready.status == PollStatus::Failed) {
      r.error = std::string("poll: ") + std::strerror(ready.error);
      return r;
    }
  }
}

// Post-dump collectors: the task is parked by WAIT, alive with its memory map.
void collect_post_dump(const DumpJob& job, DumpRecord& r) {
  if (job.negotiation.wait != protocol::FlagOutcome::Granted || !job.pidfd) return;
  std::string error;
  auto proc = ProcDir::open(job.pidfd.get(), static_cast<pid_t>(r.pid), error);
  for (const auto& name : job.policy.post_dump) {
    if (!proc) {
      r.extra[extras::kPostDumpErrors][name] = error;
      continue;
    }
    if (name == "smaps_rollup") {
      if (auto v = proc->read("smaps_rollup", 64 * 1024, error)) r.extra[extras::kProc]["smaps_rollup"] = bytes_to_json(*v);
      else r.extra[extras::kPostDumpErrors][name] = error;
    }
  }
}

}  // namespace

}  // namespace coredumpd
