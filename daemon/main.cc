// coredumpd: receives cores from the kernel over the core_pattern "@@" socket and stores them.
#include <sys/prctl.h>

#include <cstdio>
#include <exception>
#include <memory>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include "daemon/config.h"
#include "daemon/logging.h"
#include "daemon/probe.h"
#include "daemon/server.h"

int main(int argc, char** argv) {
  // If we crashed while dumping someone else, the kernel would connect to our own still-open socket
  // and wait forever for an ack we can no longer send (spec §1.6). Never be dumpable.
  ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);

  coredumpd::Config defaults;
  std::string socket_path, store_dir, config_file, log_level = "info";
  bool install_pattern = false, allow_unverified = false, probe = false;

  CLI::App app{"coredumpd — coredump server for the Linux core_pattern socket protocol (@@, Linux 6.17+)"};
  app.add_option("--socket", socket_path, "Socket the kernel connects to (default " + defaults.socket_path + ")");
  app.add_option("--store", store_dir, "Store directory for cores and the index (default " + defaults.store_dir + ")");
  app.add_option("--config", config_file, "JSON configuration file")->check(CLI::ExistingFile);
  app.add_flag("--install-pattern", install_pattern,
               "Write @@SOCKET to /proc/sys/kernel/core_pattern; restore the previous value on exit");
  app.add_flag("--allow-unverified-peers", allow_unverified,
               "Accept peers that are not crashing tasks (fake-kernel tests only; insecure)");
  app.add_flag("--probe", probe, "Print what the running kernel supports (JSON) and exit");
  app.add_option("--log-level", log_level, "trace, debug, info, warning, error")->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  try {
    coredumpd::setup_logging(log_level);
    coredumpd::Config config = defaults;
    if (!config_file.empty()) config = coredumpd::load_config_file(config_file, config);
    if (!socket_path.empty()) config.socket_path = socket_path;
    if (!store_dir.empty()) config.store_dir = store_dir;
    config.allow_unverified_peers = allow_unverified;

    if (probe) {
      std::printf("%s\n", coredumpd::probe_kernel(config.store_dir, config.close_files_bit).dump(2).c_str());
      return 0;
    }

    coredumpd::ServerOptions options;
    if (!config_file.empty()) options.config_file = config_file;
    options.install_pattern = install_pattern;
    coredumpd::Server server(std::make_shared<const coredumpd::Config>(std::move(config)), std::move(options));
    return server.run();
  } catch (const std::exception& e) {
    spdlog::critical("coredumpd: {}", e.what());
    std::fprintf(stderr, "coredumpd: %s\n", e.what());
    return 1;
  }
}
