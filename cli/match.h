// Choosing the dump a MATCH argument refers to (coredumpctl semantics: the newest match wins).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "store/dump_record.h"

namespace coredumpd::cli {

/// Selects one record from `records` (oldest first, as Index::list() returns them).
/// - no match: the newest record;
/// - the full id of a record: that record;
/// - all digits: the newest record with that PID; if none, a unique id prefix;
/// - hex digits: the record whose id starts with them, if exactly one does;
/// - containing '/': the newest record whose exe is that path (also with " (deleted)");
/// - otherwise (or if the above found nothing): the newest record with that comm.
/// Throws DumpctlError: "no coredumps found", "no coredump matches '<match>'", or that an id prefix
/// is ambiguous. The match is escaped in messages.
const DumpRecord& select_dump(const std::vector<DumpRecord>& records,
                              const std::optional<std::string>& match);

}  // namespace coredumpd::cli
