// Which dumps a reader asked for: coredumpctl's matches (FIELD=VALUE, PID, COMM, EXE), a time range
// and an order, evaluated the same way by the index (in SQL, where a column holds the field), by the
// query service for its clients, and in memory for records the index does not hold (pending ones).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "store/dump_record.h"

namespace coredumpd {

/// One FIELD=VALUE match. `field` is a journal field name as coredumpctl users type it
/// (COREDUMP_PID, COREDUMP_COMM, COREDUMP_EXE, COREDUMP_UID, COREDUMP_UNIT, ... as
/// daemon/journal/journal_fields.h writes them) or one of ours (COREDUMPD_ID, COREDUMPD_STATE,
/// COREDUMPD_SIGNATURE, COREDUMPD_CONTAINER, COREDUMPD_RULE); `value` is compared byte for byte
/// with the record's value of that field (record_field()), except COREDUMPD_ID and
/// COREDUMPD_SIGNATURE, which also match by a hex prefix.
struct FieldMatch {
  std::string field;
  std::string value;
  bool operator==(const FieldMatch&) const = default;
};

/// A selection of dumps, as `coredumpctl list MATCHES... -S -U -r -n -1` means it.
struct RecordQuery {
  /// As journal matches combine: matches of the same field are ORed, different fields ANDed.
  std::vector<FieldMatch> matches;
  std::optional<std::int64_t> since_us;  ///< only timestamp_us >= this (UTC µs), inclusive
  std::optional<std::int64_t> until_us;  ///< only timestamp_us <= this (UTC µs), inclusive
  /// At most this many records: the newest ones (coredumpctl -n N, -1 is 1), still delivered in
  /// the order `newest_first` says.
  std::optional<std::size_t> limit;
  bool newest_first = false;  ///< delivery order; oldest first otherwise (ties: insertion order)
  /// Parse `extra` (the /proc capture and collectors' output, up to ~100 KB a record). A listing
  /// that prints only columns sets false: `extra` then holds only what record_field() and the
  /// list's table need (the container object), never the captures.
  bool with_extra = true;
};

/// The value of journal field `field` for `r` (see FieldMatch), as journal_fields() would write
/// it: COREDUMP_PID "1234", COREDUMP_SIGNAL "11", COREDUMP_COMM the raw bytes, COREDUMP_UNIT,
/// COREDUMP_SLICE, COREDUMP_CGROUP (one path), COREDUMP_CMDLINE ... (store/record_facts.h derives
/// them for both), and ours (COREDUMPD_*).
/// std::nullopt when the record lacks the fact or the field is unknown.
std::optional<std::string> record_field(const DumpRecord& r, std::string_view field);

/// True if `field` is a name record_field() knows (for a clear error on a typo).
bool known_field(std::string_view field);

/// Every name record_field() knows, in the journal entry's order (for that error's list).
std::vector<std::string_view> known_fields();

/// True if `r` satisfies every condition of `q` except `limit` (matches and the time range).
bool record_matches(const RecordQuery& q, const DumpRecord& r);

}  // namespace coredumpd
