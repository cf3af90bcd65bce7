#include "fleet/fleet_index.h"

#include <libpq-fe.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <nlohmann/json.hpp>

#include "fleet/fleet_schema.h"
#include "fleet/pg_exec.h"
#include "util/text.h"

namespace coredumpd {

using fleet::pg_error;
using fleet::pg_exec;
using fleet::pg_int;
using fleet::pg_text;
using fleet::PgParams;
using fleet::PgResult;

namespace {

// A host that cannot reach the database waits at most this long per attempt, unless the conninfo
// says otherwise (its connect_timeout wins: it comes later in the keyword list).
constexpr const char* kDefaultConnectTimeoutS = "10";
// No statement waits for ever: a worker blocked in libpq cannot be stopped, so a table locked by
// someone else (an ALTER TABLE left in an open transaction) held the upload worker and with it
// the daemon's SIGTERM. A lock is waited for 5 s, a statement runs at most 60 s (`dumpctl fleet
// top` over a large table included); the server then ends it with a clear error, retried later.
// An "options" in the conninfo replaces these, as connect_timeout does.
constexpr const char* kDefaultOptions = "-c lock_timeout=5s -c statement_timeout=60s";

// The columns of a FleetRecord, in read_record()'s order. Build-ids travel as a JSON array: no
// hand-made array literal on either side.
constexpr const char* kRecordColumns =
    "host_id, machine_id, dump_id, timestamp_us, exe, comm, signal, signature, signature_text,"
    " to_json(build_ids)::text, package, container, object_key, record_key, core_bytes, state";

FleetRecord read_record(const PGresult* r, int row) {
  FleetRecord f;
  f.host_id = pg_text(r, row, 0);
  f.machine_id = pg_text(r, row, 1);
  f.dump_id = pg_text(r, row, 2);
  f.timestamp_us = pg_int(r, row, 3);
  f.exe = pg_text(r, row, 4);
  f.comm = pg_text(r, row, 5);
  f.signal = static_cast<int>(pg_int(r, row, 6));
  f.signature = pg_text(r, row, 7);
  f.signature_text = pg_text(r, row, 8);
  f.build_ids = nlohmann::json::parse(pg_text(r, row, 9)).get<std::vector<std::string>>();
  f.package = pg_text(r, row, 10);
  f.container = pg_text(r, row, 11);
  f.object_key = pg_text(r, row, 12);
  f.record_key = pg_text(r, row, 13);
  f.core_bytes = static_cast<std::uint64_t>(pg_int(r, row, 14));
  f.state = pg_text(r, row, 15);
  return f;
}

// `prefix` as a LIKE pattern matching what starts with it: \, % and _ escaped (LIKE's default
// escape character is the backslash).
std::string like_prefix(const std::string& prefix) {
  std::string out;
  for (char c : prefix) {
    if (c == '\\' || c == '%' || c == '_') out += '\\';
    out += c;
  }
  return out + '%';
}

bool is_hex(const std::string& s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

std::string lower(std::string s) {
  for (char& c : s)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return s;
}

void ignore_notice(void*, const char*) {}

// A row count as SQL's LIMIT takes it (a bigint): larger means all rows.
std::string sql_limit(std::size_t limit) {
  return std::to_string(std::min<std::size_t>(limit, static_cast<std::size_t>(INT64_MAX)));
}

}  // namespace

struct FleetIndex::Impl {
  PGconn* conn = nullptr;
  std::function<bool()> cancelled;  ///< set_cancel()'s check

