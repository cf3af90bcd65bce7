#include "daemon/handshake/server.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <boost/asio/post.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <system_error>
#include <utility>

#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "daemon/policy/config_files.h"
#include "daemon/policy/host_namespaces.h"
#include "daemon/handshake/session.h"
#include "daemon/dump/record_keeper.h"
#include "daemon/dump/spool.h"
#include "daemon/dump/spool_recovery.h"
#include "daemon/report/log_limiter.h"
#include "util/dir.h"
#include "util/time.h"

namespace coredumpd {

namespace asio = boost::asio;
using boost::system::error_code;
using local = asio::local::stream_protocol;

namespace {

// Spool block regions kept warm between dumps (arena_pool.h): one dump at a time is the common
// case, and a spool gives its blocks back when its stream ends, so two cover a crash that comes
// while the last one's stream is still draining. 12 MiB of resident memory.
constexpr std::size_t kWarmSpools = 2;

// How often an unusable store (or a non-empty pending journal) is looked at again between crashes.
constexpr std::chrono::seconds kStoreRecheck{30};

std::string read_boot_id() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  std::getline(in, id);
  id.erase(std::remove(id.begin(), id.end(), '-'), id.end());
  return id;
}

// Removes leftovers of an earlier run that died mid-dump: named temp files (only created where the
// filesystem lacks O_TMPFILE). O_TMPFILE files vanish by themselves.
void remove_partial_files(int dirfd) {
  for_each_dir_entry(dirfd, ".", [dirfd](std::string_view name) {
    if (name.starts_with(".partial-")) {
      spdlog::warn("removing partial core file {} left by an interrupted run", name);
      ::unlinkat(dirfd, name.data(), 0);  // name is NUL-terminated (see for_each_dir_entry)
    }
    return true;
  });
}

// Creates the listening socket at `path`: parent directory made root-only if we create it, a stale
// socket file replaced (anything else at the path is an error), the socket itself mode 0600. The
// kernel connects with kernel credentials, so it still reaches a 0600 socket (docs/PROTOCOL.md §2.3).
void listen_on_path(local::acceptor& acceptor, const std::string& path, int backlog) {
  const auto parent = std::filesystem::path(path).parent_path();
  if (::mkdir(parent.c_str(), 0700) < 0 && errno != EEXIST)
    throw std::system_error(errno, std::generic_category(), "creating " + parent.string());
  struct stat st{};
  if (::lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) throw std::runtime_error(path + " exists and is not a socket; refusing to replace it");
    ::unlink(path.c_str());
  }
  acceptor.open(local());
  const mode_t old_umask = ::umask(0177);
  error_code ec;
  acceptor.bind(local::endpoint(path), ec);
  ::umask(old_umask);
  if (ec) throw std::system_error(ec, "binding " + path);
  if (::chmod(path.c_str(), 0600) < 0) throw std::system_error(errno, std::generic_category(), "chmod " + path);
  acceptor.listen(backlog);
}

}  // namespace

UniqueFd open_store_dir(const std::string& path) {
  if (::mkdir(path.c_str(), 0750) < 0 && errno != EEXIST)
    throw std::system_error(errno, std::generic_category(), "creating store " + path);
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) throw std::system_error(errno, std::generic_category(), "opening store " + path);
  return fd;
}

