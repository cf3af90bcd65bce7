#include "daemon/dump/dump_job.h"

#include <malloc.h>
#include <poll.h>
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <boost/asio/post.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <cstring>
#include <vector>

#include <spdlog/spdlog.h>

#include "daemon/dump/compressibility.h"
#include "daemon/dump/core_writer.h"
#include "daemon/forward/forward.h"
#include "daemon/report/log_limiter.h"
#include "daemon/report/logging.h"
#include "daemon/proc/proc_dir.h"
#include "daemon/dump/spool.h"
#include "store/record_extras.h"
#include "store/vacuum.h"
#include "protocol/core_notes.h"
#include "protocol/records.h"

namespace coredumpd {

namespace {

using Clock = std::chrono::steady_clock;

// Large reads keep the syscall count low at the kernel's ~2 GB/s emit rate (spec Appendix A):
// record streams, and what is dropped past max_core_bytes (a plain core is read into the spool's
// blocks, of the same size).
constexpr std::size_t kReadChunk = Spool::kBlockBytes;
// Bytes the compressor takes between two looks at whether the stream has ended.
constexpr std::uint64_t kStreamingStep = 8 << 20;
// Bytes the compressor lets stream in between two looks at the compressibility verdict.
constexpr std::uint64_t kVerdictStep = 8 << 20;

std::int64_t us_since(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t).count();
}

struct DrainResult {
  bool eof = false;   ///< the kernel half-closed
  std::string error;  ///< why draining stopped before EOF
};

// What one pull from the stream did: `n` as read(2) returns it (errno set when -1), or `stop`.
struct Pulled {
  ssize_t n = 0;
  bool stop = false;  ///< the consumer refused the bytes (a malformed record stream)
};

// Pulls the core stream from `fd` to EOF; `pull()` reads the next bytes. Each wait
// for data is bounded by `idle`.
template <typename Pull>
DrainResult drain(int fd, std::chrono::milliseconds idle, Pull&& pull) {
  DrainResult r;
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
    pollfd pfd{fd, POLLIN, 0};
    const int ready = ::poll(&pfd, 1, static_cast<int>(idle.count()));
    if (ready == 0) {
      r.error = "core stream stalled for " + std::to_string(idle.count()) + " ms";
      return r;
    }
    if (ready < 0 && errno != EINTR) {
      r.error = std::string("poll: ") + std::strerror(errno);
      return r;
    }
  }
}

// Maps the crashing thread named by NT_PRSTATUS (a TID in the task's own pid namespace) to a host TID.
std::optional<std::int64_t> host_tid(const HandshakeFacts& facts, std::int64_t ns_tid) {
  for (const auto& t : facts.threads)
    if (t.ns_tid == ns_tid) return t.host_tid;
  return std::nullopt;
}

