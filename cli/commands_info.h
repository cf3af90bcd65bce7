// `dumpctl info`'s text or JSON for one record, for `info` (every match) and `debug` (the chosen
// dump, before the debugger runs, as coredumpctl prints it).
#pragma once

#include "cli/dump_source.h"
#include "cli/dumpctl.h"
#include "cli/short_id.h"
#include "store/dump_record.h"

namespace coredumpd::cli {

/// Prints record `r` (read in full: DumpSource::get()) as `info` does: its fields as text, or
/// to_json() when o.select.json is not Off (with "short_id" from `short_ids`); a warning about an
/// unusable core on `io.err`. Throws on write errors only through the stream's state.
void print_info_record(DumpSource& source, const DumpRecord& r, const ShortIds& short_ids, const InfoOptions& o,
                       const Io& io);

}  // namespace coredumpd::cli
