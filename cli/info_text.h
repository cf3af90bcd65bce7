// One dump as `dumpctl info` prints it: coredumpctl 252's print_info() lines first (its labels,
// order and alignment), then ours (id, state, container, rule, signature, sizes, the metadata the
// daemon collected). Every byte that came from the crashing process is escaped and stays on its line.
#pragma once

#include <cstdint>
#include <string>

#include "cli/core_file.h"
#include "cli/dump_source.h"
#include "cli/dumpctl.h"
#include "store/dump_record.h"

namespace coredumpd::cli {

/// How print_info_text() lays a record out.
struct InfoStyle {
  std::int64_t now_us = 0;  ///< the time "(19s ago)" is counted from, UTC µs since the epoch
  bool colour = false;      ///< ANSI as coredumpctl: bold PID and Executable, a red/grey Storage
  bool extra = false;       ///< also print the raw metadata JSON (extra: /proc captures, maps...)
};

/// The warning for a dump whose core is not fully usable (truncated, failed, missing, vacuumed,
/// still arriving), or "" when there is nothing to warn about. Escaped.
std::string info_warning(const DumpRecord& r, CoreStatus status);

/// Prints record `r` (read in full with DumpSource::get(): its analysis loaded) to `io.out`:
///   coredumpctl's lines, each when the record has the fact: PID (comm), UID (user name), GID
///   (group name), Signal ("11 (SEGV)"), Timestamp ("Sat 2026-12-05 10:12:06 UTC (19s ago)"),
///   Command Line, Executable, Control Group (the unified path, one line), Unit, User Unit, Slice,
///   Session, Owner UID (user name), Boot ID, Machine ID (this machine's: coredumpd keeps its store
///   locally), Hostname, Storage ("<path> (present)", "none"), Size on Disk, Package, build-id,
///   Message (the journal entry's MESSAGE with the stack trace, lines indented under it);
///   then ours: ID, State, Container, Rule, Signature, TID, Effective IDs, Namespace IDs, Working
///   Dir, Coredump Mask, Core Size, Stored Size, Compression, the collected metadata
///   (info_details()), Analysis, Extra (with `style.extra`) and Warning.
/// Labels are right-aligned in kInfoLabelWidth columns. No blank line before or after: a caller
/// printing several records puts one between them, as coredumpctl does. The warning, if any, also
/// goes to `io.err` ("dumpctl: warning: ..."). Never throws on record content.
void print_info_text(DumpSource& source, const DumpRecord& r, const InfoStyle& style, const Io& io);

}  // namespace coredumpd::cli
