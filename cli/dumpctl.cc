// Command-line parsing (CLI11) and dispatch for dumpctl.

// GCC 12 at -O2 reports a false "potential null pointer dereference" inside std::string as inlined
// into CLI11 2.1's CLI::detail::split(). The diagnostic's location is in libstdc++, so the pragma
// must precede every include; this file holds nothing but CLI11 wiring.
#pragma GCC diagnostic ignored "-Wnull-dereference"

#include "cli/dumpctl.h"

#include <CLI/CLI.hpp>

#include <algorithm>

#include "cli/analysis_commands.h"
#include "cli/commands_status.h"
#include "cli/fleet_launch.h"
#include "cli/format.h"
#include "cli/store_commands.h"
#include "cli/options.h"
#include "cli/progress.h"
#include "cli/temp_file.h"
#include "cli/time_spec.h"
#include "store/record_query.h"
#include "util/text.h"

#ifndef COREDUMPD_VERSION
#error "COREDUMPD_VERSION (CMake PROJECT_VERSION) must be defined"
#endif
#include "cli/verb_commands.h"

namespace coredumpd::cli {

namespace {

constexpr const char* kMatchHelp =
    "PID, executable path (contains '/'), FIELD=VALUE (journal field names), a dump id or unique id prefix, or "
    "COMM; several: the same field ORed, different fields ANDed";

/// -n's value, as coredumpctl 252 checks it (safe_atou(), >= 1).
std::size_t parse_rows(const std::string& v) {
  std::size_t n = 0;
  try {
    std::size_t used = 0;
    if (!v.empty() && all_digits(v)) n = std::stoul(v, &used);
  } catch (const std::exception&) {
    n = 0;
  }
  if (n < 1) throw DumpctlError("Invalid numeric parameter to -n: " + escape_for_display(v));
  return n;
}

}  // namespace

int dumpctl_main(const std::vector<std::string>& all_args, const Io& io, const ExtraVerbFactory& fleet) {
  CLI::App app{"dumpctl: list and retrieve coredumps stored by coredumpd, as coredumpctl does", "dumpctl"};
  app.fallthrough();  // options may also follow the command name (inherited by subcommands)
  app.require_subcommand(0, 1);
  app.set_version_flag("--version", std::string("dumpctl (coredumpd) ") + COREDUMPD_VERSION);

  // Arguments after "--" are the debugger's (debug), or matches that start with '-' (other verbs).
  std::vector<std::string> args = all_args;
  std::vector<std::string> after_dashes;
  if (const auto dashes = std::find(args.begin() + (args.empty() ? 0 : 1), args.end(), "--"); dashes != args.end()) {
    after_dashes.assign(dashes + 1, args.end());
    args.erase(dashes, args.end());
  }

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

  // coredumpctl's options, valid before or after any verb (getopt permutes; here: fallthrough).
  SelectOptions sel;
  std::string rows, json_mode;
  app.add_flag("-1", sel.newest_only, "Show information about the most recent entry only (implies -r)");
  CLI::Option* rows_opt = app.add_option("-n", rows, "Show at most N entries (the oldest N, or with -r the newest N)");
  app.add_flag("-r,--reverse", sel.reverse, "Show the newest entries first");
  app.add_option("-S,--since", sel.since, std::string("Only entries at or after TIME; ") + kTimeSpecHelp);
  app.add_option("-U,--until", sel.until, "Only entries at or before TIME (as --since)");
  app.add_option("-F,--field", sel.field, "Print the value of FIELD for every match, one per line (list, info)");
  CLI::Option* json_opt = app.add_option("--json", json_mode, "Print JSON: short, pretty or off");
  bool no_legend = false;
  app.add_flag("--no-legend", no_legend, "Do not print the column headers");
  app.add_flag("--no-pager", sel.no_pager, "Do not pipe output into a pager");
  app.add_flag("-q,--quiet", sel.quiet,
               "Do not print \"No coredumps found.\", the info before debug, nor progress lines (dump -o, export)");
  DumpOptions dump_opts;
  app.add_option("-o,--output", dump_opts.output,
                 "dump: write the core to FILE ('-': standard output, never a terminal); export: the archive");
  DebugOptions debug_opts;
  app.add_option("--debugger", debug_opts.debugger, "debug: the debugger to run (default: $SYSTEMD_DEBUGGER, else gdb)");
  app.add_option("-A,--debugger-arguments", debug_opts.debugger_arguments,
                 "debug: arguments for the debugger, split as a shell would");

  ListOptions list_opts;
  CLI::App* list = app.add_subcommand("list", "List coredumps, oldest first (the default command)");
  list->add_option("MATCHES", sel.matches, kMatchHelp);
  list->add_option("--container", list_opts.container,
                   "Only dumps of this container: key (docker:<id>, nspawn:NAME, host), name, or id prefix (>= 12 chars)");
  list->add_option("--signature", list_opts.signature,
                   "Only dumps with this crash signature: its hash or a prefix (dumpctl signatures lists them)");

  InfoOptions info_opts;
  CLI::App* info = app.add_subcommand("info", "Show every detail of every matching coredump (none: the newest)");
  info->add_option("MATCHES", sel.matches, kMatchHelp);
  info->add_flag("--extra", info_opts.extra,
                 "Also print all collected metadata (maps, status, mountinfo...) as JSON");

  CLI::App* dump = app.add_subcommand("dump", "Write the original core file of the newest match (none: the newest dump)");
  dump->add_option("MATCHES", sel.matches, kMatchHelp);

  CLI::App* debug = app.add_subcommand("debug", "Run a debugger on the newest match (none: the newest dump)");
  debug->alias("gdb");
  debug->add_option("MATCHES", sel.matches, kMatchHelp);
  debug->footer("Arguments after -- are passed to the debugger too, after those of -A.");

  // CLI11 reads "-1" after a verb as a positional (a negative number) unless that verb has the option.
  for (CLI::App* verb : {list, info, dump, debug})
    verb->add_flag("-1", sel.newest_only, "Show information about the most recent entry only (implies -r)");

  StatusOptions status_opts;
  CLI::App* status = app.add_subcommand(
      "status", "Show whether crashes reach coredumpd: daemon, kernel support, core_pattern, socket, usage, counters");
  status->footer(
      "Exit status: 0 nothing would lose dumps; 3 something would (the kernel lacks \"@@\", core_pattern is not "
      "coredumpd's, nothing listens on its socket: the warnings say which); 1 dumpctl's own errors.");
  status->add_flag("--json", status_opts.json, "Print a JSON object");

  const StoreCommands store_commands(app);  // du, vacuum, verify
  const AnalysisCommands analysis_commands(app, sel);  // analyze, signatures
  const VerbCommands verb_commands(app, sel);  // delete, export
  // fleet top, crashes, fetch: dumpctl-fleet's (a placeholder here, see cli/fleet_launch.h)
  const std::unique_ptr<ExtraVerb> fleet_commands = fleet ? fleet(app) : nullptr;
  CLI::App* const fleet_launcher = fleet ? nullptr : add_fleet_launcher(app);

  std::vector<const char*> argv;
  argv.reserve(args.size());
  for (const auto& a : args) argv.push_back(a.c_str());
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::ParseError& e) {
    return app.exit(e, io.out, io.err) == 0 ? 0 : 1;
  }