Server::Server(std::shared_ptr<const Config> config, ServerOptions options)
    : config_(std::move(config)),
      options_(std::move(options)),
      spool_memory_(Spool::kArenaBytes, kWarmSpools),
      collectors_(static_cast<std::size_t>(config_->collector_threads)),
      dumps_(static_cast<std::size_t>(config_->dump_workers)),
      compressors_(static_cast<std::size_t>(config_->compression_jobs)),
      acceptor_(io_),
      signals_(io_, SIGTERM, SIGINT, SIGHUP),
      watchdog_(io_),
      drain_timer_(io_),
      store_timer_(io_) {
  store_dir_ = open_store_dir(config_->store_dir);
  // A read-only or full store still serves: records the index cannot take go to the journal.
  std::string index_note;
  index_ = Index::open_best(config_->store_dir, index_note);
  journal_ = std::make_unique<PendingJournal>(pending_dir_of(*config_));
  if (int n = index_->writable() ? index_->mark_in_progress_interrupted("coredumpd stopped while this dump was in progress") : 0)
    spdlog::warn("{} dump(s) were interrupted by an earlier stop; marked interrupted", n);
  remove_partial_files(store_dir_.get());
  ctx_ = std::make_unique<ServerContext>(io_, collectors_, dumps_, compressors_, spool_memory_, *index_, store_dir_.get(),
                                         read_boot_id(), stats_,
                                         config_);
  ctx_->journal = journal_.get();
  recover_pending_records(*ctx_, /*at_start=*/true);
  spdlog::info("store {}: {}", config_->store_dir, describe_store_state(*ctx_, index_note));
  // Said once: without a reference for a namespace type, crashes in it alone look like the host's.
  const HostNamespaces host_ns = read_host_namespaces();
  ctx_->host_namespaces = host_ns.inodes;
  if (host_ns.missing.empty()) spdlog::info("host namespaces: {}", host_ns.describe());
  else spdlog::warn("host namespaces: {}", host_ns.describe());

  if (const int passed = std::exchange(options_.kernel_socket_fd, -1); passed >= 0) {
    UniqueFd owned(passed);
    if (sd_is_socket_unix(passed, SOCK_STREAM, 1, nullptr, 0) <= 0)
      throw std::runtime_error("the socket systemd passed is not a listening AF_UNIX stream socket");
    acceptor_.assign(local(), owned.release());
    spdlog::info("listening on the socket passed by systemd");
  } else {
    listen_on_path(acceptor_, config_->socket_path, config_->listen_backlog);
    own_socket_ = true;
    spdlog::info("listening on {} (backlog {})", config_->socket_path, config_->listen_backlog);
  }
  if (config_->allow_unverified_peers)
    spdlog::warn("*** --allow-unverified-peers: ANY local process can submit fake dumps. For tests only. ***");
  if (options_.install_pattern) pattern_ = std::make_unique<CorePatternGuard>(config_->socket_path);
}

Server::~Server() {
  if (pattern_) pattern_->restore();
  if (own_socket_) ::unlink(config_->socket_path.c_str());
}

int Server::run() {
  // Cores received in full before a stop; on a store that refuses writes they wait for the next
  // start. Here rather than in the constructor: a recovered dump meets the on_stored hook main() set.
  if (index_->writable()) start_spool_recovery(*ctx_, *config_, ctx_->in_flight);
  // This thread accepts and acks: ahead of dump streams and compression (see kHandshakeNice).
  ::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), kHandshakeNice);
  // Off the accept thread: touching huge pages can take a cold VM tens of milliseconds.
  boost::asio::post(compressors_, [this] {
    try {
      spool_memory_.prewarm();
    } catch (const std::bad_alloc&) {
      spdlog::warn("no memory to keep spool blocks warm; each dump maps its own");
    }
  });
  // A flood's summary line is written when its window ends (log_limiter.h), from this loop.
  log_limiter().set_scheduler([this](LogLimiter::Clock::time_point when) {
    boost::asio::post(io_, [this, when] {
      auto timer = std::make_shared<boost::asio::steady_timer>(io_, when);
      timer->async_wait([timer](error_code ec) {
        if (!ec) log_limiter().flush();
      });
    });
  });
  accept_next();
  wait_signals();
  if (sd_watchdog_enabled(0, &watchdog_usec_) > 0) watchdog_tick();
  store_tick();
  sd_notifyf(0, "READY=1\nSTATUS=listening, store %s", config_->store_dir.c_str());
  io_.run();
  log_limiter().set_scheduler(nullptr);
  dumps_.join();
  compressors_.join();
  collectors_.join();
  spdlog::info("coredumpd stopped: {}", stats_.summary());
  return 0;
}

