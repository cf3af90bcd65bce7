// Index::scan(): a RecordQuery answered in SQL, a page at a time (store/index_scan.h).
#include "store/index_scan.h"

#include <algorithm>
#include <charconv>
#include <limits>
#include <mutex>
#include <string_view>

#include "store/index_rows.h"
#include "store/query_protocol.h"
#include "store/record_extras.h"

namespace coredumpd {

namespace index_scan {

namespace {

// The keys of `extra` a listing reads (RecordQuery::with_extra false): the container object (the
// CONTAINER column, --container, the unit, slice and owner fields), who may see the dump, and the
// small facts about its core; never the /proc captures, the environment or the collectors' output.
constexpr const char* kListedExtras[] = {
    extras::kContainer,       extras::kOwnerMayRead,      extras::kRlimitCore,   extras::kRule,
    extras::kVacuumed,        extras::kFallback,          extras::kJournaled,    extras::kRecovered,
    extras::kSignalUnavailable, extras::kForwardedFromHost, extras::kUnverifiedPeer,
    extras::kCoreExpectedBytes, extras::kCoreReceivedBytes,
};

// SQLite parses `extra` once per row for all of these (its JSON cache), and only the listed keys
// reach the C++ parser. Absent keys come out null; the scan drops them.
std::string listed_extra_expr() {
  std::string e = "json_object(";
  for (const char* k : kListedExtras) {
    if (e.back() != '(') e += ", ";
    e += std::string("'") + k + "', extra -> '$." + k + "'";  // keys are identifiers: no quoting needed
  }
  return e + ")";
}

/// How a column compares with a match's value (record_field()'s format of that field).
enum class Kind {
  Count,   ///< a number >= 0 as decimal ("-1" means unknown: never matched)
  Number,  ///< any integer as decimal
  Text,    ///< TEXT, equal and not empty
  Bytes,   ///< BLOB, equal and not empty
  Key,     ///< BLOB, equal, "" included (DumpRecord::container_key)
  Prefix,  ///< TEXT, a non-empty prefix of it
};

struct Column {
  std::string_view field;
  const char* expr;
  Kind kind;
  int since_version;  ///< an older database (read-only, not migrated) lacks the column
};

// The fields record_field() takes from a column; any other is checked after decoding.
constexpr Column kColumns[] = {
    {"COREDUMP_PID", "pid", Kind::Count, 1},
    {"COREDUMP_UID", "uid", Kind::Count, 1},
    {"COREDUMP_GID", "gid", Kind::Count, 1},
    {"COREDUMP_SIGNAL", "signal", Kind::Number, 1},
    {"COREDUMP_TIMESTAMP", "timestamp_us", Kind::Number, 1},
    {"COREDUMP_COMM", "comm", Kind::Bytes, 1},
    {"COREDUMP_EXE", "exe", Kind::Bytes, 1},
    {"COREDUMP_CWD", "cwd", Kind::Bytes, 1},
    {"COREDUMP_HOSTNAME", "hostname", Kind::Bytes, 1},
    {"_BOOT_ID", "boot_id", Kind::Text, 1},
    {"COREDUMPD_ID", "id", Kind::Prefix, 1},
    {"COREDUMPD_STATE", "state", Kind::Text, 1},
    {"COREDUMPD_SIGNATURE", "signature", Kind::Prefix, 3},
    {"COREDUMPD_RULE", "rule", Kind::Text, 2},
    {"COREDUMPD_CONTAINER", "container_key", Kind::Key, 2},
};

const Column* column_of(std::string_view field, int version) {
  for (const auto& c : kColumns)
    if (c.field == field) return version >= c.since_version ? &c : nullptr;
  return nullptr;
}

/// `s` as record_field() would print the integer it is, if it is one.
std::optional<std::int64_t> canonical_integer(const std::string& s) {
  std::int64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || std::to_string(v) != s) return std::nullopt;
  return v;
}

Bound integer(std::int64_t v) { return {Bound::Type::Integer, v, {}}; }
Bound text(const std::string& s) { return {Bound::Type::Text, 0, s}; }
Bound blob(const std::string& s) { return {Bound::Type::Blob, 0, s}; }

/// The condition "column `c` matches `value`", appended to `out`; false if it can never hold.
bool add_condition(const Column& c, const std::string& value, std::string& sql, std::vector<Bound>& values) {
  const std::string col = c.expr;
  switch (c.kind) {
    case Kind::Count:
    case Kind::Number: {
      const auto v = canonical_integer(value);
      if (!v || (c.kind == Kind::Count && *v < 0)) return false;
      sql += col + " = ?";
      values.push_back(integer(*v));
      return true;
    }
    case Kind::Text:
      if (value.empty()) return false;
      sql += col + " = ?";
      values.push_back(text(value));
      return true;
    case Kind::Bytes:
    case Kind::Key:
      if (value.empty() && c.kind == Kind::Bytes) return false;
      sql += "CAST(" + col + " AS BLOB) = ?";
      values.push_back(blob(value));
      return true;
    case Kind::Prefix:
      if (value.empty()) return false;
      // substr() of a BLOB counts bytes, as starts_with() does.
      sql += "substr(CAST(" + col + " AS BLOB), 1, " + std::to_string(value.size()) + ") = ?";
      values.push_back(blob(value));
      return true;
  }
  return false;
}

void add_and(ScanSql& s, const std::string& cond) { s.sql += (s.sql.empty() ? " WHERE " : " AND ") + cond; }

std::int64_t to_int64(std::size_t n) {
  return static_cast<std::int64_t>(std::min<std::size_t>(n, std::numeric_limits<std::int64_t>::max()));
}

}  // namespace

ScanSql where_of(const IndexScan& s, int version) {
  ScanSql w;
  const RecordQuery& q = s.query;
  if (q.since_us) {
    add_and(w, "timestamp_us >= ?");
    w.values.push_back(integer(*q.since_us));
  }
  if (q.until_us) {
    add_and(w, "timestamp_us <= ?");
    w.values.push_back(integer(*q.until_us));
  }
  // Journal semantics: the values of one field ORed, the fields ANDed (in order of first mention).
  std::vector<std::string_view> fields;
  for (const auto& m : q.matches)
    if (std::find(fields.begin(), fields.end(), m.field) == fields.end()) fields.push_back(m.field);
  for (const std::string_view field : fields) {
    const Column* c = column_of(field, version);
    if (c == nullptr) {
      w.decode_check = true;
      continue;
    }
    std::string any;
    for (const auto& m : q.matches) {
      if (m.field != field) continue;
      std::string one;
      if (!add_condition(*c, m.value, one, w.values)) continue;
      any += (any.empty() ? "" : " OR ") + one;
    }
    if (any.empty()) w.never = true;
    add_and(w, any.empty() ? "0" : "(" + any + ")");
  }
  if (s.visible_to && *s.visible_to != 0) {  // peer_may_see(), its conditions as SQL
    add_and(w, "uid = ? AND euid = ? AND gid = egid AND json_type(extra, '$." + std::string(extras::kOwnerMayRead) +
                   "') = 'true'");
    w.values.push_back(integer(*s.visible_to));
    w.values.push_back(integer(*s.visible_to));
  }
  return w;
}

ScanSql page_sql(const IndexScan& s, int version, std::size_t limit) {
  ScanSql w = where_of(s, version);
  const bool asc = !s.query.newest_first;
  // Keyset paging: (timestamp_us, rowid) past the last row; the first term keeps the index range.
  if (s.first) {
    add_and(w, "timestamp_us >= ? AND (timestamp_us > ? OR rowid >= ?)");
    for (const auto v : {s.first->timestamp_us, s.first->timestamp_us, s.first->rowid}) w.values.push_back(integer(v));
  }
  if (s.last) {
    add_and(w, asc ? "timestamp_us >= ? AND (timestamp_us > ? OR rowid > ?)"
                   : "timestamp_us <= ? AND (timestamp_us < ? OR rowid < ?)");
    for (const auto v : {s.last->timestamp_us, s.last->timestamp_us, s.last->rowid}) w.values.push_back(integer(v));
  }
  const std::string extra = s.query.with_extra ? "extra" : listed_extra_expr();
  w.sql = index_rows::select_columns(version, /*with_analysis=*/false, extra) + ", rowid FROM dumps" + w.sql +
          (asc ? " ORDER BY timestamp_us, rowid" : " ORDER BY timestamp_us DESC, rowid DESC");
  if (!w.decode_check) {
    w.sql += " LIMIT ?";
    w.values.push_back(integer(to_int64(limit)));
  }
  return w;
}

ScanSql nth_newest_sql(const IndexScan& s, int version, std::size_t n) {
  ScanSql w = where_of(s, version);
  w.sql = "SELECT timestamp_us, rowid FROM dumps" + w.sql + " ORDER BY timestamp_us DESC, rowid DESC LIMIT 1 OFFSET ?";
  w.values.push_back(integer(to_int64(n - 1)));
  return w;
}

void bind_all(sqlite::Stmt& st, const ScanSql& sql) {
  int i = 1;
  for (const auto& v : sql.values) {
    switch (v.type) {
      case Bound::Type::Integer: st.bind(i, v.integer); break;
      case Bound::Type::Text: st.bind_text(i, v.bytes); break;
      case Bound::Type::Blob: st.bind_blob(i, v.bytes); break;
    }
    ++i;
  }
}

}  // namespace index_scan

