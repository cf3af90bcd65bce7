// coredumpd: receives cores from the kernel over the core_pattern "@@" socket and stores them.
#include <malloc.h>
#include <sys/prctl.h>
#include <sys/resource.h>

#include <cstdio>
#include <exception>
#include <memory>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include "daemon/policy/config.h"
#include "daemon/policy/config_files.h"
#include "daemon/policy/config_json.h"
#include "daemon/policy/config_retention.h"
#include "daemon/report/logging.h"
#include "daemon/handshake/core_pattern.h"
#include "daemon/handshake/probe.h"
#include "daemon/handshake/passed_sockets.h"
#include "daemon/handshake/server.h"
#include "daemon/query/query_server.h"
#include "daemon/handshake/daemon_status.h"
#include "daemon/dump/spool_recovery.h"
#include "daemon/analyze/analysis_queue.h"
#include "daemon/journal/journal_queue.h"
#include "daemon/journal/journal_writer.h"
#include "daemon/upload/uploader.h"
#include "util/time.h"

namespace {

// A storm queues spooled dumps for the compressors, each holding its spool's descriptors
// (max_concurrent_dumps bounds them): the soft limit systemd gives services (1024) is too few,
// the hard one (524288) is not. Raised as far as allowed; what is left is logged.
// `coredumpd --pattern=install|restore|check`: core_pattern for coredumpd.socket's ExecStartPost=/
// ExecStopPost= and the package scripts. Reads no configuration (a typo there must not keep the
// socket from starting or the pattern from going back); the socket path is --socket's, which the
// unit passes to match its ListenStream=. One line on stderr (the journal, under systemd).
// Exit status: install/restore 0 unless the arguments are wrong (leaving the pattern alone is a
// normal outcome, said on stderr); check 0 if the kernel has the "@@" protocol, 1 if not.
int pattern_command(const std::string& mode, const std::string& socket_path, const std::string& saved_file) {
  if (mode == "check") {
    const auto why = coredumpd::socket_mode_unsupported();
    std::printf("%s\n", why ? why->c_str() : "the kernel supports the core_pattern \"@@\" socket protocol");
    return why ? 1 : 0;
  }
  const auto outcome = mode == "install" ? coredumpd::install_core_pattern(socket_path, saved_file)
                                         : coredumpd::restore_core_pattern(socket_path, saved_file);
  std::fprintf(stderr, "coredumpd: %s\n", outcome.message.c_str());
  return 0;
}

void raise_fd_limit() {
  struct rlimit rl {};
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= rl.rlim_max) return;
  rl.rlim_cur = rl.rlim_max;
  if (::setrlimit(RLIMIT_NOFILE, &rl) != 0) spdlog::warn("cannot raise the open-file limit to {}", rl.rlim_max);
}

}  // namespace

