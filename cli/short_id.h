// Abbreviated dump ids, as git abbreviates commit ids: at least kMinShortId characters, longer
// where needed to tell an id from every other id in the store.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "store/dump_record.h"

namespace coredumpd::cli {

/// The fewest characters `dumpctl list` shows of an id.
///
/// Why a display fix and not new ids: an id is the crash time in microseconds (16 hex digits)
/// followed by 64 random bits, so ids and core file names sort by time, and it is already unique
/// in full. Only its first 12 characters are not: they change every 65 ms, and a burst of
/// crashes shares them. Reordering the id would lose the time order, and would do nothing for
/// stores written before; a prefix that grows where it must works for every store, old and new,
/// and is what users know from git.
inline constexpr std::size_t kMinShortId = 12;

/// The shortest unambiguous prefixes of a set of ids (the whole store's: `info` resolves a prefix
/// against every record, whatever `list` filtered).
class ShortIds {
 public:
  /// Takes every id of the store (any order; duplicates allowed).
  explicit ShortIds(std::vector<std::string> ids);

  /// The shortest prefix of `id` that is at least kMinShortId characters and that no other id of
  /// the set starts with (the whole id if another id equals it or extends it). An id not in the set
  /// is compared with the set all the same.
  std::string of(const std::string& id) const;

 private:
  std::vector<std::string> sorted_;
};

/// The ids of `records`, in their order.
std::vector<std::string> ids_of(const std::vector<DumpRecord>& records);

}  // namespace coredumpd::cli
