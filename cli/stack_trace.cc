#include "cli/stack_trace.h"

#include "analysis/report_text.h"
#include "util/text.h"

namespace coredumpd::cli {

using analysis::CrashReport;
using analysis::package_string;
using analysis::stack_trace_text;

std::vector<InfoField> analysis_fields(const DumpRecord& r, bool has_core) {
  std::vector<InfoField> fields;
  if (r.analysis.is_null() && !has_core) return fields;  // nothing was, or could be, analysed
  if (!r.signature.empty()) {
    fields.push_back({"Signature", escape_for_display(r.signature) + " (" + escape_for_display(r.signature_text) + ")"});
  }
  std::string message = "Process " + std::to_string(r.pid) + " (" + escape_for_display(r.comm) + ") of user " +
                         std::to_string(r.uid) + " dumped core.\n\n";
  if (r.analysis.is_null()) {
    fields.push_back({"Message", message + "Stack trace: not analysed yet"});
    return fields;
  }
  CrashReport report;
  try {
    report = analysis::report_from_json(r.analysis);
  } catch (const std::exception& e) {  // the index holds what an analyzer of hostile input wrote
    report = analysis::unavailable(std::string("the stored report is not valid: ") + e.what());
  }
  if (report.state != "ok") {
    fields.push_back({"Message", message + "Stack trace: unavailable (" + escape_for_display(report.reason) + ")"});
  } else {
    if (const auto* exe = analysis::executable_module(report, r.exe)) {
      if (!exe->build_id.empty()) fields.push_back({"Build ID", escape_for_display(exe->build_id)});
      const std::string name = package_string(exe->package, "name");
      const std::string version = package_string(exe->package, "version");
      if (!name.empty() && !version.empty())
        fields.push_back({"Package", escape_for_display(name) + "/" + escape_for_display(version)});
    }
    fields.push_back({"Message", message + stack_trace_text(report)});
  }
  std::string notes;
  for (const auto& w : report.warnings) notes += (notes.empty() ? "" : "\n") + escape_for_display(w);
  if (report.debuginfod_used) notes += std::string(notes.empty() ? "" : "\n") + "debuginfod was asked for missing files";
  if (!notes.empty()) fields.push_back({"Analysis", notes});
  return fields;
}

}  // namespace coredumpd::cli
