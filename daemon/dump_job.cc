#include "daemon/dump_job.h"

#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <vector>

#include <spdlog/spdlog.h>

#include "daemon/core_writer.h"
#include "protocol/core_notes.h"

namespace coredumpd {

namespace {

using Clock = std::chrono::steady_clock;

// Large reads keep the syscall count low at the kernel's ~2 GB/s emit rate (spec Appendix A).
constexpr std::size_t kReadChunk = 1 << 20;

struct DrainResult {
  bool eof = false;     ///< the kernel half-closed: the core is complete as far as a plain stream can tell
  std::string error;    ///< why draining stopped before EOF
};

// Reads `fd` to EOF, handing each chunk to `sink`. Each wait for data is bounded by `idle`.
template <typename Sink>
DrainResult drain(int fd, std::chrono::milliseconds idle, Sink&& sink) {
  std::vector<std::byte> buf(kReadChunk);
  DrainResult r;
  while (true) {
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n > 0) {
      sink(std::span<const std::byte>(buf.data(), static_cast<std::size_t>(n)));
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

  protocol::CoreNoteScanner scanner;
  std::optional<CoreWriter> writer;
  std::string store_error;
  try {
    writer.emplace(ctx.store_dirfd, r.path, job.config->compression);
  } catch (const StoreError& e) {
    store_error = e.what();
  }

  DrainResult drained;
  if (writer) {
    drained = drain(job.socket.get(), job.config->stream_idle_timeout, [&](std::span<const std::byte> chunk) {
      scanner.feed(chunk);
      if (!store_error.empty()) return;
      try {
        writer->write(chunk);
      } catch (const StoreError& e) {
        store_error = e.what();
      }
    });
  }
  r.core_size = scanner.bytes_seen();
  apply_core_facts(scanner.facts(), job.facts, r);
  // Everything we need from the live process is in: hang up, which releases a WAIT-parked task.
  job.socket.reset();
  r.extra["released_us"] = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - started).count();

  if (store_error.empty()) {
    try {
      r.stored_size = writer->commit();
    } catch (const StoreError& e) {
      store_error = e.what();
    }
  }
  writer.reset();

  if (!store_error.empty()) {
    ++ctx.stats.failed;
    r.state = DumpState::Failed;
    r.reason = store_error;
    r.path.clear();
    r.stored_size = 0;
  } else if (!drained.eof) {
    ++ctx.stats.truncated;
    r.state = DumpState::Truncated;
    r.reason = drained.error;
  } else {
    ++ctx.stats.stored;
    r.state = DumpState::Complete;
  }
  r.extra["stored_us"] = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - started).count();
  save_record(ctx, r, indexed);

  const auto sig = r.signal ? signal_name(*r.signal) : std::string("?");
  if (r.state == DumpState::Complete)
    spdlog::info("dump {}: pid {} ({}) {} stored, {} bytes -> {} bytes", r.id, r.pid, r.comm, sig, r.core_size,
                 r.stored_size);
  else
    spdlog::warn("dump {}: pid {} ({}) {} {}: {}", r.id, r.pid, r.comm, sig, state_name(r.state), r.reason);
}

}  // namespace coredumpd
