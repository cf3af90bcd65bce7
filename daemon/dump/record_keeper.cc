#include "daemon/dump/record_keeper.h"

#include <sys/statvfs.h>

#include <chrono>

#include <spdlog/spdlog.h>

#include "daemon/dump/dump_job.h"
#include "daemon/dump/store_health.h"
#include "daemon/report/log_limiter.h"
#include "daemon/report/logging.h"
#include "store/pending_journal.h"
#include "store/record_extras.h"

namespace coredumpd {

namespace {

std::int64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

bool bound_for_fallback(const DumpRecord& r) {
  const auto it = r.extra.find(extras::kFallback);
  return it != r.extra.end() && it->is_object() && !it->contains("moved_us");
}

bool save_record(DumpContext& ctx, const DumpRecord& record, bool update, bool journal_if_refused) {
  // Its core goes to (or is in) the fallback: the record waits with it in the journal and follows
  // the core into the index (fallback_mover.h), never ahead of it.
  if (bound_for_fallback(record)) {
    const std::string why = record.extra.at(extras::kFallback).value("reason", std::string("store unusable"));
    const std::string journal_error = ctx.journal ? ctx.journal->append(record, why) : "no pending journal";
    if (journal_error.empty()) return true;
    ctx.stats.count(Outcome::RecordLost);
    spdlog::error("dump {}: pid {} ({}): record of a core in the fallback lost: {}", record.id, record.pid,
                  escape_for_log(record.exe), journal_error);
    return false;
  }
  if (!ctx.index.writable()) recover_pending_records(ctx, false);  // a few syscalls while unusable
  try {
    update ? ctx.index.update(record) : ctx.index.insert(record);
  } catch (const std::exception& e) {
    const std::string why = e.what();
    if (!journal_if_refused) {  // the caller records the dump otherwise (and counts it)
      spdlog::error("dump {}: index {} failed: {}", record.id, update ? "update" : "insert", why);
      return false;
    }
    const std::string journal_error = ctx.journal ? ctx.journal->append(record, why) : "no pending journal";
    const auto sig = record.signal ? signal_name(*record.signal) : std::string("signal unknown");
    ctx.stats.count(journal_error.empty() ? Outcome::Journaled : Outcome::RecordLost);
    if (journal_error.empty()) {
      if (log_limiter().allow("record journaled"))
        spdlog::warn("dump {}: pid {} ({}) {}: the index cannot take the record ({}); kept in {} until it can",
                     record.id, record.pid, escape_for_log(record.exe), sig, why, ctx.journal->path());
      return true;
    }
    spdlog::error("dump {}: pid {} ({}) {}: record lost: index {} failed: {}; {}", record.id, record.pid,
                  escape_for_log(record.exe), sig, update ? "update" : "insert", why, journal_error);
    return false;
  }
  // The index takes records again (a full store has room once more): the journal's go in first.
  if (ctx.journal && ctx.journal->has_entries()) recover_pending_records(ctx, false);
  return true;
}

std::string describe_store_state(const DumpContext& ctx, const std::string& index_note) {
  std::string out;
  if (const auto problem = store_problem(ctx.store_dirfd)) {
    out = *problem + ": cores are refused";
  } else {
    struct statvfs vfs{};
    if (::fstatvfs(ctx.store_dirfd, &vfs) == 0)
      out = "writable, " + std::to_string(static_cast<std::uint64_t>(vfs.f_bavail) * vfs.f_frsize) + " of " +
            std::to_string(static_cast<std::uint64_t>(vfs.f_blocks) * vfs.f_frsize) + " bytes free";
    else
      out = "writable";
  }
  if (!ctx.index.writable()) out += "; index not writable (" + index_note + "): records go to the pending journal";
  if (ctx.journal && ctx.journal->has_entries()) out += "; the pending journal " + ctx.journal->path() + " holds records";
  return out;
}

void recover_pending_records(DumpContext& ctx, bool at_start) {
  if (!ctx.index.writable()) {
    if (store_problem(ctx.store_dirfd)) return;  // still unusable: try again later
    try {
      ctx.index.reopen_writable();
      spdlog::info("the store is usable again: index {} opened for writing", ctx.index.path());
    } catch (const std::exception& e) {
      if (log_limiter().allow("index reopen")) spdlog::warn("the store looks usable, but the index is not: {}", e.what());
      return;
    }
  }
  if (!ctx.journal || !ctx.journal->has_entries()) return;
  try {
    const auto r = ctx.journal->replay_into(
        ctx.index, now_us(), at_start ? "coredumpd stopped while this dump was in progress" : "");
    for (const auto& s : r.skipped) spdlog::warn("pending journal {}: dropped {}", ctx.journal->path(), s);
    if (r.moved > 0) spdlog::info("moved {} record(s) from the pending journal into the index", r.moved);
    // Records whose cores are still in the fallback stay without an error (fallback_mover.h).
    if (!r.errors.empty() && log_limiter().allow("journal replay"))
      spdlog::warn("{} record(s) stay in the pending journal: {}", r.left, r.errors.front());
  } catch (const std::exception& e) {
    spdlog::error("pending journal {}: {}", ctx.journal->path(), e.what());
  }
}

}  // namespace coredumpd
