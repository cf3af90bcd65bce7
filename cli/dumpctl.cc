// Command-line parsing (CLI11) and dispatch for dumpctl.

// GCC 12 at -O2 reports a false "potential null pointer dereference" inside std::string as inlined
// into CLI11 2.1's CLI::detail::split(). The diagnostic's location is in libstdc++, so the pragma
// must precede every include; this file holds nothing but CLI11 wiring.
#pragma GCC diagnostic ignored "-Wnull-dereference"

#include "cli/dumpctl.h"

#include <CLI/CLI.hpp>

#include "cli/analysis_commands.h"
#include "cli/commands_status.h"
#include "cli/format.h"
#include "cli/store_commands.h"
#include "cli/temp_file.h"
#include "cli/verb_commands.h"

namespace coredumpd::cli {

namespace {

constexpr const char* kMatchHelp =
    "dump id, unique id prefix, PID, executable path or COMM; the newest match wins";

}  // namespace

int dumpctl_main(const std::vector<std::string>& args, const Io& io) {
  CLI::App app{"dumpctl: list and retrieve coredumps stored by coredumpd", "dumpctl"};
  app.fallthrough();  // --store may also follow the command name (inherited by subcommands)
  app.require_subcommand(0, 1);

  GlobalOptions global;
  CLI::Option* store_opt =
      app.add_option("--store", global.store, "coredumpd store directory, read directly (root's default)")
          ->capture_default_str();
  CLI::Option* query_opt =
      app.add_option("--query-socket", global.query_socket,
                     "coredumpd's query service: where users who are not root read their own dumps (giving it makes "
                     "root use it too)")
          ->capture_default_str();
  app.add_option("--pending-dir", global.pending_dir,
                 "coredumpd's pending journal: records a read-only or full store could not take yet (list shows them)")
      ->capture_default_str();
  bool test_stall = false;  // hidden (no group): a test hook, not for users
  app.add_flag(kTestStallFlag, test_stall, "Tests only: stop after the first write of a core, until killed")->group("");

  ListOptions list_opts;
  CLI::App* list = app.add_subcommand("list", "List coredumps, oldest first (the default command)");
  list->add_flag("--json", list_opts.json, "Print a JSON array of records");
  list->add_flag("-r,--reverse", list_opts.reverse, "Newest first");
  list->add_option("-S,--since", list_opts.since,
                   "Only dumps at or after TIME (YYYY-MM-DD [HH:MM[:SS]], @SECONDS, today, ...)");
  list->add_option("-U,--until", list_opts.until, "Only dumps at or before TIME");
  list->add_option("--container", list_opts.container,
                   "Only dumps of this container: key (docker:<id>, nspawn:NAME, host), name, or id prefix (>= 12 chars)");
  list->add_option("--signature", list_opts.signature,
                   "Only dumps with this crash signature: its hash or a prefix (dumpctl signatures lists them)");

  InfoOptions info_opts;
  CLI::App* info = app.add_subcommand("info", "Show every detail of one coredump");
  info->add_option("MATCH", info_opts.match, std::string(kMatchHelp) + " (default: newest dump)");
  info->add_flag("--json", info_opts.json, "Print the record as JSON");
  info->add_flag("--extra", info_opts.extra,
                 "Also print all collected metadata (maps, status, mountinfo...) as JSON");

  DumpOptions dump_opts;
  CLI::App* dump = app.add_subcommand("dump", "Write the original core file");
  dump->add_option("MATCH", dump_opts.match, kMatchHelp)->required();
  dump->add_option("-o,--output", dump_opts.output,
                   "Output file; '-' or none: standard output (never a terminal)");

  DebugOptions debug_opts;
  CLI::App* debug = app.add_subcommand("debug", "Run a debugger on a coredump");
  debug->add_option("MATCH", debug_opts.match, kMatchHelp)->required();
  debug->add_option("--debugger", debug_opts.debugger, "Debugger to run")->capture_default_str();
  debug->add_option("ARGS", debug_opts.args, "Extra debugger arguments, after --");

  StatusOptions status_opts;
  CLI::App* status = app.add_subcommand(
      "status", "Show whether crashes reach coredumpd: daemon, kernel support, core_pattern, socket, usage, counters");
  status->footer(
      "Exit status: 0 nothing would lose dumps; 3 something would (the kernel lacks \"@@\", core_pattern is not "
      "coredumpd's, nothing listens on its socket: the warnings say which); 1 dumpctl's own errors.");
  status->add_flag("--json", status_opts.json, "Print a JSON object");

  const StoreCommands store_commands(app);  // du, vacuum, verify
  const AnalysisCommands analysis_commands(app);  // analyze, signatures
  const VerbCommands verb_commands(app);  // delete, export

  std::vector<const char*> argv;
  argv.reserve(args.size());
  for (const auto& a : args) argv.push_back(a.c_str());
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::ParseError& e) {
    return app.exit(e, io.out, io.err) == 0 ? 0 : 1;
  }

  if (test_stall) {
    io.err << "dumpctl: " << kTestStallFlag << ": a test hook; a core written now stops after its first write\n";
    set_test_stall_after_first_write(true);
  }
  global.store_given = store_opt->count() > 0;
  global.query_socket_given = query_opt->count() > 0;
  try {
    if (*status) return cmd_status(global, status_opts, io);
    if (*info) return cmd_info(global, info_opts, io);
    if (*dump) return cmd_dump(global, dump_opts, io);
    if (*debug) return cmd_debug(global, debug_opts, io);
    if (const auto rc = store_commands.run(global, io)) return *rc;
    if (const auto rc = analysis_commands.run(global, io)) return *rc;
    if (const auto rc = verb_commands.run(global, io)) return *rc;
    return cmd_list(global, list_opts, io);
  } catch (const std::exception& e) {
    io.out.flush();
    io.err << "dumpctl: " << e.what() << '\n';
    return 1;
  }
}

}  // namespace coredumpd::cli
