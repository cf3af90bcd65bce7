// A crash report (crash_report.h) as text, laid out as systemd-coredump 252 writes the stack trace
// into its journal entry's MESSAGE (and coredumpctl shows it as "Message:"). Shared by `dumpctl
// info`/`dumpctl analyze` (cli/stack_trace.h) and the daemon's journal entries (daemon/journal/).
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "analysis/crash_report.h"
#include "store/dump_record.h"

namespace coredumpd::analysis {

/// The module and thread lines of `report` (state "ok"), one string with '\n' between lines, every
/// byte string from the core escaped for display (util/text.h). systemd 252's format
/// (src/shared/elf-util.c):
///   "Module <name> from <type> <pkg>-<version>.<arch>" (a .note.package with a name; with
///   ", build-id=<hex>" when it has no version), "Module <name>, build-id=<hex>" (no package note;
///   systemd prints no line there), "Module <name> without build-id.";
///   "Stack trace of thread <tid>:" (" (<name>)" before the colon when the name is known), frames
///   "#<n padded to 2>" "0x<pc, 16 hex>" "<function or n/a> (<module or n/a> + 0x<offset>)" and
///   " at <file>:<line>" when DWARF gave them; a blank line between threads. Past the caps:
///   "... N more frames", "(unwinding stopped: <why>)", "... N more modules not shown",
///   "... N more threads not shown".
std::string stack_trace_text(const CrashReport& report);

/// A string member of a module's .note.package object (Module::package: "name", "version",
/// "type", "architecture", ...), raw bytes; "" when absent or not a string (the report is
/// untrusted, so hostile JSON gives "").
std::string package_string(const nlohmann::json& package, const char* key);

/// The module of `report` whose file is `exe` (a record's executable; a trailing " (deleted)" is
/// ignored on both sides), or nullptr (no such module, or `exe` empty).
const Module* executable_module(const CrashReport& report, const std::string& exe);

/// The record's stored analysis (r.analysis, as Index::get() reads it) parsed: std::nullopt when
/// it has none (not analysed yet), unavailable("the stored report is not valid: ...") when it does
/// not validate (the index holds what an analyzer of hostile input wrote). Never throws.
std::optional<CrashReport> stored_report(const DumpRecord& r);

/// The crash's MESSAGE as systemd-coredump 252 writes it into its journal entry and coredumpctl
/// shows it ("Message:"): "Process <pid> (<comm>) of user <uid> dumped core." when `core_stored`,
/// then, if `with_trace` and `report` is set, a blank line and stack_trace_text() (or "Stack
/// trace: unavailable (<why>)"); without a stored core "Process <pid> (<comm>) of user <uid>
/// terminated abnormally without generating a coredump.", a blank line and
/// "coredumpd: <state>[: <reason>]". comm and the reason are escaped for display.
std::string crash_message(const DumpRecord& r, const std::optional<CrashReport>& report, bool core_stored,
                          bool with_trace);

}  // namespace coredumpd::analysis
