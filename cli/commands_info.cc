// `dumpctl info`: every field of the selected dump, as text (cli/info_text.h) or JSON
// (cli/json_output.h).
#include <unistd.h>

#include "cli/dump_source.h"
#include "cli/dumpctl.h"
#include "cli/info_text.h"
#include "cli/json_output.h"
#include "cli/commands_info.h"
#include "cli/options.h"
#include "cli/terminal.h"
#include "cli/time_spec.h"
#include "cli/short_id.h"
#include "store/index.h"
#include "store/record_query.h"

namespace coredumpd::cli {

void print_info_record(DumpSource& source, const DumpRecord& r, const ShortIds& short_ids, const InfoOptions& o,
                       const Io& io) {
  if (o.select.json != JsonMode::Off) {
    if (const std::string w = info_warning(r, source.core_status(r)); !w.empty())
      io.err << "dumpctl: warning: " << w << '\n';
    print_json_as(info_json(source, r, short_ids.of(r.id)), io, o.select.json);
    return;
  }
  InfoStyle style;
  style.now_us = realtime_now_us();
  style.colour = io.out_is_tty && colour_wanted(STDOUT_FILENO);
  style.extra = o.extra;
  print_info_text(source, r, style, io);
}

int cmd_info(const GlobalOptions& g, const InfoOptions& o, const Io& io) {
  SelectOptions sel = o.select;
  // coredumpctl 252's dump_list(): "info" without a match implies -1 (whatever -n says).
  if (sel.matches.empty()) {
    sel.newest_only = true;
    sel.max_rows.reset();
  }
  const std::unique_ptr<DumpSource> source = open_source(g, io.err);
  RecordQuery q = query_of(sel, *source);
  q.with_extra = sel.field.has_value();  // each record is read again whole (get()) to be printed
  std::unique_ptr<Pager> pager;
  if (io.out_is_tty) pager = start_pager(sel.no_pager);
  if (sel.field) {
    for_each_selected(*source, q, sel, {}, [&](DumpRecord&& r) {
      if (const auto v = record_field(r, *sel.field)) io.out << *v << '\n';
    });
    io.out.flush();
    return io.out ? 0 : 1;
  }
  // JSON's "short_id": what `list` shows, shortened against every id the reader can name.
  std::vector<std::string> ids;
  if (sel.json != JsonMode::Off) {
    if (const Index* index = source->index()) {
      for (auto& s : index->list_summaries()) ids.push_back(std::move(s.id));
    } else if (source->kind() == SourceKind::Service) {
      ids = ids_of(source->list());
    }
  }
  const ShortIds short_ids(std::move(ids));
  std::size_t shown = 0;
  // The ids first, then each record in full (the scan leaves the analysis out: a report may be
  // 1 MiB): the service answers one request at a time, so no get() may run inside its scan.
  std::vector<std::string> selected;
  for_each_selected(*source, q, sel, {}, [&](DumpRecord&& listed) { selected.push_back(std::move(listed.id)); });
  for (const auto& id : selected) {
    const std::optional<DumpRecord> full = source->get(id);
    if (!full) continue;  // vacuumed while it was read
    if (shown++ > 0 && sel.json == JsonMode::Off) io.out << '\n';  // coredumpctl: a blank line between
    print_info_record(*source, *full, short_ids, o, io);
  }
  io.out.flush();
  if (shown == 0) {
    if (!sel.quiet) io.err << "No coredumps found.\n";
    return 1;
  }
  return io.out ? 0 : 1;
}

}  // namespace coredumpd::cli
