#include "daemon/dump_job.h"

#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <vector>

#include <spdlog/spdlog.h>

#include "daemon/core_writer.h"
#include "daemon/log_limiter.h"
#include "daemon/logging.h"
#include "daemon/proc_dir.h"
#include "protocol/core_notes.h"
#include "protocol/records.h"

namespace coredumpd {

namespace {

using Clock = std::chrono::steady_clock;

// Large reads keep the syscall count low at the kernel's ~2 GB/s emit rate (spec Appendix A).
constexpr std::size_t kReadChunk = 1 << 20;

std::int64_t us_since(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t).count();
}

struct DrainResult {
  bool eof = false;   ///< the kernel half-closed
  std::string error;  ///< why draining stopped before EOF
};

// Reads `fd` to EOF, handing each chunk to `sink`, which returns false to stop early. Each wait for
// data is bounded by `idle`.
template <typename Sink>
DrainResult drain(int fd, std::chrono::milliseconds idle, Sink&& sink) {
  std::vector<std::byte> buf(kReadChunk);
  DrainResult r;
  while (true) {
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n > 0) {
      if (!sink(std::span<const std::byte>(buf.data(), static_cast<std::size_t>(n)))) return r;
      continue;
    }
    if (n == 0) {
      r.eof = true;
      return r;
    }
    if (errno == EINTR) continue;
    if (errno != EAGAIN) {
      r.error = std::string("reading the core stream: ") + std::strerror(errno);
      return r;
    }
    pollfd p{fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(idle.count()));
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

// Where the core's bytes go: the note scanner (for the signal and crashing thread) and the
// compressed file, up to the policy's size limit. Store errors stop storing, not reading.
class CoreSink {
 public:
  CoreSink(int store_dirfd, const std::string& name, const Policy& policy, int threads)
      : limit_(policy.max_core_bytes.value_or(UINT64_MAX)) {
    try {
      writer_.emplace(store_dirfd, name, CompressionOptions{policy.compression_level, threads});
    } catch (const StoreError& e) {
      error_ = e.what();
    }
  }

  void data(std::span<const std::byte> bytes) {
    if (!scanner_.done()) scanner_.feed(bytes);
    total_ += bytes.size();
    store(bytes.size(), [&](std::uint64_t n) { writer_->write(bytes.first(static_cast<std::size_t>(n))); });
  }

  void zeros(std::uint64_t len) {
    static const std::vector<std::byte> zero_page(64 * 1024);
    for (std::uint64_t left = len; left > 0 && !scanner_.done();) {  // holes inside the notes are rare
      const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(left, zero_page.size()));
      scanner_.feed(std::span(zero_page.data(), n));
      left -= n;
    }
    total_ += len;
    store(len, [&](std::uint64_t n) { writer_->write_zeros(n); });
  }

  /// Declares the end of the core (the note scanner reports what never arrived).
  void finish() { scanner_.finish(); }

  /// Commits the file unless storing failed, then releases it either way (a discarded temporary
  /// file frees its space at once: on a full disk the index update needs it). Returns the stored
  /// size in bytes.
  std::uint64_t commit() {
    std::uint64_t stored = 0;
    if (error_.empty() && writer_) {
      try {
        stored = writer_->commit();
      } catch (const StoreError& e) {
        error_ = e.what();
      }
    }
    writer_.reset();
    return stored;
  }

  /// Drops the temporary file without committing it.
  void discard() { writer_.reset(); }

  const std::string& error() const { return error_; }
  bool cut() const { return stored_ < total_; }  ///< the size limit cut the core short
  std::uint64_t total() const { return total_; }
  std::uint64_t stored() const { return stored_; }
  const protocol::CoreFacts& facts() const { return scanner_.facts(); }

 private:
  template <typename Write>
  void store(std::uint64_t len, Write&& write) {
    if (!error_.empty() || stored_ >= limit_) return;
    const auto n = std::min(len, limit_ - stored_);
    try {
      write(n);
      stored_ += n;
    } catch (const StoreError& e) {
      error_ = e.what();  // e.g. ENOSPC: the partial file is discarded at commit()
    }
  }

  std::uint64_t limit_;
  std::optional<CoreWriter> writer_;
  protocol::CoreNoteScanner scanner_;
  std::uint64_t total_ = 0;
  std::uint64_t stored_ = 0;
  std::string error_;
};

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
  if (core.si_code) r.extra["si_code"] = *core.si_code;
  if (core.fault_address) r.extra["fault_address"] = *core.fault_address;
  r.extra["threads"] = core.thread_tids.size();
  if (!core.error.empty()) r.extra["core_note_error"] = core.error;
}

