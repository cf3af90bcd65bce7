#include "daemon/dump/fallback_mover.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/asio/post.hpp>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <mutex>

#include <spdlog/spdlog.h>

#include "daemon/dump/record_keeper.h"
#include "daemon/dump/store_health.h"
#include "daemon/report/log_limiter.h"
#include "store/fallback_core.h"
#include "store/record_extras.h"
#include "util/unique_fd.h"

namespace coredumpd {

namespace {

std::int64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::mutex& reattach_mu() {
  static std::mutex mu;
  return mu;
}

// Moves one core; returns the record as it now is (moved, or failed for good), or nullopt to try
// again later.
std::optional<DumpRecord> move_one(DumpContext& ctx, DumpRecord r) {
  auto& f = r.extra[extras::kFallback];
  struct stat st{};
  if (::fstatat(ctx.fallback->dirfd(), r.path.c_str(), &st, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT) {
    f["moved_us"] = now_us();
    // A stop after the move removed the fallback's copy, before the journal said so.
    if (::fstatat(ctx.store_dirfd, r.path.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) return r;
    r.state = DumpState::Failed;  // someone removed it from /run
    r.reason = "the core kept in the fallback " + f.value("dir", std::string()) + " was lost: " + r.path + " is gone";
    r.path.clear();
    return r;
  }
  try {
    const std::uint64_t bytes = move_core_file(ctx.fallback->dirfd(), ctx.store_dirfd, r.path);
    ctx.fallback->release(bytes);
    f["moved_us"] = now_us();
    return r;
  } catch (const std::system_error& e) {
    if (log_limiter().allow("fallback move"))
      spdlog::warn("dump {}: its core stays in the fallback for now: {}", r.id, e.what());
    return std::nullopt;
  }
}

}  // namespace

bool reattach_store(DumpContext& ctx) {
  if (ctx.store_dir.empty()) return false;
  std::lock_guard lock(reattach_mu());
  struct stat now{}, held{};
  if (::stat(ctx.store_dir.c_str(), &now) < 0 || !S_ISDIR(now.st_mode)) return false;  // still absent
  if (::fstat(ctx.store_dirfd, &held) == 0 && S_ISDIR(held.st_mode) && held.st_nlink > 0 &&
      held.st_dev == now.st_dev && held.st_ino == now.st_ino)
    return false;
  const UniqueFd fd(::open(ctx.store_dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) return false;
  // Atomic for every thread that holds the number: an openat() sees the old or the new directory.
  if (::dup3(fd.get(), ctx.store_dirfd, O_CLOEXEC) < 0) {
    spdlog::error("store {} appeared, but it cannot be used: dup3: {}", ctx.store_dir, std::strerror(errno));
    return false;
  }
  spdlog::info("store {} appeared (mounted or created since it was opened): using it", ctx.store_dir);
  if (ctx.index.writable()) {  // opened on what was under the mount point
    try {
      ctx.index.reopen_writable(/*again=*/true);
    } catch (const std::exception& e) {
      spdlog::warn("the index of the store that appeared cannot be opened yet: {}", e.what());
    }
  }
  return true;
}

void move_fallback_cores(DumpContext& ctx) {
  if (!ctx.fallback || !ctx.journal || !ctx.journal->has_entries()) return;
  if (store_problem(ctx.store_dirfd) || !ctx.index.writable()) return;
  PendingContents contents;
  try {
    contents = read_pending_journal(ctx.journal->dir());
  } catch (const std::exception& e) {
    spdlog::error("pending journal {}: {}", ctx.journal->path(), e.what());
    return;
  }
  std::vector<DumpRecord> moved;
  for (auto& e : contents.entries) {
    if (!core_in_fallback(e.record)) continue;
    auto done = move_one(ctx, std::move(e.record));
    if (!done) break;  // the store refuses (full?): the rest waits too
    // The record follows its core: journaled again (its last line wins), then replayed below. A
    // stop in between finds the core in the store and the record saying so.
    if (const auto error = ctx.journal->append(*done, e.why); !error.empty())
      spdlog::error("dump {}: its core was moved into the store, but the journal cannot say so: {}", done->id, error);
    ctx.stats.count(Outcome::FallbackMoved);
    if (done->state != DumpState::Failed) moved.push_back(std::move(*done));
    else if (ctx.on_final) ctx.on_final(*done);  // its journal entry: the core was lost
  }
  if (!moved.empty()) spdlog::info("moved {} core(s) from the fallback {} into the store", moved.size(), ctx.fallback->dir());
  recover_pending_records(ctx, false);
  if (ctx.on_stored)
    for (const auto& r : moved)
      if (const auto row = ctx.index.get(r.id); row && !core_in_fallback(*row)) ctx.on_stored(*row);
}

void request_store_check(DumpContext& ctx) {
  if (ctx.fallback_moving.exchange(true)) return;
  boost::asio::post(ctx.compressors, [&ctx] {
    try {
      reattach_store(ctx);
      recover_pending_records(ctx, false);
      move_fallback_cores(ctx);
    } catch (const std::exception& e) {
      spdlog::error("store check: {}", e.what());
    }
    ctx.fallback_moving = false;
  });
}

}  // namespace coredumpd
