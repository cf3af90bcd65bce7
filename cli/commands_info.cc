// `dumpctl info`: every field of the selected dump, as text (cli/info_text.h) or JSON
// (cli/json_output.h).
#include <chrono>

#include "cli/dump_source.h"
#include "cli/dumpctl.h"
#include "cli/info_text.h"
#include "cli/json_output.h"
#include "cli/match.h"
#include "cli/short_id.h"
#include "store/index.h"

namespace coredumpd::cli {

int cmd_info(const GlobalOptions& g, const InfoOptions& o, const Io& io) {
  const std::unique_ptr<DumpSource> source = open_source(g, io.err);
  const std::vector<DumpRecord> records = source->list();
  // list() leaves the analysis out (a report may be 1 MiB): read the chosen row in full.
  const std::optional<DumpRecord> full = source->get(select_dump(records, o.match).id);
  if (!full) throw DumpctlError("the dump disappeared from the index while it was read (vacuumed?)");

  if (o.json) {
    print_json(info_json(*source, *full, ShortIds(ids_of(records)).of(full->id)), io);
    return 0;
  }
  InfoStyle style;
  style.now_us = std::chrono::duration_cast<std::chrono::microseconds>(
                     std::chrono::system_clock::now().time_since_epoch()).count();
  style.extra = o.extra;
  print_info_text(*source, *full, style, io);
  return io.out ? 0 : 1;
}

}  // namespace coredumpd::cli
