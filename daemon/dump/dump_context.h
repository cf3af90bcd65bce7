// What every dump job shares: the pools it runs on, the spool memory, the store and the counters.
#pragma once

#include <boost/asio/thread_pool.hpp>

#include <atomic>
#include <functional>
#include <mutex>

#include "daemon/dump/arena_pool.h"
#include "daemon/dump/dump_budget.h"
#include "daemon/report/stats.h"
#include "store/index.h"
#include "store/pending_journal.h"

namespace coredumpd {

/// The part of the server's shared state that the dump stage uses. The server's ServerContext
/// (daemon/handshake/server_context.h) extends it with what only handshakes need.
struct DumpContext {
  DumpContext(boost::asio::thread_pool& dumps_, boost::asio::thread_pool& compressors_, ArenaPool& spool_memory_,
              Index& index_, int store_dirfd_, Stats& stats_)
      : dumps(dumps_), compressors(compressors_), spool_memory(spool_memory_), index(index_),
        store_dirfd(store_dirfd_), stats(stats_) {}

  boost::asio::thread_pool& dumps;        ///< draining core streams into spools (blocking reads)
  boost::asio::thread_pool& compressors;  ///< compressing spools into the store (CPU, lower priority)
  ArenaPool& spool_memory;                ///< the spools' blocks, kept warm between dumps
  Index& index;
  int store_dirfd;                        ///< the store directory, opened O_DIRECTORY|O_NOFOLLOW
  Stats& stats;
  std::mutex vacuum_mu;                   ///< vacuum() calls on the store must not overlap
  std::atomic<int> dumps_in_flight{0};    ///< dump jobs queued or running
  /// What the dumps in flight hold (memory, disk, count); crashes wait here for room (dump_budget.h).
  DumpBudget budget;
  /// Where records go that the index cannot take (record_keeper.h); nullptr: nowhere.
  PendingJournal* journal = nullptr;
  /// Called with the saved record of each dump whose core is now in the store (Complete or
  /// Truncated, path set), on the compressor pool after the task was released: the analysis
  /// queue (daemon/analyze/) takes it from here. Must not block or throw. Empty: nothing.
  /// Set before the first dump (main.cc), never changed while dumps run.
  std::function<void(const DumpRecord&)> on_stored;
  /// Called with each other dump's final record: every crash whose record is final and was not
  /// handed to on_stored (no core stored: failed, metadata-only, rejected, forwarded; or on_stored
  /// empty), once, after the record was saved or refused. On the dump or compressor pool, never
  /// the io thread. Each dump's final record goes to exactly one of on_stored and on_final: the
  /// journal entry (daemon/journal/) is written from there. Must not block or throw. Empty:
  /// nothing. Set before the first dump (main.cc), never changed while dumps run.
  std::function<void(const DumpRecord&)> on_final;
};

}  // namespace coredumpd
