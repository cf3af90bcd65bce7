// The stack trace part of `dumpctl info` (and `dumpctl analyze`): a stored crash report
// (analysis/crash_report.h) laid out as systemd-coredump 252's coredumpctl shows it in its
// "Message:" field (the text itself: analysis/report_text.h, shared with the daemon's journal
// entries), plus what coredumpctl leaves out (thread names, file:line, counted caps).
#pragma once

#include <string>
#include <vector>

#include "analysis/crash_report.h"
#include "cli/info_details.h"
#include "store/dump_record.h"

namespace coredumpd::cli {

/// What `dumpctl info` shows of a record's analysis, split as the text is laid out: coredumpctl's
/// lines where coredumpctl 252's print_info() puts them, ours after coredumpctl's.
struct AnalysisText {
  /// coredumpctl's labels, in its order: "Package" (".note.package" name/version of the
  /// executable's module), "build-id" (its build-id), "Message" (always there).
  std::vector<InfoField> coredumpctl;
  /// Ours: "Signature" ("<hash> (<text>)") and "Analysis" (the report's warnings, the debuginfod
  /// note, or "not analysed yet"), when there are any.
  std::vector<InfoField> ours;
};

/// The analysis of `r` (a record read with Index::get(), so that `analysis` is loaded) as
/// `info` shows it; `has_core` says its core file is there now. "Message" is
/// analysis::crash_message() (the journal entry's MESSAGE: "Process <pid> (<comm>) of user <uid>
/// dumped core.", the stack trace or "Stack trace: unavailable (<reason>)"; "... terminated
/// abnormally without generating a coredump." and the state when no core was stored), exactly as
/// the journal entry has it; "Analysis" says "not analysed yet" when `has_core` and no report
/// is stored yet.
AnalysisText analysis_text(const DumpRecord& r, bool has_core);

/// The fields `dumpctl analyze` shows for the analysis of `r`, in display order: "Signature",
/// "build-id", "Package", "Message" and "Analysis" as analysis_text() gives them; nothing at all
/// when there is neither a core (`has_core`) nor an analysis.
std::vector<InfoField> analysis_fields(const DumpRecord& r, bool has_core);

}  // namespace coredumpd::cli