  // One statement; if it failed because the server went away (restarted, or the connection was
  // cut), reconnect once and run it again — every statement here is idempotent. A second failure,
  // or a failed reconnect, throws with both reasons.
  PgResult run(const char* what, const std::string& sql, const PgParams& params) {
    try {
      return pg_exec(conn, what, sql, params, cancelled);
    } catch (const FleetIndexError& first) {
      if (PQstatus(conn) != CONNECTION_BAD) throw;
      PQreset(conn);
      if (PQstatus(conn) != CONNECTION_OK) {
        throw FleetIndexError(std::string(first.what()) + "; reconnecting failed: " + pg_error(conn), /*unreachable=*/true);
      }
      return pg_exec(conn, what, sql, params, cancelled);
    }
  }
};

FleetIndex::FleetIndex(const std::string& conninfo) : impl_(new Impl) {
  const std::array<const char*, 5> keywords = {"connect_timeout", "application_name", "options", "dbname", nullptr};
  const std::array<const char*, 5> values = {kDefaultConnectTimeoutS, "coredumpd", kDefaultOptions, conninfo.c_str(),
                                             nullptr};
  impl_->conn = PQconnectdbParams(keywords.data(), values.data(), /*expand_dbname=*/1);
  try {
    if (impl_->conn == nullptr) throw FleetIndexError("fleet index: out of memory connecting");
    if (PQstatus(impl_->conn) != CONNECTION_OK) {
      throw FleetIndexError("fleet index: cannot connect: " + pg_error(impl_->conn), /*unreachable=*/true);
    }
    // "relation already exists, skipping" and the like: expected, not for stderr.
    PQsetNoticeProcessor(impl_->conn, ignore_notice, nullptr);
    fleet::migrate_fleet_schema(impl_->conn);
  } catch (...) {
    PQfinish(impl_->conn);
    delete impl_;
    throw;
  }
}

FleetIndex::~FleetIndex() {
  PQfinish(impl_->conn);
  delete impl_;
}

void FleetIndex::set_cancel(std::function<bool()> cancelled) { impl_->cancelled = std::move(cancelled); }

void FleetIndex::upsert(const FleetRecord& r) {
  // A later upsert may come before the analysis finished: an empty signature never erases a known one.
  static const std::string sql = R"sql(
INSERT INTO fleet_crashes (host_id, machine_id, dump_id, timestamp_us, exe, comm, signal, signature,
    signature_text, build_ids, package, container, object_key, record_key, core_bytes, state)
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, ARRAY(SELECT json_array_elements_text($10::json)),
          $11, $12, $13, $14, $15, $16)
ON CONFLICT (host_id, dump_id) DO UPDATE SET
  machine_id = EXCLUDED.machine_id, timestamp_us = EXCLUDED.timestamp_us, exe = EXCLUDED.exe,
  comm = EXCLUDED.comm, signal = EXCLUDED.signal,
  signature = coalesce(nullif(EXCLUDED.signature, ''), fleet_crashes.signature),
  signature_text = coalesce(nullif(EXCLUDED.signature_text, ''), fleet_crashes.signature_text),
  build_ids = CASE WHEN cardinality(EXCLUDED.build_ids) > 0 THEN EXCLUDED.build_ids ELSE fleet_crashes.build_ids END,
  package = EXCLUDED.package, container = EXCLUDED.container, object_key = EXCLUDED.object_key,
  record_key = EXCLUDED.record_key, core_bytes = EXCLUDED.core_bytes, state = EXCLUDED.state,
  updated_at = now()
)sql";
  if (r.host_id.empty() || r.dump_id.empty()) throw FleetIndexError("fleet index: a record needs a host_id and a dump_id");
  // Names come from the crashing process (comm, the executable's path, its symbols, its ELF
  // notes) and may be any bytes; the database takes UTF-8 only, and a refused row would be
  // refused again at every retry.
  const auto text = [](const std::string& s) { return replace_invalid_utf8(s); };
  impl_->run("upsert", sql,
             {r.host_id, r.machine_id, r.dump_id, std::to_string(r.timestamp_us), text(r.exe), text(r.comm),
              std::to_string(r.signal), lower(r.signature), text(r.signature_text),
              nlohmann::json(r.build_ids).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
              text(r.package), text(r.container), r.object_key, r.record_key, std::to_string(r.core_bytes), r.state});
}

bool FleetIndex::signature_has_core(const std::string& signature) {
  if (signature.empty()) return false;  // an unanalysed crash matches nothing
  const PgResult res = impl_->run(
      "signature_has_core",
      "SELECT EXISTS (SELECT 1 FROM fleet_crashes WHERE signature = $1 AND state = 'uploaded' AND object_key <> '')",
      {lower(signature)});
  return pg_text(res.get(), 0, 0) == "t";
}

