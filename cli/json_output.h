// dumpctl's JSON: printing it the same way from every command, and the shapes of `list --json`
// and `info --json` (coredumpctl 252's keys, ours beside them).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "cli/dump_source.h"
#include "cli/dumpctl.h"
#include "store/dump_record.h"

namespace coredumpd::cli {

/// Writes `j` as `mode` says (JsonMode, cli/dumpctl.h; Off is taken as Pretty) and a newline to `io.out`. On a terminal
/// (`io.out_is_tty`) every non-ASCII character is written as a \u escape, so that no C1 control or
/// bidi override reaches the terminal; otherwise UTF-8 is written as is. Invalid UTF-8 in strings
/// (only possible inside a record's `extra`) is replaced by U+FFFD instead of throwing.
void print_json(const nlohmann::json& j, const Io& io, JsonMode mode = JsonMode::Pretty);

/// One element of `list --json`: coredumpctl 252's keys first, with its meaning and types
/// (src/coredump/coredumpctl.c print_list(): a table whose columns become the keys):
///   "time" (µs since the epoch, integer), "pid" (integer), "uid", "gid" (integer, null when
///   unknown), "sig" (the signal number, null when unknown), "corefile" (coredumpctl's words:
///   "present", "truncated", "missing" (also a vacuumed core), "none" (no core stored)), "exe" (the executable, else comm, else null),
///   "size" (bytes of the stored file, null without one);
/// then ours: "id", "short_id" (`short_id`, as the table shows it), "state" (state_name()),
/// "reason", "comm", "container" (the container key, null when none was identified), "signature"
/// (null until analysed). Byte strings that are not UTF-8 are byte arrays (bytes_to_json()).
/// The record's /proc capture and collectors' output (DumpRecord::extra) only with `with_extra`
/// (key "extra"): a listing stays ~150 bytes a dump.
nlohmann::json list_entry_json(DumpSource& source, const DumpRecord& r, const std::string& short_id,
                               bool with_extra = false);

/// `info --json` for `r` (read in full with DumpSource::get()): the whole record (to_json(): every
/// field, "extra" with the /proc capture, "analysis"), "signature" and "signature_text" (null
/// when not analysed), "short_id", "container" (the key, as in the listing; the object is
/// extra.container), and the keys of
/// list_entry_json() with the same meaning (so "uid"/"gid" are null when unknown, and "exe" falls
/// back to comm, as in coredumpctl's listing).
nlohmann::json info_json(DumpSource& source, const DumpRecord& r, const std::string& short_id);

}  // namespace coredumpd::cli