void Server::accept_next() {
  acceptor_.async_accept([this](error_code ec, local::socket socket) {
    if (ec == asio::error::operation_aborted) return;  // shutting down
    if (ec) {
      // EMFILE/ENFILE/ENOMEM: keep accepting; the kernel's queued connection stays in the backlog.
      spdlog::error("accept failed: {}", ec.message());
    } else {
      stats_.count(Outcome::Accepted);
      std::make_shared<Session>(*ctx_, std::move(socket), now_epoch_us())->start();
    }
    accept_next();
  });
}

void Server::wait_signals() {
  signals_.async_wait([this](error_code ec, int signo) {
    if (ec) return;
    if (signo == SIGHUP) {
      reload();
      return wait_signals();
    }
    spdlog::info("received {}, stopping", strsignal(signo));
    shutdown();
  });
}

// Rereads the main file and its drop-ins exactly as at start-up (load_config()). The new
// configuration applies to crashes accepted from now on; a session in flight keeps the one it
// started with (it holds its own shared_ptr). A broken file changes nothing.
void Server::reload() {
  try {
    Config base;
    base.test_hooks = config_->test_hooks;  // command line only: a reload cannot turn the hooks on
    LoadedConfig loaded = load_config(options_.config_file, base);
    Config& fresh = loaded.config;
    fresh.socket_path = config_->socket_path;  // the socket and store cannot change under a running server
    fresh.store_dir = config_->store_dir;
    fresh.pending_dir = config_->pending_dir;
    fresh.query_socket = config_->query_socket;
    fresh.allow_unverified_peers = config_->allow_unverified_peers;
    ctx_->set_config(std::make_shared<const Config>(std::move(fresh)));
    spdlog::info("SIGHUP: configuration reloaded from {} file(s): {}", loaded.sources.size(),
                 loaded.sources.empty() ? std::string("(none: built-in defaults)") : fmt::format("{}", fmt::join(loaded.sources, ", ")));
  } catch (const std::exception& e) {
    spdlog::error("SIGHUP: new configuration rejected, keeping the old one: {}", e.what());
  }
}

// Stop accepting at once (and hand core_pattern back), let in-flight dumps finish within a grace
// period, then stop the loop. A dump still running after that is marked interrupted at next start.
void Server::shutdown() {
  sd_notify(0, "STOPPING=1");
  ctx_->stopping.request_stop();  // a test hook's sleep must not hold the stop
  error_code ignored;
  acceptor_.close(ignored);
  signals_.cancel(ignored);
  watchdog_.cancel();
  if (pattern_) pattern_->restore();
  const auto give_up = std::chrono::steady_clock::now() + ctx_->config()->shutdown_grace;
  struct Poller {
    Server* s;
    std::chrono::steady_clock::time_point give_up;
    void operator()(error_code) const {
      if (s->ctx_->in_flight == 0) return s->io_.stop();
      if (std::chrono::steady_clock::now() >= give_up) {
        spdlog::warn("{} dump(s) still in flight after the grace period; exiting anyway", s->ctx_->in_flight.load());
        if (s->own_socket_) ::unlink(s->config_->socket_path.c_str());
        spdlog::info("coredumpd stopped: {}", s->stats_.summary());
        ::_exit(0);
      }
      s->drain_timer_.expires_after(std::chrono::milliseconds(50));
      s->drain_timer_.async_wait(*this);
    }
  };
  Poller{this, give_up}(error_code{});
}

void Server::store_tick() {
  store_timer_.expires_after(kStoreRecheck);
  store_timer_.async_wait([this](error_code ec) {
    if (ec) return;
    if (!index_->writable() || journal_->has_entries())
      boost::asio::post(dumps_, [ctx = ctx_.get()] { recover_pending_records(*ctx, false); });  // off the io thread
    store_tick();
  });
}

void Server::watchdog_tick() {
  sd_notify(0, "WATCHDOG=1");
  watchdog_.expires_after(std::chrono::microseconds(watchdog_usec_ / 2));
  watchdog_.async_wait([this](error_code ec) {
    if (ec) return;
    sd_notifyf(0, "STATUS=%s", stats_.summary().c_str());
    watchdog_tick();
  });
}

}  // namespace coredumpd