  if (fleet_launcher != nullptr && *fleet_launcher) return exec_fleet_program(all_args, io);  // it checks the options
  if (test_stall) {
    io.err << "dumpctl: " << kTestStallFlag << ": a test hook; a core written now stops after its first write\n";
    set_test_stall_after_first_write(true);
  }
  global.store_given = store_opt->count() > 0;
  global.query_socket_given = query_opt->count() > 0;
  try {
    if (*debug) {
      debug_opts.args = std::move(after_dashes);
    } else {
      sel.matches.insert(sel.matches.end(), after_dashes.begin(), after_dashes.end());
    }
    if (rows_opt->count() > 0) sel.max_rows = parse_rows(rows);
    if (json_opt->count() > 0) sel.json = parse_json_mode(json_mode);
    sel.legend = !no_legend;
    set_progress_enabled(!sel.quiet);  // -q: no progress line for dump -o and export
    if (sel.field && !known_field(*sel.field))
      throw DumpctlError("unknown field '" + escape_for_display(*sel.field) + "' for -F");
    if (*status) return cmd_status(global, status_opts, io);
    if (const auto rc = store_commands.run(global, io)) return *rc;
    if (const auto rc = analysis_commands.run(global, sel, io)) return *rc;
    if (fleet_commands) {
      if (const auto rc = fleet_commands->run(sel, dump_opts.output, io)) return *rc;
      throw DumpctlError(std::string(kFleetProgram) + " runs `dumpctl fleet` only: run dumpctl");
    }
    if ((*dump || *debug) && sel.field) throw DumpctlError("Option --field/-F only makes sense with list");
    if (*info) {
      info_opts.select = std::move(sel);
      return cmd_info(global, info_opts, io);
    }
    if (*dump) {
      dump_opts.select = std::move(sel);
      return cmd_dump(global, dump_opts, io);
    }
    if (*debug) {
      debug_opts.select = std::move(sel);
      return cmd_debug(global, debug_opts, io);
    }
    if (const auto rc = verb_commands.run(global, sel, dump_opts.output, io)) return *rc;
    list_opts.select = std::move(sel);
    return cmd_list(global, list_opts, io);
  } catch (const std::exception& e) {
    io.out.flush();
    io.err << "dumpctl: " << e.what() << '\n';
    return 1;
  }
}

}  // namespace coredumpd::cli
