// The stack trace part of `dumpctl info` (and `dumpctl analyze`): a stored crash report
// (analysis/crash_report.h) laid out as systemd-coredump 252's coredumpctl shows it in its
// "Message:" field, plus what coredumpctl leaves out (thread names, file:line, counted caps).
#pragma once

#include <string>
#include <vector>

#include "analysis/crash_report.h"
#include "cli/info_details.h"
#include "store/dump_record.h"

namespace coredumpd::cli {

/// The module and thread lines of `report` (state "ok"), one string with '\n' between lines, every
/// byte string from the core escaped for display. systemd 252's format (src/shared/elf-util.c):
///   "Module <name> from <type> <pkg>-<version>.<arch>" (a .note.package with a name; with
///   ", build-id=<hex>" when it has no version), "Module <name>, build-id=<hex>" (no package note;
///   systemd prints no line there), "Module <name> without build-id.";
///   "Stack trace of thread <tid>:" (" (<name>)" before the colon when the name is known), frames
///   "#<n padded to 2>" "0x<pc, 16 hex>" "<function or n/a> (<module or n/a> + 0x<offset>)" and
///   " at <file>:<line>" when DWARF gave them; a blank line between threads. Past the caps:
///   "... N more frames", "(unwinding stopped: <why>)", "... N more modules not shown",
///   "... N more threads not shown".
std::string stack_trace_text(const analysis::CrashReport& report);

/// The fields `dumpctl info` shows for the analysis of `r` (a record read with Index::get(), so
/// that `analysis` is loaded), in display order:
/// - "Signature": "<hash> (<text>)" when the record has one;
/// - "Build ID" / "Package": the executable's module's build-id and .note.package name/version;
/// - "Message": "Process <pid> (<comm>) of user <uid> dumped core.", a blank line, then
///   stack_trace_text(), or "Stack trace: unavailable (<reason>)" (also when the stored report is
///   not valid), or "Stack trace: not analysed yet" when `has_core` and nothing is stored; no
///   Message at all when there is neither a core nor an analysis;
/// - "Analysis": the report's warnings, one per line, and the debuginfod note.
std::vector<InfoField> analysis_fields(const DumpRecord& r, bool has_core);

}  // namespace coredumpd::cli
