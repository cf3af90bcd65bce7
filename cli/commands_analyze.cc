// `dumpctl analyze`: the crash analysis again, on demand (after installing debug symbols, or
// with debuginfod), saved to the index when it is writable.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <sstream>

#include "cli/analysis_commands.h"
#include "cli/core_file.h"
#include "cli/dump_source.h"
#include "cli/info_details.h"
#include "cli/json_output.h"
#include "cli/options.h"
#include "cli/stack_trace.h"
#include "store/index.h"
#include "store/record_extras.h"
#include "util/text.h"
#include "util/unique_fd.h"

namespace coredumpd::cli {

namespace {

/// $DEBUGINFOD_URLS split at blanks (elfutils' syntax).
std::vector<std::string> env_debuginfod_urls() {
  std::vector<std::string> urls;
  const char* env = std::getenv("DEBUGINFOD_URLS");
  std::istringstream in(env ? env : "");
  for (std::string u; in >> u;) urls.push_back(u);
  return urls;
}

/// Why a freshly made report is not stored over what `stored` holds, or "".
std::string keep_stored_reason(const DumpRecord& stored, const analysis::CrashReport& fresh) {
  if (fresh.state == "ok" || !stored.analysis.is_object()) return "";
  const auto state = stored.analysis.find("state");
  if (state != stored.analysis.end() && *state == "ok")
    return "the stored analysis (state ok) is kept over this unavailable one";
  return "";
}

}  // namespace

analysis::AnalyzerOptions analyzer_options(const AnalyzeOptions& o) {
  analysis::AnalyzerOptions opts;
  if (o.timeout_s) {
    if (!(*o.timeout_s > 0) || *o.timeout_s > 86400) throw DumpctlError("--timeout must be between 0 and 86400 seconds");
    opts.wall_timeout = std::chrono::milliseconds(static_cast<std::int64_t>(*o.timeout_s * 1000));
    // RLIMIT_CPU may not end the analysis before the wall timeout does.
    opts.cpu_seconds = std::max<std::uint32_t>(opts.cpu_seconds, static_cast<std::uint32_t>(*o.timeout_s) + 1);
  }
  if (o.max_threads) opts.max_threads = *o.max_threads;
  if (o.max_frames) opts.max_frames = *o.max_frames;
  if (opts.max_threads == 0 || opts.max_frames == 0) throw DumpctlError("--max-threads and --max-frames must be at least 1");
  if (o.debuginfod) {
    for (const auto& u : o.debuginfod_urls)  // CLI11 gives "" for a bare --debuginfod
      if (!u.empty()) opts.debuginfod_urls.push_back(u);
    if (opts.debuginfod_urls.empty()) opts.debuginfod_urls = env_debuginfod_urls();
    if (opts.debuginfod_urls.empty())
      throw DumpctlError("--debuginfod needs URLs: give them after it (--debuginfod=URL) or in DEBUGINFOD_URLS");
    for (const auto& u : opts.debuginfod_urls)
      if (u.find("://") == std::string::npos)
        throw DumpctlError("--debuginfod: '" + escape_for_display(u) +
                           "' is not a URL (a MATCH goes before --debuginfod, or use --debuginfod=URL)");
  }
  if (const char* tmp = std::getenv("TMPDIR"); tmp && *tmp) opts.temp_dir = tmp;
  if (::geteuid() != 0) {  // only root can drop to nobody; a user's analyzer runs as the user
    opts.run_as_uid = ::getuid();
    opts.run_as_gid = ::getgid();
  }
  return opts;
}

int cmd_analyze(const GlobalOptions& g, const AnalyzeOptions& o, const Io& io) {
  const analysis::AnalyzerOptions opts = analyzer_options(o);
  const std::unique_ptr<DumpSource> reader = open_source(g, io.err);
  SelectOptions sel = o.select;
  if (sel.matches.empty()) {  // as info: without a match, the newest dump only
    sel.newest_only = true;
    sel.max_rows.reset();
  }
  std::vector<std::string> ids;  // every id before the first (slow) analysis; no get() inside a scan
  for_each_selected(*reader, query_of(sel, *reader), sel, {}, [&](DumpRecord&& r) { ids.push_back(std::move(r.id)); });
  if (ids.empty()) throw DumpctlError("No match found.");

  std::unique_ptr<Index> writer;
  std::string not_writable = "--no-save";
  if (!o.no_save && reader->kind() == SourceKind::Service) {
    not_writable = "read through coredumpd's query service; only root stores analyses";
  } else if (!o.no_save) {
    try {
      writer = std::make_unique<Index>(g.store, /*writable=*/true);
    } catch (const std::exception& e) {
      not_writable = std::string("the index is not writable (") + e.what() + ")" +
                     (::geteuid() != 0 ? "; run as root to store it" : "");
    }
  }

  int rc = 0;
  auto json_out = nlohmann::json::array();
  for (const auto& id : ids) {
    const std::optional<DumpRecord> got = reader->get(id);
    if (!got) throw DumpctlError("dump " + id + " disappeared from the index (vacuumed?)");
    const DumpRecord& r = *got;
    reader->require_core(r);
    const OpenCore core = reader->open_core(r);

    analysis::AnalyzerInput input;
    input.core_fd = core.fd.get();
    input.compression = core.compression;
    input.signal = r.signal;
    input.crashing_tid = r.crashing_tid_ns;
    if (r.extra.is_object() && r.extra.contains(extras::kThreadNames)) input.thread_names = r.extra[extras::kThreadNames];
    const analysis::CrashReport report = analysis::run_analyzer(input, opts);
    const nlohmann::json report_json = analysis::to_json(report);
    if (report.state != "ok") rc = 1;

    std::string not_saved = writer ? keep_stored_reason(r, report) : not_writable;
    if (not_saved.empty() && !writer->set_analysis(r.id, report_json, report.signature, report.signature_text))
      not_saved = "the dump is no longer in the index";
    if (!not_saved.empty() && !o.no_save)
      io.err << "dumpctl: " << escape_for_display(r.id) << ": analysis not saved: " << escape_for_display(not_saved) << '\n';

    if (o.json) {
      json_out.push_back({{"id", r.id}, {"saved", not_saved.empty()},
                          {"not_saved_reason", not_saved.empty() ? nlohmann::json(nullptr) : nlohmann::json(not_saved)},
                          {"report", report_json}});
      continue;
    }
    DumpRecord shown = r;
    shown.analysis = report_json;
    shown.signature = report.signature;
    shown.signature_text = report.signature_text;
    print_info_field(io.out, "ID", escape_for_display(r.id));
    for (const auto& f : analysis_fields(shown, true)) print_info_field(io.out, f.label, f.value);
    print_info_field(io.out, "Saved", not_saved.empty() ? "yes" : "no (" + escape_for_display(not_saved) + ")");
    if (&id != &ids.back()) io.out << '\n';
  }
  if (o.json) print_json(json_out.size() == 1 ? json_out[0] : json_out, io);
  return io.out ? rc : 1;
}

}  // namespace coredumpd::cli
