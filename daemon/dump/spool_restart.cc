// The start-up side of kept spools (spool_recovery.h): which to recover, their records, the log.
#include <fcntl.h>
#include <pthread.h>
#include <sys/resource.h>
#include <unistd.h>

#include <boost/asio/post.hpp>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <map>
#include <set>
#include <thread>

#include <spdlog/spdlog.h>

#include "daemon/dump/compress_stage.h"
#include "daemon/dump/core_writer.h"
#include "daemon/dump/dump_context.h"
#include "daemon/dump/spool_recovery.h"
#include "daemon/policy/config.h"
#include "store/core_accounting.h"
#include "store/record_extras.h"
#include "util/dir.h"
#include "util/time.h"
#include "util/unique_fd.h"

namespace coredumpd {

namespace {

std::atomic<bool> g_hold_before_store{false};

constexpr std::string_view kPrefix = ".spool-";
constexpr std::string_view kManifestSuffix = ".json";

std::optional<std::string> read_small_file(int dirfd, const std::string& name) {
  UniqueFd fd(::openat(dirfd, name.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd) return std::nullopt;
  std::string text;
  char buf[4096];
  for (ssize_t n; (n = ::read(fd.get(), buf, sizeof buf)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 || text.size() > (16 << 20)) return std::nullopt;
    text.append(buf, static_cast<std::size_t>(n));
  }
  return text;
}

// Stores the kept spool of `m` and finishes its record; on failure the record says why. Runs on
// the compressor pool; `in_flight` is held so that a stop waits for it as for a dump.
void recover(DumpContext& ctx, const SpoolManifest& m, CompressionOptions options, std::atomic<int>& in_flight) {
  ::pthread_setname_np(::pthread_self(), kCompressorThreadName);
  ::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), 10);  // as a compressor after its stream
  const auto started = std::chrono::steady_clock::now();
  std::uint64_t stored = 0;
  std::string error;
  try {
    stored = store_kept_spool(ctx.store_dirfd, m, options);
  } catch (const StoreError& e) {
    error = e.what();
  }
  try {
    auto r = ctx.index.get(m.id);
    if (r) {
      for (const auto& [key, value] : m.extra.items()) r->extra[key] = value;  // the drain's extras
      r->core_size = m.received;
      if (m.signal) r->signal = m.signal;
      if (m.crashing_tid_ns) r->crashing_tid_ns = m.crashing_tid_ns;
      if (error.empty()) {
        r->state = m.state;
        r->reason = m.reason;
        r->stored_size = stored;
        r->compression = m.uncompressed ? kCompressionNone : kCompressionZstd;
        r->path = m.id + std::string(m.uncompressed ? kRawExtension : kZstdExtension);
        if (m.state == DumpState::Truncated) r->extra[extras::kStoredCoreBytes] = m.spooled;
      } else {
        r->state = DumpState::Failed;
        r->reason = "coredumpd stopped before storing this core, and storing it at the next start failed: " + error;
        r->path.clear();
        r->compression.clear();
        r->stored_size = 0;
      }
      r->extra[extras::kRecovered] = {{"at_us", now_epoch_us()}, {"spooled", m.spooled},
                                      {"reason", "coredumpd stopped after the core arrived in full, before it was stored"}};
      ctx.index.update(*r);
      if (holds_core(*r) && ctx.on_stored) ctx.on_stored(*r);  // analysed like any stored dump
      else if (ctx.on_final) ctx.on_final(*r);
    }
  } catch (const std::exception& e) {
    spdlog::error("dump {}: recovered core not recorded: {}", m.id, e.what());
    if (error.empty()) ::unlinkat(ctx.store_dirfd, (m.id + std::string(m.uncompressed ? kRawExtension : kZstdExtension)).c_str(), 0);
    --in_flight;
    return;  // the kept spool stays: the next start tries again
  }
  forget_kept_spool(ctx.store_dirfd, m.id);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started).count();
  if (error.empty()) {
    ctx.stats.count(m.state == DumpState::Complete ? Outcome::Stored : Outcome::Truncated);
    spdlog::info("dump {}: recovered after a restart: {} bytes -> {} bytes ({}) in {} ms", m.id, m.spooled, stored,
                 state_name(m.state), ms);
  } else {
    ctx.stats.count(Outcome::Failed);
    spdlog::error("dump {}: recovering its kept spool failed: {}", m.id, error);
  }
  --in_flight;
}

}  // namespace

void start_spool_recovery(DumpContext& ctx, const Config& config, std::atomic<int>& in_flight) {
  const int dirfd = ctx.store_dirfd;
  std::set<std::string> spools, manifests;
  for_each_dir_entry(dirfd, ".", [&](std::string_view name) {
    if (!name.starts_with(kPrefix)) return true;
    if (name.ends_with(".tmp")) ::unlinkat(dirfd, std::string(name).c_str(), 0);  // a manifest being written
    else if (name.ends_with(kManifestSuffix)) manifests.emplace(name.substr(kPrefix.size(), name.size() - kPrefix.size() - kManifestSuffix.size()));
    else spools.emplace(name.substr(kPrefix.size()));
    return true;
  });
  for (const auto& id : spools)
    if (!manifests.count(id)) {  // stopped between linking the spool and writing its manifest
      spdlog::warn("removing kept spool {}: it has no manifest", spool_file_name(id));
      ::unlinkat(dirfd, spool_file_name(id).c_str(), 0);
    }
  for (const auto& id : manifests) {
    std::string error = "unreadable";
    std::optional<SpoolManifest> m;
    if (const auto text = read_small_file(dirfd, manifest_file_name(id))) {
      if (const auto j = nlohmann::json::parse(*text, nullptr, false); j.is_discarded()) error = "is not JSON";
      else m = manifest_from_json(j, error);
    }
    if (m && m->id != id) {
      error = "its id is " + m->id;
      m.reset();
    }
    std::optional<DumpRecord> r;
    try {
      if (m) r = ctx.index.get(id);
    } catch (const std::exception& e) {
      error = e.what();
      m.reset();
    }
    if (!m || !r || (r->state != DumpState::InProgress && r->state != DumpState::Interrupted)) {
      // Bad manifests, records gone, or dumps already stored (stopped before the names went).
      if (!m) spdlog::warn("removing kept spool {}: manifest {}", spool_file_name(id), error);
      else if (!r) spdlog::warn("removing kept spool {}: no record {} in the index", spool_file_name(id), id);
      forget_kept_spool(dirfd, id);
      continue;
    }
    r->reason = "coredumpd stopped after this core arrived in full; it is being stored from its kept spool";
    try {
      ctx.index.update(*r);
    } catch (const std::exception& e) {
      spdlog::warn("dump {}: {}", id, e.what());
    }
    spdlog::warn("dump {}: its core ({} bytes) arrived in full before coredumpd stopped; storing it from the kept spool",
                 id, m->spooled);
    ++in_flight;
    boost::asio::post(ctx.compressors, [&ctx, m = *m, options = config.compression, &in_flight] {
      recover(ctx, m, options, in_flight);
    });
  }
}

void set_hold_before_store(bool hold) { g_hold_before_store = hold; }
bool hold_before_store() { return g_hold_before_store; }

}  // namespace coredumpd
