// What coredumpd-analyze tells of one core: its modules, its threads and their frames, and the
// crash signature. The analyzer prints it as JSON on its stdout; the daemon stores that JSON in
// the index (DumpRecord::analysis); dumpctl shows it. A report read back is untrusted: it came
// from a process that parsed an attacker's core, so report_from_json() validates every field.
//
// JSON shape (to_json(); keys never renamed, see docs/ANALYSIS.md):
//   {"version": 1, "state": "ok"|"unavailable", "reason": str,
//    "signature": str, "signature_text": str,
//    "threads_total": n, "threads_omitted": n, "modules_omitted": n, "text_truncated": bool,
//    "warnings": [str...], "elapsed_us": n, "maxrss_kib": n, "debuginfod_used": bool,
//    "modules": [{"path", "build_id", "start", "end", "elf", "debug", "package"}...],
//    "threads": [{"tid", "name", "crashed", "frames_omitted", "error",
//                 "frames": [{"pc", "module", "module_offset", "function", "function_offset",
//                             "file", "line"}...]}...]}
// Byte strings from the core (paths, names, symbols) are bytes_to_json() encoded
// (store/dump_record.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace coredumpd::analysis {

/// The report format's version (the "version" key); report_from_json() refuses others.
inline constexpr int kReportVersion = 1;
/// Default caps, as systemd-coredump has them since its unbounded-output CVE: threads shown
/// (crashing thread first), frames kept per thread, and the size of the whole JSON report.
inline constexpr std::size_t kDefaultMaxThreads = 64;
inline constexpr std::size_t kDefaultMaxFrames = 64;
inline constexpr std::size_t kMaxReportBytes = std::size_t{1} << 20;
/// Modules kept in a report (the rest counted in modules_omitted).
inline constexpr std::size_t kMaxModules = 1024;

/// Errors of report_from_json(): what() names the field and why it is refused.
class ReportError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// One stack frame, as libdwfl unwound it.
struct Frame {
  std::uint64_t pc = 0;             ///< program counter (frame 0: where it stopped; others: return address)
  std::string module;               ///< basename of the module holding pc ("libc.so.6"); "" if none
  std::uint64_t module_offset = 0;  ///< pc minus the module's start address (coredumpctl's "+ 0x...")
  std::string function;             ///< symbol, demangled; "" when unsymbolised
  std::uint64_t function_offset = 0;///< pc minus the symbol's address (0 when unsymbolised)
  std::string file;                 ///< source file from DWARF; "" when absent
  std::uint32_t line = 0;           ///< source line from DWARF; 0 when absent
};

/// One thread of the core.
struct Thread {
  std::int64_t tid = 0;             ///< NT_PRSTATUS pr_pid: the TID in the task's own pid namespace
  std::string name;                 ///< its comm, captured before the ack (extra.thread_names); "" if unknown
  bool crashed = false;             ///< the thread that took the fatal signal
  std::vector<Frame> frames;        ///< innermost first; at most the frame cap
  std::size_t frames_omitted = 0;   ///< frames past the cap (counted while unwinding continued)
  std::string error;                ///< why unwinding stopped before the outermost frame; "" if it did not
};

/// One module (executable or shared object) mapped in the core.
struct Module {
  std::string path;                 ///< as the core names it (NT_FILE / link map); may end " (deleted)"
  std::string build_id;             ///< lower-case hex; "" when the module has none
  std::uint64_t start = 0;          ///< lowest mapped address
  std::uint64_t end = 0;            ///< one past the highest mapped address
  std::string elf;                  ///< file the symbols came from; "" when only the core's pages were used
  std::string debug;                ///< separate debug file used ("/usr/lib/debug/.build-id/..."); "" if none
  nlohmann::json package;           ///< the module's .note.package JSON object (systemd's format), or null
};

/// Everything the analysis of one core found. state "unavailable" carries only reason (and maybe
/// warnings); "ok" has at least the crashing thread (possibly with no frames and an error).
struct CrashReport {
  std::string state = "unavailable";
  std::string reason;               ///< why unavailable; "" when ok
  std::string signature;            ///< analysis/signature.h hash (32 hex); "" when nothing to sign
  std::string signature_text;       ///< its readable form
  std::vector<Module> modules;      ///< at most kMaxModules
  std::vector<Thread> threads;      ///< crashing thread first, then by TID; at most the thread cap
  std::size_t threads_total = 0;    ///< threads in the core (NT_PRSTATUS notes)
  std::size_t threads_omitted = 0;  ///< threads past the cap, or dropped to keep kMaxReportBytes
  std::size_t modules_omitted = 0;
  bool text_truncated = false;      ///< frames or threads were dropped to keep the report under kMaxReportBytes
  std::vector<std::string> warnings;///< e.g. "no ELF for /usr/bin/x (deleted): frames unsymbolised"
  std::int64_t elapsed_us = 0;      ///< the analyzer's wall time
  std::int64_t maxrss_kib = 0;      ///< the analyzer's peak RSS (getrusage)
  bool debuginfod_used = false;     ///< debuginfod was asked for at least one file
};

/// A report that says only "analysis unavailable: <reason>".
CrashReport unavailable(std::string reason);
/// The report as JSON (the shape above). Never throws.
nlohmann::json to_json(const CrashReport& report);
/// Reads and validates a report (untrusted): every key of the shape above with its type, strings
/// within bounds, state "ok"/"unavailable", version kReportVersion, signature 32 hex or "", at
/// most kDefaultMaxThreads*16 threads and 4096 frames each. Throws ReportError naming the first
/// field refused.
CrashReport report_from_json(const nlohmann::json& j);
/// Makes `report` fit in `max_bytes` of JSON text: drops frames from the last threads, then
/// threads other than the crashing one, counting them and setting text_truncated. Returns
/// to_json(report).dump().size() after.
std::size_t fit_report(CrashReport& report, std::size_t max_bytes = kMaxReportBytes);

}  // namespace coredumpd::analysis