// Post-dump collectors: the task is parked by WAIT, alive with its memory map.
void collect_post_dump(const DumpJob& job, DumpRecord& r) {
  if (job.negotiation.wait != protocol::FlagOutcome::Granted || !job.pidfd) return;
  std::string error;
  auto proc = ProcDir::open(job.pidfd.get(), static_cast<pid_t>(r.pid), error);
  for (const auto& name : job.policy.post_dump) {
    if (!proc) {
      r.extra["post_dump_errors"][name] = error;
      continue;
    }
    if (name == "smaps_rollup") {
      if (auto v = proc->read("smaps_rollup", 64 * 1024, error)) r.extra["proc"]["smaps_rollup"] = bytes_to_json(*v);
      else r.extra["post_dump_errors"][name] = error;
    }
  }
}

}  // namespace

bool save_record(ServerContext& ctx, const DumpRecord& record, bool update) {
  try {
    update ? ctx.index.update(record) : ctx.index.insert(record);
    return true;
  } catch (const std::exception& e) {
    spdlog::error("dump {}: index {} failed: {}", record.id, update ? "update" : "insert", e.what());
    return false;
  }
}

void run_dump_job(ServerContext& ctx, DumpJob job) {
  auto& r = job.record;
  const auto started = Clock::now();
  r.state = DumpState::InProgress;
  r.compression = "zstd";
  r.path = r.id + ".zst";
  const bool indexed = save_record(ctx, r, false);

  CoreSink sink(ctx.store_dirfd, r.path, job.policy, job.config->compression.threads);
  const bool records = job.negotiation.records == protocol::FlagOutcome::Granted;
  protocol::RecordDecoder decoder(job.negotiation.sparse == protocol::FlagOutcome::Granted);
  const protocol::RecordSink record_sink{
      [&](std::uint64_t, std::span<const std::byte> bytes) { sink.data(bytes); },
      [&](std::uint64_t, std::uint64_t len) { sink.zeros(len); },
  };
  const auto drained = drain(job.socket.get(), job.config->stream_idle_timeout, [&](std::span<const std::byte> chunk) {
    if (!records) {
      sink.data(chunk);
      return true;
    }
    return decoder.feed(chunk, record_sink);  // a malformed stream stops the dump
  });
  r.extra["stream_us"] = us_since(started);
  if (records) r.extra["records"] = decoder.records();

  collect_post_dump(job, r);
  job.socket.reset();  // hang up: releases a WAIT-parked task
  r.extra["released_us"] = us_since(started);

  sink.finish();
  r.core_size = sink.total();
  apply_core_facts(sink.facts(), job.facts, r);
  const bool malformed = records && decoder.failed();
  if (malformed) sink.discard();  // a malformed stream is never kept
  const std::uint64_t stored = sink.commit();

  std::string truncation;
  if (!drained.eof && !malformed) truncation = drained.error;
  else if (records && !decoder.ended() && !malformed) truncation = "record stream ended without an END record (task killed mid-dump?)";
  if (malformed || !sink.error().empty()) {
    ++ctx.stats.failed;
    r.state = DumpState::Failed;
    r.reason = malformed ? "malformed record stream: " + decoder.error() : sink.error();
    r.path.clear();
    r.stored_size = 0;
  } else if (!truncation.empty() || sink.cut()) {
    ++ctx.stats.truncated;
    r.state = DumpState::Truncated;
    r.reason = !truncation.empty() ? truncation
                                   : "core of " + std::to_string(sink.total()) + " bytes cut at max_core_bytes " +
                                         std::to_string(sink.stored());
    r.stored_size = stored;
    r.extra["stored_core_bytes"] = sink.stored();
  } else {
    ++ctx.stats.stored;
    r.state = DumpState::Complete;
    r.stored_size = stored;
  }
  r.extra["stored_us"] = us_since(started);
  save_record(ctx, r, indexed);

  const auto sig = r.signal ? signal_name(*r.signal) : std::string("?");
  if (!log_limiter().allow(r.state == DumpState::Complete ? "dump stored" : "dump not stored")) return;
  if (r.state == DumpState::Complete)
    spdlog::info("dump {}: pid {} ({}) {} stored, {} bytes -> {} bytes", r.id, r.pid, escape_for_log(r.comm), sig,
                 r.core_size, r.stored_size);
  else
    spdlog::warn("dump {}: pid {} ({}) {} {}: {}", r.id, r.pid, escape_for_log(r.comm), sig, state_name(r.state),
                 r.reason);
}

}  // namespace coredumpd