int main(int argc, char** argv) {
  // If we crashed while dumping someone else, the kernel would connect to our own still-open socket
  // and wait forever for an ack we can no longer send (docs/PROTOCOL.md §3.4). Never be dumpable.
  ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  // What a dump allocates must go back to the system when it ends. glibc raises its mmap threshold
  // to the largest block freed (up to 32 MiB); from then on zstd's job buffers and the spools' read
  // buffers (1-5 MiB each, per dump) came from per-thread arenas it seldom returns, and an idle
  // daemon kept the memory of its last burst (bench/README.md, "Memory goes back to the system
  // after a burst"). A fixed threshold puts every
  // block of 1 MiB or more in a mapping of its own, unmapped when freed; the arenas hold the small
  // ones, and the last dump of a burst trims them (daemon/dump/compress_stage.cc). Fixing the threshold also fixes
  // glibc's trim threshold at 128 KiB, so that free() would shrink and regrow the heaps all the
  // time (fresh pages, costly here: arena_pool.h); the explicit trim does that job instead.
  ::mallopt(M_MMAP_THRESHOLD, 1 << 20);
  ::mallopt(M_TRIM_THRESHOLD, 64 << 20);

  coredumpd::Config defaults;
  std::optional<std::string> query_socket;
  std::string socket_path, store_dir, config_file = coredumpd::kDefaultConfigFile, log_level = "info";
  bool install_pattern = false, allow_unverified = false, probe = false, check_config = false;

  CLI::App app{"coredumpd — coredump server for the Linux core_pattern socket protocol (@@, Linux 6.17+)"};
  app.add_option("--socket", socket_path, "Socket the kernel connects to (default " + defaults.socket_path + ")");
  app.add_option("--query-socket", query_socket,
                 "Socket of the query service for users (docs/QUERY.md); \"\" turns it off (default " +
                     defaults.query_socket + ")");
  app.add_option("--store", store_dir, "Store directory for cores and the index (default " + defaults.store_dir + ")");
  app.add_option("--config", config_file,
                 "Main JSON configuration file; drop-ins are read from conf.d/*.json beside it (either may be missing)")
      ->capture_default_str();
  app.add_flag("--check-config", check_config,
               "Read the configuration (main file and drop-ins), print the effective one as JSON and exit: "
               "0 if valid, 1 with the error otherwise");
  app.add_flag("--install-pattern", install_pattern,
               "Write @@SOCKET to /proc/sys/kernel/core_pattern; restore the previous value on exit");
  std::string pattern_mode, saved_pattern_file = coredumpd::kDefaultSavedPatternFile;
  app.add_option("--pattern", pattern_mode,
                 "install: point core_pattern at --socket if the kernel supports it, saving the current one; "
                 "restore: put the saved one back if the pattern is still ours; check: say whether the kernel "
                 "supports it. Then exit (coredumpd.socket runs install and restore)")
      ->check(CLI::IsMember({"install", "restore", "check"}));
  app.add_option("--pattern-saved", saved_pattern_file, "Where --pattern=install saves the pattern it replaces")
      ->capture_default_str();
  app.add_flag("--allow-unverified-peers", allow_unverified,
               "Accept peers that are not crashing tasks (fake-kernel tests only; insecure)");
  // Test hooks: off unless this flag is given (then logged as a warning); a "testing" section in a
  // configuration file is refused without it.
  bool test_hooks = false, hold_before_store = false;
  CLI::Option* test_hooks_flag = app.add_flag(coredumpd::kEnableTestHooksFlag, test_hooks,
      "Tests only: allow the test hooks (the \"testing\" configuration section, --test-hold-before-store)");
  app.add_flag("--test-hold-before-store", hold_before_store,
               "Tests only: stop every dump once its core has arrived, before it is stored (to kill the daemon then)")
      ->needs(test_hooks_flag);
  // A simulated kernel for the support check (--pattern, --install-pattern): tests/systemd/pattern.sh.
  coredumpd::KernelFacts kernel_facts;
  app.add_option("--test-core-modes", kernel_facts.core_modes_path,
                 "Tests only: read this file instead of /proc/sys/kernel/core_modes")
      ->needs(test_hooks_flag);
  app.add_option("--test-kernel-release", kernel_facts.release, "Tests only: take this as the kernel release (uname -r)")
      ->needs(test_hooks_flag);
  app.add_flag("--probe", probe, "Print what the running kernel supports (JSON) and exit");
  app.add_option("--log-level", log_level, "trace, debug, info, warning, error")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  if (test_hooks) coredumpd::set_default_kernel_facts(kernel_facts);

  if (!pattern_mode.empty()) {
    if (test_hooks) std::fprintf(stderr, "coredumpd: *** test hooks are on: simulated kernel %s, %s ***\n",
                                 kernel_facts.release.empty() ? "(running release)" : kernel_facts.release.c_str(),
                                 kernel_facts.core_modes_path.c_str());
    try {
      return pattern_command(pattern_mode, socket_path.empty() ? defaults.socket_path : socket_path, saved_pattern_file);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "coredumpd: %s\n", e.what());
      return 1;
    }
  }

  try {
    coredumpd::setup_logging(log_level);
    defaults.test_hooks = test_hooks;
    auto loaded = coredumpd::load_config(config_file, defaults);
    coredumpd::Config& config = loaded.config;
    if (!socket_path.empty()) config.socket_path = socket_path;
    if (!store_dir.empty()) config.store_dir = store_dir;
    if (query_socket) config.query_socket = *query_socket;
    config.allow_unverified_peers = allow_unverified;
    coredumpd::set_hold_before_store(hold_before_store);
    if (test_hooks)
      spdlog::warn("*** {}: test hooks are on (collector delay {} ms{}{}, hold before store: {}). For tests only. ***",
                   coredumpd::kEnableTestHooksFlag, config.test_collector_delay.count(),
                   config.test_collector_delay_in.empty() ? "" : " in ", config.test_collector_delay_in,
                   hold_before_store ? "on" : "off");

    if (check_config) {
      coredumpd::require_usable_socket_path(config.socket_path);  // the kernel must be able to use it
      // The JSON alone on stdout, so it can be piped; what was read goes to stderr.
      std::printf("%s\n", coredumpd::config_to_json(config).dump(2).c_str());
      if (loaded.sources.empty()) std::fprintf(stderr, "coredumpd: no configuration file (%s): built-in defaults\n", config_file.c_str());
      for (const auto& s : loaded.sources) std::fprintf(stderr, "coredumpd: read %s\n", s.c_str());
      std::fprintf(stderr, "coredumpd: %s\n",
                   coredumpd::describe_retention(config.retention, config.defaults.max_core_bytes, config.store_dir).c_str());
      return 0;
    }
    if (probe) {
      std::printf("%s\n", coredumpd::probe_kernel(config.store_dir, config.close_files_bit).dump(2).c_str());
      return 0;
    }

    // A path the kernel cannot connect to would lose every crash: refuse it before listening on it.
    coredumpd::require_usable_socket_path(config.socket_path);
    if (loaded.sources.empty()) spdlog::info("no configuration file {}: built-in defaults", config_file);
    for (const auto& s : loaded.sources) spdlog::info("configuration read from {}", s);
    spdlog::info("{}", coredumpd::describe_retention(config.retention, config.defaults.max_core_bytes, config.store_dir));

    const std::int64_t started_us = coredumpd::now_epoch_us();
    // Once, before either socket is used: the kernel's and the query service's, by name.
    const coredumpd::PassedSockets passed = coredumpd::take_passed_sockets();
    coredumpd::ServerOptions options;
    options.config_file = config_file;
    options.install_pattern = install_pattern;
    options.kernel_socket_fd = passed.kernel;
    raise_fd_limit();
    const std::string query_socket_path = config.query_socket;
    coredumpd::Server server(std::make_shared<const coredumpd::Config>(std::move(config)), std::move(options));
    // The query service: its own socket and thread, after the server (it reads the store the server
    // opened) and stopped before the server's index goes away.
    std::unique_ptr<coredumpd::QueryServer> query;
    if (passed.query >= 0 || !query_socket_path.empty()) {
      coredumpd::QueryServerOptions q;
      q.store_dir = server.config()->store_dir;
      q.passed_fd = passed.query;
      q.socket_path = query_socket_path;
      q.stats = &server.stats();
      // Crashes are handled without it: a socket that cannot be had costs users their queries only.
      try {
        query = std::make_unique<coredumpd::QueryServer>(std::move(q));
      } catch (const std::exception& e) {
        spdlog::error("query service off: {}", e.what());
      }
    }
    if (query) {
      query->set_status([&server, &query, started_us] {
        return coredumpd::daemon_status(server, query->socket_path(), started_us);
      });
    } else if (passed.query < 0 && query_socket_path.empty()) {
      spdlog::info("query service off (query_socket \"\")");
    }
    // The analysis of stored cores: its own thread, fed by the dump stage once a core is stored.
    // Always created, so that a reload can turn analysis.enabled on or off; after the server, so
    // it stops (killing a running analyzer) before the index it writes goes away.
    auto& dumps = server.dump_context();
    // One journal entry per crash, once its record is final: its own thread, fed by the dump stage
    // (on_final: no core to analyse) and by the analysis queue (a stored core's entry waits for
    // its stack trace). Created before the analysis queue, so that it outlives it.
    coredumpd::journal::JournaldSink journald;
    coredumpd::journal::JournalQueue journal(journald, dumps.stats, server.config()->store_dir, dumps.store_dirfd,
                                             [&server] { return server.config()->journal; });
    // Uploads to S3 and the fleet index (issue 26): their own threads, at idle priority, fed from
    // the durable queue in the index; woken when a record is final or its analysis ended (the
    // signature "core-if-new-signature" waits for). Idle while upload.endpoint is "". Created before
    // the analysis queue, so that it outlives its completions.
    coredumpd::upload::Uploader uploader(dumps.index, dumps.store_dirfd, dumps.stats, [&server] { return server.config(); },
                                         server.config()->upload.concurrency);
    coredumpd::AnalysisQueue analysis(
        {dumps.index, dumps.store_dirfd, dumps.stats}, [&server] { return server.config()->analysis; },
        [&journal, &uploader](const std::string& id, const coredumpd::analysis::CrashReport* report) {
          journal.analysis_done(id, report);
          uploader.wake();
        });
    dumps.on_stored = [&analysis, &journal, &uploader](const coredumpd::DumpRecord& r) {
      journal.await_analysis(r);  // before the analysis is queued: it may end at once
      if (!analysis.submit(r)) journal.analysis_done(r.id, nullptr);  // disabled, full: sent now
      uploader.wake();
    };
    dumps.on_final = [&journal, &uploader](const coredumpd::DumpRecord& r) {
      journal.submit(r);
      uploader.wake();
    };
    analysis.submit_unanalysed();  // what a stop left unanalysed, newest first
    if (query) query->start();
    const int rc = server.run();
    if (query) query->stop();
    analysis.stop();
    journal.stop();  // after the analysis: what waited for it is sent, without its stack trace
    uploader.stop();  // a part on its way is cut short; its upload resumes at the next start
    return rc;
  } catch (const std::exception& e) {
    if (!check_config) spdlog::critical("coredumpd: {}", e.what());
    std::fprintf(stderr, "coredumpd: %s\n", e.what());
    return 1;
  }
}
