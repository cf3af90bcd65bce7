// What every session shares: the io_context, worker pools, the store and the configuration.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/thread_pool.hpp>

#include <atomic>
#include <mutex>

#include <nlohmann/json.hpp>
#include <memory>
#include <string>

#include "daemon/arena_pool.h"
#include "daemon/config.h"
#include "daemon/rate_limiter.h"
#include "daemon/stats.h"
#include "daemon/store/index.h"

namespace coredumpd {

/// Shared state of a running server. Owned by Server; sessions hold a reference.
struct ServerContext {
  ServerContext(boost::asio::io_context& io_, boost::asio::thread_pool& collectors_, boost::asio::thread_pool& dumps_,
                boost::asio::thread_pool& compressors_, ArenaPool& spool_memory_, Index& index_, int store_dirfd_,
                std::string boot_id_, Stats& stats_, std::shared_ptr<const Config> config)
      : io(io_), collectors(collectors_), dumps(dumps_), compressors(compressors_), spool_memory(spool_memory_), index(index_),
        store_dirfd(store_dirfd_), boot_id(std::move(boot_id_)), stats(stats_), config_(std::move(config)) {}

  boost::asio::io_context& io;       ///< accept loop and handshakes; never blocks
  boost::asio::thread_pool& collectors;  ///< /proc reads during handshakes (blocking, bounded)
  boost::asio::thread_pool& dumps;   ///< draining core streams into spools (blocking reads)
  boost::asio::thread_pool& compressors;  ///< compressing spools into the store (CPU, lower priority)
  ArenaPool& spool_memory;           ///< the spools' blocks, kept warm between dumps
  Index& index;
  int store_dirfd;                   ///< the store directory, opened O_DIRECTORY|O_NOFOLLOW
  std::string boot_id;
  /// Namespace inodes of PID 1 ({"pid": ..., "mnt": ...}): "the host", even when this daemon runs
  /// in namespaces of its own (systemd's PrivateTmp= gives it a mount namespace).
  nlohmann::json host_namespaces = nlohmann::json::object();
  Stats& stats;
  std::atomic<int> in_flight{0};     ///< sessions not yet finished
  std::mutex vacuum_mu;              ///< vacuum() calls on the store must not overlap
  std::atomic<int> dumps_in_flight{0};  ///< dump jobs queued or running (bounded by max_concurrent_dumps)
  /// Rules' rate limits (Policy::rate_limit), counted across sessions; survives config reloads.
  DumpRateLimiter rate_limiter;

  /// The configuration in force; a snapshot is taken per session, so a reload never changes a
  /// dump half-way.
  std::shared_ptr<const Config> config() const { return std::atomic_load(&config_); }
  void set_config(std::shared_ptr<const Config> c) { std::atomic_store(&config_, std::move(c)); }

 private:
  std::shared_ptr<const Config> config_;
};

}  // namespace coredumpd