void apply_core_facts(const protocol::CoreFacts& core, const HandshakeFacts& facts, DumpRecord& r) {
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

bool save_record(DumpContext& ctx, const DumpRecord& record, bool update) {
  try {
    update ? ctx.index.update(record) : ctx.index.insert(record);
    return true;
  } catch (const std::exception& e) {
    spdlog::error("dump {}: index {} failed: {}", record.id, update ? "update" : "insert", e.what());
    return false;
  }
}

namespace {

// A dump between its two stages. The drain fills the fields above the spool's close_input();
// the compressor reads them only after wait_beyond() reported the input closed (same mutex).
struct InFlight {
  InFlight(DumpContext& c, DumpJob j, std::function<void()> d)
      : ctx(c), job(std::move(j)), started(Clock::now()), done(std::move(d)) {}

  DumpContext& ctx;
  DumpJob job;
  Clock::time_point started;
  std::function<void()> done;
  bool indexed = false;                 // the InProgress row was inserted
  std::unique_ptr<Spool> spool;
  bool may_store_uncompressed = false;  // a plain core stream, not forwarded: the spool can be the core
  CompressibilitySampler sampler;       // fed by the drain, read by the compressor
  std::string spool_error;              // the spool could not be created or written
  DrainResult drained;
  bool records = false;
  bool malformed = false;               // the record stream broke the protocol
  std::string record_error;
  bool records_ended = false;
  std::uint64_t records_count = 0;
  std::uint64_t total = 0;              // core bytes seen
  std::uint64_t spooled = 0;            // core bytes put in the spool (max_core_bytes applies)
  protocol::CoreFacts core_facts;
  bool forwarding = false;              // a receiver was handed the stream
  bool forwarded = false;               // ... and took all of it: no core is kept here
  std::string forward_error;            // why a forward fell back to storing here
  std::uint64_t forward_bytes = 0;      // stream bytes the receiver took
};

// Drain-side sink: scans notes, spools up to the size limit, keeps counting past it.
class DrainSink {
 public:
  explicit DrainSink(InFlight& d) : d_(d), limit_(d.job.policy.max_core_bytes.value_or(UINT64_MAX)) {}

  /// Where the next bytes of a plain core stream are read to: the spool's block, at most as much
  /// as the spool may still take (max_core_bytes); empty once it takes nothing more.
  std::span<std::byte> space() {
    const std::uint64_t left = room(UINT64_MAX);
    if (left == 0) return {};
    const auto into = d_.spool->space();
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
      if (const auto block = d_.spool->commit(bytes.size()); !block.empty()) probe(block);
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
      d_.spool->append(bytes.first(static_cast<std::size_t>(n)));
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
      d_.spool->append_zeros(n);
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
  std::uint64_t room(std::uint64_t len) const {
    if (!d_.spool || !d_.spool_error.empty() || d_.spooled >= limit_) return 0;
    return std::min(len, limit_ - d_.spooled);
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
    d_.sampler.sample(block.subspan(first_data));
    probe_due_ = false;
  }

  static constexpr std::size_t kPage = 4096;
  static constexpr std::uint64_t kProbeBlocks = 16;  // one sample per 16 MiB

  InFlight& d_;
  std::uint64_t limit_;
  bool probe_due_ = false;
  protocol::CoreNoteScanner scanner_;
};

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

void finalize(InFlight& d, std::uint64_t stored, const std::string& compress_error);

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
// then only copies, which one thread does faster than a multithreaded context (its workers add
// copies and hand-offs; 2 GB/s against 1 GB/s on random data here).
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
bool keep_spool_uncompressed(InFlight& d) {
  for (std::uint64_t seen = 0;;) {
    const bool closed = d.spool->closed();  // before the verdict: the drain samples, then closes
    const auto verdict = d.sampler.verdict();
    if (verdict == CompressibilitySampler::Verdict::Compressible) return false;
    if (closed) return verdict == CompressibilitySampler::Verdict::Incompressible;
    // The drain samples once per 16 MiB: looking again after each 8 MiB (not each block) finds a
    // new verdict soon enough, without a wakeup per block.
    seen = d.spool->wait_beyond(seen + kVerdictStep - 1);
  }
}

// The compress stage: follows the spool until its input is closed, then finalizes the dump.
//
// A forwarded dump is compressed only if the receiver did not take it all (it is then stored here):
// until its fate is known at the end of the stream, it waits in the spool. Without
// compress_while_streaming every dump waits there too, but with its file already made.
void compress(const std::shared_ptr<InFlight>& dp) {
  InFlight& d = *dp;
  if (d.forwarding && d.spool) d.spool->wait_beyond(UINT64_MAX);  // returns once the input is closed
  std::string error = d.spool ? "" : "no spool";
  std::optional<CoreWriter> writer;
  if (error.empty() && !d.forwarded) {
    apply_retention(d.ctx, *d.job.config, d.job.record.id);  // make room before the file grows
    try {
      writer.emplace(d.ctx.store_dirfd, d.job.record.path, CompressionOptions{d.job.policy.compression_level, 0, d.job.config->compression.core_tables});
    } catch (const StoreError& e) {
      error = e.what();
    }
  }
  // Only now idle-class: vacuuming above holds the index's write lock, which sessions wait for.
  enter_idle_class();
  if (d.spool && !d.job.config->compress_while_streaming) d.spool->wait_beyond(UINT64_MAX);  // config.h
  const bool uncompressed = error.empty() && writer && d.may_store_uncompressed && keep_spool_uncompressed(d);
  std::uint64_t pos = 0;
  bool streamed = false;
  std::uint64_t compressed_while_streaming = 0;
  while (d.spool && !uncompressed) {
    const std::uint64_t end = d.spool->wait_beyond(pos);
    if (end == pos) break;  // input closed, everything read
    if (!streamed && d.spool->closed()) {  // the rest is here: full speed, all workers
      streamed = true;
      compressed_while_streaming = pos;
      compress_after_stream();
      try {
        if (writer && error.empty()) writer->start_new_frame(incompressible(*writer) ? 0 : d.job.config->compression.threads);
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
        if (const auto hole = d.spool->hole_at(pos, upto - pos)) {
          writer->write_zeros(hole);
          pos += hole;
          continue;
        }
        const auto bytes = d.spool->view(pos, static_cast<std::size_t>(std::min<std::uint64_t>(upto - pos, kReadChunk)));
        writer->write(bytes);
        pos += bytes.size();
      }
      d.spool->release(pos);
    } catch (const StoreError& e) {
      error = e.what();
    }
  }
  if (!streamed) {  // all compressed as it came (or no spool): never idle-class for the index writes below
    compressed_while_streaming = pos;
    compress_after_stream();
  }
  // The input is closed (the loop ended): the drain no longer touches the record.
  auto& r = d.job.record;
  r.extra[extras::kCompressedWhileStreaming] = compressed_while_streaming;
  r.extra[extras::kCompressibilitySamples] = d.sampler.samples();
  // Keep the file only if both stages succeeded; a discarded temporary file frees its space at once
  // (on a full disk the index update needs it).
  std::uint64_t stored = 0;
  const bool keep = error.empty() && d.spool_error.empty() && !d.malformed && writer && !d.forwarded;
  if (keep && uncompressed) {
    writer.reset();
    r.compression = kCompressionNone;
    r.path = r.id + std::string(kRawExtension);
    try {
      stored = d.spool->persist(d.ctx.store_dirfd, r.path);
    } catch (const StoreError& e) {
      error = e.what();
    }
  } else if (keep) {
    try {
      stored = writer->commit();
    } catch (const StoreError& e) {
      error = e.what();
    }
  }
  writer.reset();
  d.spool.reset();
  finalize(d, stored, error);
  if (!d.forwarded) apply_retention(d.ctx, *d.job.config, d.job.record.id);  // quotas, now counting this dump
  // The last dump of a burst gives the arenas' free pages back (main.cc). Not after each one: the
  // dumps still running would fault the trimmed pages in again.
  if (d.ctx.dumps_in_flight.load() == 0) ::malloc_trim(0);
}

void finalize(InFlight& d, std::uint64_t stored, const std::string& compress_error) {
  auto& r = d.job.record;
  auto& ctx = d.ctx;
  r.core_size = d.total;
  apply_core_facts(d.core_facts, d.job.facts, r);
  if (d.records) r.extra[extras::kRecords] = d.records_count;

  const std::string store_error = !d.spool_error.empty() ? d.spool_error : compress_error;
  std::string truncation;
  if (!d.drained.eof && !d.malformed) truncation = d.drained.error;
  else if (d.records && !d.records_ended && !d.malformed)
    truncation = "record stream ended without an END record (task killed mid-dump?)";
  const bool cut = d.spooled < d.total;

  if (d.forwarding) {
    r.extra[extras::kForward]["bytes_relayed"] = d.forward_bytes;
    r.extra[extras::kForward]["outcome"] = d.forwarded ? "delivered" : "fallback";
    if (!d.forwarded) {
      ++ctx.stats.forward_fallbacks;
      r.extra[extras::kForward]["error"] = d.forward_error;
      if (log_limiter().allow("forward failed"))
        spdlog::warn("dump {}: forwarding to {} failed: {}; stored on the host", r.id,
                     escape_for_log(d.job.policy.forward_socket), escape_for_log(d.forward_error));
    }
  }
  if (d.forwarded) {
    ++ctx.stats.forwarded;
    r.state = DumpState::Forwarded;
    r.path.clear();
    r.compression.clear();
    r.stored_size = 0;
  } else if (d.malformed || !store_error.empty()) {
    ++ctx.stats.failed;
    r.state = DumpState::Failed;
    r.reason = d.malformed ? "malformed record stream: " + d.record_error : store_error;
    r.path.clear();
    r.stored_size = 0;
  } else if (!truncation.empty() || cut) {
    ++ctx.stats.truncated;
    r.state = DumpState::Truncated;
    r.reason = !truncation.empty() ? truncation
                                   : "core of " + std::to_string(d.total) + " bytes cut at max_core_bytes " +
                                         std::to_string(d.spooled);
    r.stored_size = stored;
    r.extra[extras::kStoredCoreBytes] = d.spooled;
  } else {
    ++ctx.stats.stored;
    r.state = DumpState::Complete;
    r.stored_size = stored;
  }
  r.extra[extras::kStoredUs] = us_since(d.started);
  if (!save_record(ctx, r, d.indexed) && holds_core(r)) {
    // The core is linked but the index cannot say so (a full store: a raw core can take its last
    // page). Left, it would be an orphan no vacuum counts; deleting it frees the space the index
    // needs to record the failure.
    ::unlinkat(ctx.store_dirfd, r.path.c_str(), 0);
    --(r.state == DumpState::Complete ? ctx.stats.stored : ctx.stats.truncated);
    ++ctx.stats.failed;
    r.state = DumpState::Failed;
    r.reason = "the index could not record the stored core (store full?); core deleted";
    r.path.clear();
    r.stored_size = 0;
    save_record(ctx, r, d.indexed);
  }

  const bool fine = r.state == DumpState::Complete || r.state == DumpState::Forwarded;
  if (log_limiter().allow(fine ? "dump stored" : "dump not stored")) {
    const auto sig = r.signal ? signal_name(*r.signal) : std::string("?");
    if (r.state == DumpState::Forwarded)
      spdlog::info("dump {}: pid {} ({}) {} forwarded to {}, {} bytes relayed", r.id, r.pid, escape_for_log(r.comm), sig,
                   escape_for_log(d.job.policy.forward_socket), d.forward_bytes);
    else if (r.state == DumpState::Complete)
      spdlog::info("dump {}: pid {} ({}) {} stored, {} bytes -> {} bytes, task released after {} ms", r.id, r.pid,
                   escape_for_log(r.comm), sig, r.core_size, r.stored_size, r.extra.value(extras::kReleasedUs, 0) / 1000);
    else
      spdlog::warn("dump {}: pid {} ({}) {} {}: {}", r.id, r.pid, escape_for_log(r.comm), sig, state_name(r.state),
                   escape_for_log(r.reason));
  }
  if (d.done) d.done();
}

}  // namespace

void run_dump_job(DumpContext& ctx, DumpJob job, std::function<void()> done) {
  auto dp = std::make_shared<InFlight>(ctx, std::move(job), std::move(done));
  InFlight& d = *dp;
  auto& r = d.job.record;
  r.state = DumpState::InProgress;
  r.compression = kCompressionZstd;
  r.path = r.id + std::string(kZstdExtension);
  d.indexed = save_record(ctx, r, false);

  d.forwarding = static_cast<bool>(d.job.forward_socket);
  try {
    d.spool = std::make_unique<Spool>(ctx.store_dirfd, d.job.config->spool_direct_io, &ctx.spool_memory);
  } catch (const std::exception& e) {  // StoreError; bad_alloc or system_error (its writer thread)
    d.spool_error = std::string("spool: ") + e.what();
  }
  d.records = d.job.negotiation.records == protocol::FlagOutcome::Granted;
  d.may_store_uncompressed = !d.records && !d.forwarding;
  // The compressor starts now and follows the spool as it fills (without a spool it only
  // finalizes, after the drain).
  if (d.spool) boost::asio::post(ctx.compressors, [dp] { compress(dp); });

  std::optional<Relay> relay;
  if (d.forwarding) relay.emplace(std::move(d.job.forward_socket), d.job.config->stream_idle_timeout);
  DrainSink sink(d);
  protocol::RecordDecoder decoder(d.job.negotiation.sparse == protocol::FlagOutcome::Granted);
  const protocol::RecordSink record_sink{
      [&](std::uint64_t, std::span<const std::byte> bytes) { sink.data(bytes); },
      [&](std::uint64_t, std::uint64_t len) { sink.zeros(len); },
  };
  // A plain core stream is read straight into the spool's blocks; a record stream is read into
  // `scratch` and decoded, and so is what lies past max_core_bytes, to be dropped. A forwarded
  // stream is also passed on verbatim.
  const int fd = d.job.socket.get();
  std::vector<std::byte> scratch;  // allocated when first needed
  // What the kernel waited for before the first read (the InProgress row, the spool), in
  // microseconds since this job started.
  r.extra[extras::kDrainStartUs] = us_since(d.started);
  d.drained = drain(fd, d.job.config->stream_idle_timeout, [&]() -> Pulled {
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
  r.extra[extras::kStreamUs] = us_since(d.started);
  d.core_facts = sink.finish();
  d.malformed = d.records && decoder.failed();
  d.record_error = decoder.error();
  d.records_ended = decoder.ended();
  d.records_count = decoder.records();

  collect_post_dump(d.job, r);
  if (relay) {
    // Delivered only if the kernel's stream was whole and the receiver took it all and hung up.
    const bool whole = d.drained.eof && !d.malformed && (!d.records || d.records_ended);
    if (whole) d.forwarded = relay->finish(d.job.config->handshake_timeout);
    else relay->abandon("the kernel's stream was incomplete: " +
                        (d.malformed ? d.record_error : d.drained.error.empty() ? "no END record" : d.drained.error));
    d.forward_error = relay->error();
    d.forward_bytes = relay->bytes_sent();
  }
  d.job.socket.reset();  // hang up: releases a WAIT-parked task
  r.extra[extras::kReleasedUs] = us_since(d.started);
  if (d.spool && d.spool_error.empty()) {
    try {
      d.spool->flush();  // the last blocks (a few milliseconds of the disk), after the release
    } catch (const StoreError& e) {
      d.spool_error = e.what();
    }
  }
  if (d.spool) {
    r.extra[extras::kSpoolPageCacheBlocks] = d.spool->overflowed_blocks();
    d.spool->close_input();
  } else {
    boost::asio::post(ctx.compressors, [dp] { compress(dp); });
  }
}

}  // namespace coredumpd
