// The daemon's pending journal seen by dumpctl: records its index could not take yet, and cores
// kept in the fallback on /run until the store can take them (docs/EARLY_BOOT.md).
#pragma once

#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/dumpctl.h"
#include "store/dump_record.h"
#include "store/index.h"

namespace coredumpd::cli {

/// Adds the records of the pending journal in g.pending_dir that `records` does not have yet
/// (sorted in by time), and returns them by id as {"why", "journaled_us"} (+ "fallback": the
/// directory that holds the core, while it is there). A journal that cannot be read (not root:
/// /run/coredumpd is the daemon's) is noted on `err`, not an error.
std::map<std::string, nlohmann::json> add_pending(const GlobalOptions& g, std::ostream& err,
                                                  std::vector<DumpRecord>& records);

/// The store's index, opened read-only; or null if it cannot be opened and the pending journal
/// holds records (early boot: the store is not mounted yet), said once on `err`. Throws
/// IndexError as Index's constructor does when there is nothing pending to show instead.
std::unique_ptr<Index> open_index_or_pending(const GlobalOptions& g, std::ostream& err);

/// The directory `r`'s core file is in: its fallback directory while the core waits there
/// (store/fallback_core.h), else the store.
std::string core_dir_of(const GlobalOptions& g, const DumpRecord& r);

}  // namespace coredumpd::cli
