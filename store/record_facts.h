// Facts derived from a dump record the way systemd-coredump 252 derives its journal fields
// (src/coredump/coredump.c: the crash's context): the unified cgroup path, the unit, user unit,
// slice, session and owner uid, the command line. One place for them, so that the journal entry
// (daemon/journal/journal_fields.cc) and dumpctl's matches (store/record_query.cc record_field())
// always agree on a field's value.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "store/dump_record.h"

namespace coredumpd {

/// obj[key] as bytes (bytes_from_json()); "" when `obj` is not an object, or the key is absent or
/// not a byte string.
std::string json_bytes_at(const nlohmann::json& obj, const char* key);

/// obj[key] as decimal text, unsigned printed as unsigned (RLIMIT_CORE "unlimited" is 2^64-1, as
/// systemd's "%"PRIu64); "" when absent or not an integer.
std::string json_integer_at(const nlohmann::json& obj, const char* key);

/// extra.container (record_extras.h kContainer) when it is an object, else a null json.
const nlohmann::json& container_facts(const DumpRecord& r);

/// The unified cgroup path (systemd's cg_pid_get_path()): the container's chosen path
/// (extra.container.cgroup_path), else the "0::" line of /proc/<pid>/cgroup (r.cgroup); "" if neither.
std::string cgroup_path(const DumpRecord& r);

/// The system unit of the crashed process (extra.container.unit), "" if unknown: COREDUMP_UNIT.
std::string unit_of(const DumpRecord& r);
/// The user unit (extra.container.user_unit), "" if none: COREDUMP_USER_UNIT.
std::string user_unit_of(const DumpRecord& r);
/// The slice (extra.container.slice), "" if unknown: COREDUMP_SLICE.
std::string slice_of(const DumpRecord& r);
/// The owner uid of the process's user slice (extra.container.owner_uid) as decimal text, "" if
/// none: COREDUMP_OWNER_UID.
std::string owner_uid_of(const DumpRecord& r);

/// The session of a "session-<id>.scope" unit (sd_pid_get_session()), else "".
std::string session_of(const std::string& unit);

/// argv joined by single spaces, as systemd's COREDUMP_CMDLINE (get_process_cmdline()).
std::string cmdline_of(const DumpRecord& r);

/// RLIMIT_CORE at the crash (extra.rlimit_core) as decimal text, "" if not captured: COREDUMP_RLIMIT.
std::string rlimit_core_of(const DumpRecord& r);

}  // namespace coredumpd
