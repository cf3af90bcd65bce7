// The server: listening socket (own or systemd's), accept loop, worker pools, signals, sd_notify.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>

#include <memory>
#include <optional>
#include <string>

#include "daemon/policy/config.h"
#include "daemon/policy/config_files.h"
#include "daemon/handshake/core_pattern.h"
#include "daemon/handshake/server_context.h"
#include "daemon/proc/collector_pool.h"
#include "daemon/report/stats.h"
#include "store/index.h"
#include "util/unique_fd.h"

namespace coredumpd {

/// Start-up options that are not part of the reloadable configuration.
struct ServerOptions {
  /// Main configuration file, re-read with its conf.d/ drop-ins on SIGHUP (load_config()).
  std::string config_file = kDefaultConfigFile;
  bool install_pattern = false;            ///< write @@socket to core_pattern, restore on exit
  /// The kernel's listening socket systemd passed (take_passed_sockets()); ownership is taken.
  /// -1: listen on config.socket_path.
  int kernel_socket_fd = -1;
};

/// Owns everything a running daemon has. Construct, then run() until a stop signal.
class Server {
 public:
  /// Opens the store (creating it if missing), recovers interrupted dumps, and listens: on the
  /// socket systemd passed (options.kernel_socket_fd) if any, else on config.socket_path. Throws std::exception
  /// subclasses with a readable message on any failure (the caller logs it and exits non-zero).
  Server(std::shared_ptr<const Config> config, ServerOptions options);
  ~Server();

  /// Serves until SIGTERM/SIGINT, then drains in-flight dumps (bounded) and returns the exit code.
  /// Starts storing the cores kept from before a stop (spool_recovery.h) first.
  int run();

  /// The dump stage's shared state: main() sets its on_stored hook before run().
  DumpContext& dump_context() { return *ctx_; }
  /// The outcome counters (any thread).
  Stats& stats() { return stats_; }
  /// The index the dump stage writes (any thread; calls take its mutex).
  Index& index() { return *index_; }
  /// True if systemd passed the kernel's socket.
  bool socket_activated() const { return !own_socket_; }
  /// The configuration in force (replaced by a SIGHUP reload); any thread.
  std::shared_ptr<const Config> config() const { return ctx_->config(); }

 private:
  void accept_next();
  void wait_signals();
  void shutdown();
  void reload();
  void watchdog_tick();
  void store_tick();  // every kStoreRecheck: a store usable again takes the pending journal

  std::shared_ptr<const Config> config_;
  ServerOptions options_;
  ArenaPool spool_memory_;  // before the pools: destroyed after their threads have stopped
  boost::asio::io_context io_;
  CollectorPool collectors_;
  boost::asio::thread_pool dumps_;
  boost::asio::thread_pool compressors_;
  UniqueFd store_dir_;
  std::unique_ptr<Index> index_;
  std::unique_ptr<PendingJournal> journal_;  // records the index could not take (record_keeper.h)
  Stats stats_;
  std::unique_ptr<ServerContext> ctx_;
  boost::asio::local::stream_protocol::acceptor acceptor_;
  boost::asio::signal_set signals_;
  boost::asio::steady_timer watchdog_;
  boost::asio::steady_timer drain_timer_;
  boost::asio::steady_timer store_timer_;
  std::uint64_t watchdog_usec_ = 0;
  bool own_socket_ = false;  ///< we created the socket file (not systemd): remove it at exit
  std::unique_ptr<CorePatternGuard> pattern_;
};

/// Opens (creating with mode 0750 if missing) the store directory, refusing symlinks. Throws
/// std::system_error.
UniqueFd open_store_dir(const std::string& path);

}  // namespace coredumpd