namespace {

using index_scan::ScanSql;
using sqlite::Stmt;

// Rows a page of scan() holds: a page is one statement, so no read transaction spans `each`.
constexpr std::size_t kScanPageRows = 64;

/// The row's record, and whether the scan delivers it (the checks SQL could not make).
bool decode(const Stmt& st, const IndexScan& s, const ScanSql& sql, const std::string& path, int version,
            DumpRecord& r) {
  r = index_rows::read_record(st, path, version);
  if (!s.query.with_extra && r.extra.is_object()) {
    for (auto it = r.extra.begin(); it != r.extra.end();) it = it->is_null() ? r.extra.erase(it) : std::next(it);
  }
  if (sql.decode_check && !record_matches(s.query, r)) return false;
  return !s.visible_to || peer_may_see(r, *s.visible_to);
}

/// The row's place: `column` holds its rowid, the select its timestamp_us (column 3) or, for
/// nth_newest_sql() (column 1), the column before.
IndexScan::Key key_at(const Stmt& st, int rowid_column) {
  return {st.int64(rowid_column == 1 ? 0 : 3), st.int64(rowid_column)};
}

}  // namespace

std::vector<DumpRecord> Index::next_page(IndexScan& s, std::size_t max_rows) const {
  std::lock_guard lock(mu_);
  require_open();
  std::vector<DumpRecord> out;
  const RecordQuery& q = s.query;
  if (s.done || max_rows == 0) return out;
  if ((q.limit && *q.limit == 0) || index_scan::where_of(s, version_).never) {
    s.done = true;
    return out;
  }
  if (!s.started) {
    s.started = true;
    if (q.limit && !q.newest_first) {  // oldest first: from the oldest of the newest N
      const ScanSql probe = index_scan::nth_newest_sql(s, version_, *q.limit);
      if (!probe.decode_check) {
        Stmt st(db_, path_, probe.sql.c_str());
        index_scan::bind_all(st, probe);
        if (st.step("scan")) s.first = key_at(st, 1);
      } else {  // the matches need decoding: count them newest first, one record at a time
        IndexScan back = s;
        back.query.newest_first = true;
        const ScanSql sql = index_scan::page_sql(back, version_, *q.limit);
        Stmt st(db_, path_, sql.sql.c_str());
        index_scan::bind_all(st, sql);
        std::size_t n = 0;
        DumpRecord r;
        while (n < *q.limit && st.step("scan"))
          if (decode(st, s, sql, path_, version_, r) && ++n == *q.limit) s.first = key_at(st, index_rows::kColumnCount);
      }
    }
  }
  std::size_t want = max_rows;
  if (q.limit) want = std::min(want, *q.limit - std::min(*q.limit, s.delivered));
  const ScanSql sql = index_scan::page_sql(s, version_, want);
  Stmt st(db_, path_, sql.sql.c_str());
  index_scan::bind_all(st, sql);
  bool more = false;
  while (out.size() < want) {
    if (!st.step("scan")) break;
    DumpRecord r;
    const bool keep = decode(st, s, sql, path_, version_, r);
    s.last = key_at(st, index_rows::kColumnCount);  // skipped rows too: the next page starts after them
    if (!keep) continue;
    out.push_back(std::move(r));
    if (out.size() == want) more = true;
  }
  s.delivered += out.size();
  if (!more || (q.limit && s.delivered >= *q.limit)) s.done = true;
  return out;
}

void Index::scan_page(IndexScan& s, std::size_t max_rows, const std::function<void(DumpRecord&&)>& each) const {
  for (auto& r : next_page(s, max_rows)) each(std::move(r));
}

void Index::scan(const RecordQuery& q, const std::function<bool(DumpRecord&&)>& each) const {
  IndexScan s;
  s.query = q;
  const std::size_t page = q.with_extra ? kScanPageRows / 4 : kScanPageRows;  // a capture may be 100 KB
  while (!s.done)
    for (auto& r : next_page(s, page))
      if (!each(std::move(r))) return;
}

std::vector<std::string> Index::list_ids() const {
  std::lock_guard lock(mu_);
  require_open();
  Stmt st(db_, path_, "SELECT id FROM dumps ORDER BY timestamp_us, rowid");
  std::vector<std::string> out;
  while (st.step("list ids")) out.push_back(st.bytes(0));
  return out;
}

}  // namespace coredumpd
