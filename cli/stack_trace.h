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

/// The fields `dumpctl info` shows for the analysis of `r` (a record read with Index::get(), so
/// that `analysis` is loaded), in display order:
/// - "Signature": "<hash> (<text>)" when the record has one;
/// - "Build ID" / "Package": the executable's module's build-id and .note.package name/version;
/// - "Message": "Process <pid> (<comm>) of user <uid> dumped core.", a blank line, then
///   analysis::stack_trace_text(), or "Stack trace: unavailable (<reason>)" (also when the stored report is
///   not valid), or "Stack trace: not analysed yet" when `has_core` and nothing is stored; no
///   Message at all when there is neither a core nor an analysis;
/// - "Analysis": the report's warnings, one per line, and the debuginfod note.
std::vector<InfoField> analysis_fields(const DumpRecord& r, bool has_core);

}  // namespace coredumpd::cli
