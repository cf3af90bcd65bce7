// Usage (`dumpctl du`): what the store's cores use, in total and per quota group, from the index.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "store/core_accounting.h"
#include "store/index.h"

namespace coredumpd {

/// Bytes and number of stored cores.
struct GroupUsage {
  std::uint64_t bytes = 0;  ///< sum of stored_size
  std::uint64_t cores = 0;
};

/// What the store holds, from the index.
struct UsageReport {
  GroupUsage total;  ///< every dump that holds_core()
  /// Per kind, per group key: usage of the dumps holding cores. Groups without cores are absent.
  std::map<GroupKind, std::map<std::string, GroupUsage>> groups;
  std::uint64_t rows = 0;                        ///< all rows in the index
  std::map<std::string, std::uint64_t> states;   ///< rows per state_name()
  std::uint64_t vacuumed_rows = 0;               ///< rows whose core vacuum() removed
  std::optional<FsSpace> filesystem;             ///< set when a store_dirfd was given and fstatvfs worked
};

/// Accounts the index's dumps per group (see UsageReport); with `store_dirfd` >= 0 also reports
/// the filesystem's size and free space. Reads no core file. Throws IndexError.
UsageReport usage(const Index& index, int store_dirfd = -1);

}  // namespace coredumpd
