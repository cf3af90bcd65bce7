// A crash's journal entry, as systemd-coredump 252 writes it (src/coredump/coredump.c: submit_coredump()
// and the iovec it builds from the crash's context), built from coredumpd's final record. Pure: it
// reads nothing but its arguments, so every field can be tested byte for byte.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/crash_report.h"
#include "store/dump_record.h"

namespace coredumpd::journal {

/// systemd's SD_MESSAGE_COREDUMP (sd-messages.h): what `journalctl MESSAGE_ID=`, `coredumpctl`
/// and `journalctl -u UNIT` (with COREDUMP_UNIT=, from a root sender) look for.
inline constexpr std::string_view kCoredumpMessageId = "fc2e22bc6ee647b6b90729ab34a250b1";

/// Caps on a field's value, bytes. systemd 252 caps the whole entry (journald refuses entries past
/// ENTRY_SIZE_MAX, and fields past DATA_SIZE_MAX), not each field: a hostile comm, cmdline or
/// environment could then crowd out the rest. Ours keep one entry well under a journal's limits.
/// A value cut at its cap ends at a UTF-8 boundary, and the field's name is listed in
/// COREDUMPD_TRUNCATED_FIELDS.
inline constexpr std::size_t kMaxShortField = 64 * 1024;  ///< comm, exe, cmdline, cwd, units, ...
inline constexpr std::size_t kMaxLongField = 1 << 20;     ///< /proc captures, environ, open fds, MESSAGE

/// What journal_fields() needs beside the record.
struct EntryOptions {
  /// The store directory, absolute: COREDUMP_FILENAME is store_dir + "/" + record.path.
  std::string store_dir;
  /// The stored core is there as a regular file (the caller checked): only then is
  /// COREDUMP_FILENAME written, so coredumpctl says "present" and can dump it. systemd 252's
  /// coredumpctl decompresses a name ending ".zst" (zstd), ".xz" or ".lz4" and reads any other
  /// file raw: our "<id>.zst" and "<id>.core" are both readable by it.
  bool core_present = false;
  /// The analysis' stack trace in MESSAGE (config journal.stack_trace).
  bool stack_trace = true;
};

/// Whether a record in state `s` gets a journal entry: Complete, Truncated, Failed, MetadataOnly
/// and Rejected do (systemd-coredump logs every crash it is handed, core or not: "terminated
/// abnormally without generating a coredump" when none was written). Forwarded does not: the
/// receiver in the container writes the entry in the container's journal, where its users look,
/// and one crash gets one entry. InProgress and Interrupted are not final crashes' records.
bool entry_wanted(DumpState s);

/// COREDUMP_PACKAGE_JSON's value for `report`: an object keyed by module path (the NT_FILE path,
/// as elfutils' dwfl names a core's modules), each value the module's .note.package JSON object
/// with its build-id merged in as "buildId" (lower-case hex), as systemd 252's elf-util.c
/// parse_package_metadata() writes it; coredumpctl 252's `info` prints "build-id:" from the
/// executable's entry. Unlike systemd, which lists only modules with a .note.package (few in
/// Debian), a module with a build-id alone gets {"buildId": ...} too, so that coredumpctl shows
/// the build-id of every crash we analysed. A module with neither is left out; may be empty.
nlohmann::json package_json(const analysis::CrashReport& report);

/// The entry's fields for the final record `r`, each "NAME=value" (the value any bytes, newlines
/// included: sd_journal_sendv() sends it as binary data), in a fixed order:
///   MESSAGE, MESSAGE_ID, PRIORITY=2 (LOG_CRIT, as systemd), COREDUMP_PID, COREDUMP_UID,
///   COREDUMP_GID, COREDUMP_SIGNAL, COREDUMP_SIGNAL_NAME, COREDUMP_TIMESTAMP (µs since the epoch),
///   COREDUMP_RLIMIT, COREDUMP_HOSTNAME, COREDUMP_COMM, COREDUMP_EXE, COREDUMP_CMDLINE (argv
///   joined with spaces), COREDUMP_CWD, COREDUMP_CGROUP (the unified path), COREDUMP_UNIT,
///   COREDUMP_USER_UNIT, COREDUMP_SESSION, COREDUMP_OWNER_UID, COREDUMP_SLICE, COREDUMP_PROC_STATUS,
///   COREDUMP_PROC_MAPS, COREDUMP_PROC_LIMITS, COREDUMP_PROC_CGROUP, COREDUMP_PROC_MOUNTINFO,
///   COREDUMP_ENVIRON, COREDUMP_OPEN_FDS, COREDUMP_PACKAGE_NAME, COREDUMP_PACKAGE_VERSION,
///   COREDUMP_PACKAGE_JSON, COREDUMP_TRUNCATED=1, COREDUMP_FILENAME, OBJECT_PID, then ours:
///   COREDUMPD_ID, COREDUMPD_STATE, COREDUMPD_REASON, COREDUMPD_SIGNATURE,
///   COREDUMPD_SIGNATURE_TEXT, COREDUMPD_RULE, COREDUMPD_CONTAINER, COREDUMPD_TRUNCATED_FIELDS.
/// A field whose fact the record lacks (not captured, not analysed, empty) is left out, as systemd
/// leaves out what it could not read, except COREDUMP_PID/UID/GID/SIGNAL: always there ("-1" for
/// an unknown id, "0" for an unknown signal), since systemd 252's coredumpctl aborts without them. docs/JOURNAL.md lists each field with its source.
/// MESSAGE: "Process <pid> (<comm>) of user <uid> dumped core." when a core is stored, then a blank
/// line and the stack trace (analysis/report_text.h) or "Stack trace: unavailable (<why>)" once
/// analysed; without a stored core "... terminated abnormally without generating a coredump.",
/// a blank line and "coredumpd: <state>: <reason>". comm is escaped for display in MESSAGE only.
/// Never throws on any record content (a report that does not parse gives "unavailable").
std::vector<std::string> journal_fields(const DumpRecord& r, const EntryOptions& options);

/// The value of field `name` in `fields` ("" if absent), for tests and logs.
std::string field_value(const std::vector<std::string>& fields, std::string_view name);

}  // namespace coredumpd::journal
