// coredumpctl's option model for dumpctl's reading verbs (list, info, dump, debug/gdb): the
// positional matches turned into a RecordQuery, the records chosen with -1/-n/-r, -A's splitting
// and --json's modes.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/dump_source.h"
#include "cli/dumpctl.h"
#include "store/record_query.h"

namespace coredumpd::cli {

/// Parses --json's value: "short", "pretty" or "off" (systemd's json_parse_cmdline_parameter()
/// also takes "help"; we do not). Throws DumpctlError naming the accepted values.
JsonMode parse_json_mode(const std::string& value);

/// Writes `j` as `mode` says: Pretty through print_json() (cli/json_output.h), Short on one line
/// (escaped to ASCII on a terminal, as print_json() does). Off: nothing.
void print_json_as(const nlohmann::json& j, const Io& io, JsonMode mode);

/// The FieldMatch for one positional match, as coredumpctl 252's add_match() reads it:
/// - containing '=': FIELD=VALUE; FIELD must be known_field() (else DumpctlError naming the known
///   fields; coredumpctl would silently match nothing);
/// - containing '/': COREDUMP_EXE (a relative path made absolute against the working directory, as
///   coredumpctl's path_make_absolute_cwd()), also matching the path with " (deleted)";
/// - all digits: COREDUMP_PID;
/// - otherwise COREDUMP_COMM.
/// Ours: a dump id, or a unique id prefix (hex, any case), becomes COREDUMPD_ID=<that id> when it
/// names a dump and (for digits) no dump has that PID, (for other hex) no dump has that COMM.
/// `source` answers those questions (DumpSource::scan()). Returns one or two matches (the EXE pair).
std::vector<FieldMatch> match_of(const std::string& match, DumpSource& source);

/// The RecordQuery for `o`: every match (match_of()), -S/-U (parse_time_option(); DumpctlError
/// when --since is after --until, as coredumpctl), newest first with -r or -1. The limit is left to
/// for_each_selected(), which knows whether a later filter drops records.
RecordQuery query_of(const SelectOptions& o, DumpSource& source);

/// Streams the records `q` and `o` select, in coredumpctl 252's order and number: oldest first, or
/// newest first with -r/-1; -n N stops after N (so without -r the N oldest, as coredumpctl's
/// dump_list() does); -1 alone is one. `keep` (may be empty) drops records after the query (list's
/// --container), before they count. Returns how many records `each` got.
std::size_t for_each_selected(DumpSource& source, RecordQuery q, const SelectOptions& o,
                              const std::function<bool(const DumpRecord&)>& keep,
                              const std::function<void(DumpRecord&&)>& each);

/// The newest record `o` selects (dump, debug: coredumpctl's focus()), with no matches the newest
/// dump; also says whether more records matched (for "More than one entry matches, ignoring
/// rest."). Throws DumpctlError("No match found.") when none does, as coredumpctl (even with -q).
DumpRecord newest_selected(DumpSource& source, const SelectOptions& o, bool& more);

/// Splits -A's value into arguments as a POSIX shell would (wordexp(3) with WRDE_NOCMD: quotes
/// and backslashes; $VAR, ~ and globs are expanded, command substitution is refused). Throws
/// DumpctlError on a syntax error or a character a shell would treat as an operator (| ; & < > ...).
std::vector<std::string> split_debugger_arguments(const std::string& arguments);

/// The debugger to run: `option` when given, else $SYSTEMD_DEBUGGER when set and not empty, else
/// "gdb" (coredumpctl 252's run_debug()).
std::string debugger_of(const std::optional<std::string>& option);

}  // namespace coredumpd::cli
