// CLI11 wiring of `dumpctl analyze` and `signatures` (see analysis_commands.h).

// GCC 12 at -O2 reports a false "potential null pointer dereference" inside std::string as inlined
// into CLI11 2.1's CLI::detail::split() (see dumpctl.cc); this file holds nothing but CLI11 wiring.
#pragma GCC diagnostic ignored "-Wnull-dereference"

#include "cli/analysis_commands.h"

#include <CLI/CLI.hpp>

namespace coredumpd::cli {

AnalysisCommands::AnalysisCommands(CLI::App& app, SelectOptions& select) {
  analyze_ = app.add_subcommand(
      "analyze", "Analyse stored cores again (stack traces, build-ids, signature) and store the result");
  analyze_->add_option("MATCHES", select.matches,
                       "PID, executable path, FIELD=VALUE, a dump id or unique id prefix, or COMM; every match is "
                       "analysed (none: the newest dump)");
  // CLI11 reads "-1" after a verb as a positional (a negative number) unless that verb has the option.
  analyze_->add_flag("-1", select.newest_only, "Only the most recent entry (implies -r)");
  analyze_->add_option("--timeout", analyze_opts_.timeout_s, "Wall time of one analysis in seconds (default 30)");
  analyze_->add_option("--max-threads", analyze_opts_.max_threads, "Threads shown, the crashing one first (default 64)");
  analyze_->add_option("--max-frames", analyze_opts_.max_frames, "Frames kept per thread (default 64)");
  analyze_->add_option("--debuginfod", analyze_opts_.debuginfod_urls,
                       "Fetch missing debug files from these debuginfod URLs (none given: $DEBUGINFOD_URLS); "
                       "put MATCH before it or use --debuginfod=URL")
      ->expected(0, CLI::detail::expected_max_vector_size);
  analyze_->add_flag("--no-save", analyze_opts_.no_save, "Print the analysis only; never write the index");
  analyze_->add_flag("--json", analyze_opts_.json, "Print {id, saved, not_saved_reason, report} as JSON");

  signatures_ = app.add_subcommand("signatures", "Group dumps by crash signature, most frequent first");
  signatures_->add_option("-S,--since", signatures_opts_.since, "Only dumps at or after TIME (as list takes it)");
  signatures_->add_option("-U,--until", signatures_opts_.until, "Only dumps at or before TIME");
  signatures_->add_flag("--json", signatures_opts_.json, "Print a JSON array of signatures");
}

std::optional<int> AnalysisCommands::run(const GlobalOptions& g, const SelectOptions& select, const Io& io) const {
  if (*analyze_) {
    if (select.field) throw DumpctlError("Option --field/-F only makes sense with list");
    AnalyzeOptions o = analyze_opts_;
    o.select = select;
    o.debuginfod = analyze_->count("--debuginfod") > 0;  // also when given without URLs
    return cmd_analyze(g, o, io);
  }
  if (*signatures_) return cmd_signatures(g, signatures_opts_, io);
  return std::nullopt;
}

}  // namespace coredumpd::cli