std::vector<FleetSignature> FleetIndex::top_signatures(std::int64_t since_us, std::int64_t until_us, std::size_t limit) {
  // Unanalysed crashes (empty signature) have no group to count in: left out.
  static const std::string sql = R"sql(
SELECT signature, max(signature_text), count(*), count(DISTINCT host_id), min(timestamp_us), max(timestamp_us),
       to_json(array_agg(DISTINCT coalesce(nullif(package, ''), build_ids[1], '')))::text
  FROM fleet_crashes
 WHERE signature <> '' AND timestamp_us BETWEEN $1 AND $2
 GROUP BY signature
 ORDER BY count(*) DESC, max(timestamp_us) DESC, signature
 LIMIT $3
)sql";
  const PgResult res = impl_->run("top_signatures", sql,
                                  {std::to_string(since_us), std::to_string(until_us), sql_limit(limit)});
  std::vector<FleetSignature> out;
  for (int i = 0; i < PQntuples(res.get()); ++i) {
    FleetSignature s;
    s.signature = pg_text(res.get(), i, 0);
    s.signature_text = pg_text(res.get(), i, 1);
    s.count = static_cast<std::uint64_t>(pg_int(res.get(), i, 2));
    s.hosts = static_cast<std::uint64_t>(pg_int(res.get(), i, 3));
    s.first_us = pg_int(res.get(), i, 4);
    s.last_us = pg_int(res.get(), i, 5);
    for (const auto& v : nlohmann::json::parse(pg_text(res.get(), i, 6)))
      if (!v.get<std::string>().empty()) s.versions.push_back(v.get<std::string>());
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<FleetRecord> FleetIndex::crashes_of(const std::string& signature, std::size_t limit) {
  const std::string prefix = lower(signature);
  if (prefix.empty() || !is_hex(prefix))
    throw FleetIndexError("fleet index: a signature is hex digits, not \"" + signature + "\"");
  const PgResult sigs = impl_->run(
      "crashes_of", "SELECT DISTINCT signature FROM fleet_crashes WHERE signature LIKE $1 ORDER BY 1 LIMIT 2",
      {like_prefix(prefix)});
  if (PQntuples(sigs.get()) == 0) return {};
  if (PQntuples(sigs.get()) > 1)
    throw FleetIndexError("fleet index: signature prefix " + prefix + " is ambiguous (" + pg_text(sigs.get(), 0, 0) +
                          ", " + pg_text(sigs.get(), 1, 0) + ", ...)");
  const PgResult res = impl_->run("crashes_of",
                                  std::string("SELECT ") + kRecordColumns +
                                      " FROM fleet_crashes WHERE signature = $1"
                                      " ORDER BY timestamp_us DESC, host_id, dump_id LIMIT $2",
                                  {pg_text(sigs.get(), 0, 0), sql_limit(limit)});
  std::vector<FleetRecord> out;
  for (int i = 0; i < PQntuples(res.get()); ++i) out.push_back(read_record(res.get(), i));
  return out;
}

std::optional<FleetRecord> FleetIndex::find_dump(const std::string& dump_id) {
  if (dump_id.empty()) throw FleetIndexError("fleet index: empty dump id");
  // An exact id wins over a longer one it prefixes; the same id on two hosts is ambiguous.
  for (const bool exact : {true, false}) {
    const char* where = exact ? "dump_id = $1" : "dump_id LIKE $1";
    const std::string arg = exact ? dump_id : like_prefix(dump_id);
    const PgResult res = impl_->run(
        "find_dump",
        std::string("SELECT ") + kRecordColumns + " FROM fleet_crashes WHERE " + where + " ORDER BY host_id, dump_id LIMIT 2",
        {arg});
    if (PQntuples(res.get()) == 1) return read_record(res.get(), 0);
    if (PQntuples(res.get()) > 1)
      throw FleetIndexError("fleet index: dump id " + dump_id + " is ambiguous: " + pg_text(res.get(), 0, 2) +
                            " on " + pg_text(res.get(), 0, 0) + ", " + pg_text(res.get(), 1, 2) + " on " +
                            pg_text(res.get(), 1, 0));
  }
  return std::nullopt;
}

}  // namespace coredumpd
