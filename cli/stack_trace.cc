#include "cli/stack_trace.h"

#include "analysis/report_text.h"
#include "util/text.h"

namespace coredumpd::cli {

using analysis::package_string;

AnalysisText analysis_text(const DumpRecord& r, bool has_core) {
  AnalysisText out;
  if (!r.signature.empty())
    out.ours.push_back({"Signature", escape_for_display(r.signature) + " (" + escape_for_display(r.signature_text) + ")"});
  const std::optional<analysis::CrashReport> report = analysis::stored_report(r);
  if (report && report->state == "ok") {
    // coredumpctl 252: "Package: name/version" from COREDUMP_PACKAGE_NAME/_VERSION, then the
    // executable's "build-id" from COREDUMP_PACKAGE_JSON.
    if (const auto* exe = analysis::executable_module(*report, r.exe)) {
      const std::string name = package_string(exe->package, "name");
      const std::string version = package_string(exe->package, "version");
      if (!name.empty() && !version.empty())
        out.coredumpctl.push_back({"Package", escape_for_display(name) + "/" + escape_for_display(version)});
      if (!exe->build_id.empty()) out.coredumpctl.push_back({"build-id", escape_for_display(exe->build_id)});
    }
  }
  // As the journal entry says it: a core counts as stored by the record (it may be gone since).
  const bool stored = !r.path.empty() && (r.state == DumpState::Complete || r.state == DumpState::Truncated);
  out.coredumpctl.push_back({"Message", analysis::crash_message(r, report, stored, /*with_trace=*/true)});
  if (!report && has_core) out.ours.push_back({"Analysis", "not analysed yet"});
  if (report) {
    std::string notes;
    for (const auto& w : report->warnings) notes += (notes.empty() ? "" : "\n") + escape_for_display(w);
    if (report->debuginfod_used) notes += std::string(notes.empty() ? "" : "\n") + "debuginfod was asked for missing files";
    if (!notes.empty()) out.ours.push_back({"Analysis", notes});
  }
  return out;
}

std::vector<InfoField> analysis_fields(const DumpRecord& r, bool has_core) {
  if (r.analysis.is_null() && !has_core) return {};  // nothing was, or could be, analysed
  AnalysisText t = analysis_text(r, has_core);
  std::vector<InfoField> fields;
  for (auto& f : t.ours)
    if (f.label == "Signature") fields.push_back(std::move(f));
  for (auto& f : t.coredumpctl) fields.push_back(std::move(f));
  for (auto& f : t.ours)
    if (f.label == "Analysis") fields.push_back(std::move(f));
  return fields;
}

}  // namespace coredumpd::cli
