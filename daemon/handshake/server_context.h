// What every session shares: the io_context, the collector pool, the configuration, and the dump
// stage's shared state (DumpContext).
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/thread_pool.hpp>

#include <atomic>
#include <memory>
#include <stop_token>
#include <string>

#include <nlohmann/json.hpp>

#include "daemon/dump/dump_context.h"
#include "daemon/policy/config.h"
#include "daemon/proc/collector_pool.h"
#include "daemon/policy/rate_limiter.h"

namespace coredumpd {

/// Shared state of a running server. Owned by Server; sessions hold a reference, dump jobs the
/// DumpContext part.
struct ServerContext : DumpContext {
  ServerContext(boost::asio::io_context& io_, CollectorPool& collectors_, boost::asio::thread_pool& dumps_,
                boost::asio::thread_pool& compressors_, ArenaPool& spool_memory_, Index& index_, int store_dirfd_,
                std::string boot_id_, Stats& stats_, std::shared_ptr<const Config> config)
      : DumpContext(dumps_, compressors_, spool_memory_, index_, store_dirfd_, stats_), io(io_),
        collectors(collectors_), boot_id(std::move(boot_id_)), config_(std::move(config)) {}

  boost::asio::io_context& io;       ///< accept loop and handshakes; never blocks
  CollectorPool& collectors;  ///< /proc reads during handshakes (blocking; grows past stuck threads)
  std::string boot_id;
  /// Namespace inodes of the host ({"pid": ..., "mnt": ...}, read_host_namespaces()): PID 1's, or
  /// the kernel's fixed initial ones, never this daemon's own (PrivateTmp= gives it a mount namespace).
  nlohmann::json host_namespaces = nlohmann::json::object();
  std::atomic<int> in_flight{0};     ///< sessions not yet finished
  /// Requested when the server starts to stop: ends what must not delay a stop (test hooks' sleeps).
  std::stop_source stopping;
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
