#include "cli/pending_records.h"

#include <algorithm>

#include "store/fallback_core.h"
#include "store/pending_journal.h"
#include "util/text.h"

namespace coredumpd::cli {

std::map<std::string, nlohmann::json> add_pending(const GlobalOptions& g, std::ostream& err,
                                                  std::vector<DumpRecord>& records) {
  std::map<std::string, nlohmann::json> pending;
  PendingContents contents;
  try {
    contents = read_pending_journal(g.pending_dir);
  } catch (const std::exception& e) {
    err << "dumpctl: pending records not shown: " << escape_for_display(e.what()) << '\n';
    return pending;
  }
  for (auto& e : contents.entries) {
    if (std::any_of(records.begin(), records.end(), [&](const DumpRecord& r) { return r.id == e.record.id; })) continue;
    auto& p = pending[e.record.id] = {{"why", e.why}, {"journaled_us", e.journaled_us}};
    if (const auto dir = fallback_dir_of(e.record)) p["fallback"] = *dir;
    records.push_back(std::move(e.record));
  }
  std::stable_sort(records.begin(), records.end(),
                   [](const DumpRecord& a, const DumpRecord& b) { return a.timestamp_us < b.timestamp_us; });
  return pending;
}

std::unique_ptr<Index> open_index_or_pending(const GlobalOptions& g, std::ostream& err) {
  try {
    return std::make_unique<Index>(g.store, /*writable=*/false);
  } catch (const IndexError& e) {
    PendingContents contents;
    try {
      contents = read_pending_journal(g.pending_dir);
    } catch (const std::exception&) {
      throw e;
    }
    if (contents.entries.empty()) throw;
    err << "dumpctl: " << escape_for_display(e.what()) << "; showing the daemon's pending records only\n";
    return nullptr;
  }
}

std::string core_dir_of(const GlobalOptions& g, const DumpRecord& r) {
  if (const auto dir = fallback_dir_of(r)) return *dir;
  return g.store;
}

}  // namespace coredumpd::cli
