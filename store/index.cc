#include "store/index.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <utility>

#include "store/container_ref.h"
#include "store/index_rows.h"
#include "store/index_schema.h"
#include "store/record_extras.h"
#include "store/sqlite_stmt.h"

namespace coredumpd {

namespace {

using sqlite::exec;
using sqlite::fail;
using sqlite::Stmt;

constexpr const char* kDbName = "index.sqlite";

// Column order shared by INSERT, UPDATE and SELECT: bind_record() and read_record() follow it.
// extra and the columns of schema versions 2 and 3 come last (index_rows::select_columns()).
constexpr const char* kSelectV1Columns =
    "SELECT id, state, reason, timestamp_us, pid, tid, uid, gid, euid, egid, comm, exe, argv, argc,"
    " cwd, cgroup, hostname, boot_id, coredump_mask, signal, crashing_tid_ns, core_size,"
    " stored_size, compression, path";

constexpr const char* kInsert =
    "INSERT INTO dumps (id, state, reason, timestamp_us, pid, tid, uid, gid, euid, egid, comm, exe,"
    " argv, argc, cwd, cgroup, hostname, boot_id, coredump_mask, signal, crashing_tid_ns,"
    " core_size, stored_size, compression, path, extra, rule, container_key, signature, signature_text,"
    " analysis)"
    " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19,"
    " ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27, ?28, ?29, ?30, ?31)";

constexpr const char* kUpdate =
    "UPDATE dumps SET state = ?2, reason = ?3, timestamp_us = ?4, pid = ?5, tid = ?6, uid = ?7,"
    " gid = ?8, euid = ?9, egid = ?10, comm = ?11, exe = ?12, argv = ?13, argc = ?14, cwd = ?15,"
    " cgroup = ?16, hostname = ?17, boot_id = ?18, coredump_mask = ?19, signal = ?20,"
    " crashing_tid_ns = ?21, core_size = ?22, stored_size = ?23, compression = ?24, path = ?25,"
    " extra = ?26, rule = ?27, container_key = ?28 WHERE id = ?1";  // not the analysis: set_analysis()

constexpr const char* kSetAnalysis =
    "UPDATE dumps SET signature = ?2, signature_text = ?3, analysis = ?4 WHERE id = ?1";

bool valid_id(const std::string& id) {
  if (id.empty() || id.size() > 64) return false;
  for (const char c : id) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

bool valid_signature(const std::string& s) {
  if (s.empty()) return true;
  if (s.size() != 32) return false;
  for (const char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

/// Binds the analysis columns: "" and a null report as NULL.
void bind_analysis(Stmt& st, int first, const std::string& signature, const std::string& signature_text,
                   const nlohmann::json& report) {
  if (!valid_signature(signature)) throw IndexError("index: invalid signature (want 32 lower-case hex chars or \"\")");
  const auto text_or_null = [&st](int i, const std::string& v) {
    if (v.empty()) {
      st.bind_null(i);
    } else {
      st.bind_text(i, v);
    }
  };
  text_or_null(first, signature);
  text_or_null(first + 1, signature_text);
  if (report.is_null()) {
    st.bind_null(first + 2);
  } else {
    st.bind_text(first + 2, report.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  }
}

bool valid_path(const std::string& p) {
  return p.find('/') == std::string::npos && p.find('\0') == std::string::npos && p != "." &&
         p != "..";
}

std::string encode_argv(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& a : argv) {
    if (a.find('\0') != std::string::npos)
      throw IndexError("index: argv entry contains a NUL byte");
    out += a;
    out.push_back('\0');
  }
  return out;
}

std::optional<std::vector<std::string>> decode_argv(const std::string& blob, std::int64_t argc) {
  std::vector<std::string> argv;
  std::size_t start = 0;
  while (start < blob.size()) {
    const std::size_t nul = blob.find('\0', start);
    if (nul == std::string::npos) return std::nullopt;  // not NUL-terminated
    argv.emplace_back(blob, start, nul - start);
    start = nul + 1;
  }
  if (argc < 0 || argv.size() != static_cast<std::uint64_t>(argc)) return std::nullopt;
  return argv;
}

void bind_record(Stmt& st, const DumpRecord& r, bool is_update) {
  if (!valid_id(r.id)) throw IndexError("index: invalid dump id (want 1..64 lower-case hex chars)");
  if (!valid_path(r.path)) throw IndexError("index: core path of " + r.id + " is not a file name");
  const std::string argv = encode_argv(r.argv);
  const std::string extra = r.extra.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  st.bind_text(1, r.id);
  st.bind_text(2, state_name(r.state));
  st.bind_blob(3, r.reason);
  st.bind(4, r.timestamp_us);
  st.bind(5, r.pid);
  st.bind_opt(6, r.tid);
  st.bind(7, r.uid);
  st.bind(8, r.gid);
  st.bind(9, r.euid);
  st.bind(10, r.egid);
  st.bind_blob(11, r.comm);
  st.bind_blob(12, r.exe);
  st.bind_blob(13, argv);
  st.bind(14, static_cast<std::int64_t>(r.argv.size()));
  st.bind_blob(15, r.cwd);
  st.bind_blob(16, r.cgroup);
  st.bind_blob(17, r.hostname);
  st.bind_text(18, r.boot_id);
  st.bind(19, static_cast<std::int64_t>(r.coredump_mask));
  st.bind_opt(20, r.signal);
  st.bind_opt(21, r.crashing_tid_ns);
  st.bind(22, static_cast<std::int64_t>(r.core_size));  // same 64 bits; read back as uint64
  st.bind(23, static_cast<std::int64_t>(r.stored_size));
  st.bind_text(24, r.compression);
  st.bind_text(25, r.path);
  st.bind_text(26, extra);
  st.bind_text(27, r.rule);
  st.bind_opt_blob(28, r.container_key);
  if (!is_update) bind_analysis(st, 29, r.signature, r.signature_text, r.analysis);
}

}  // namespace

namespace index_rows {

std::string select_columns(int version, bool with_analysis, const std::string& extra_expr) {
  // Versions 1 to 3 always select 31 columns: the missing ones as NULL, so the count is fixed.
  std::string sql = std::string(kSelectV1Columns) + ", " + extra_expr;
  sql += version >= 2 ? ", rule, container_key" : ", NULL, NULL";
  if (version >= 3) {
    sql += with_analysis ? ", signature, signature_text, analysis" : ", signature, signature_text, NULL";
  } else {
    sql += ", NULL, NULL, NULL";
  }
  return sql;
}

DumpRecord read_record(const Stmt& st, const std::string& path, int version) {
  DumpRecord r;
  r.id = st.bytes(0);
  const auto bad = [&](const std::string& what) {
    return IndexError("index " + path + ": dump " + r.id + ": " + what);
  };
  const auto state = parse_state(st.bytes(1));
  if (!state) throw bad("unknown state '" + st.bytes(1) + "'");
  r.state = *state;
  r.reason = st.bytes(2);
  r.timestamp_us = st.int64(3);
  r.pid = st.int64(4);
  r.tid = st.opt_int64(5);
  r.uid = st.int64(6);
  r.gid = st.int64(7);
  r.euid = st.int64(8);
  r.egid = st.int64(9);
  r.comm = st.bytes(10);
  r.exe = st.bytes(11);
  auto argv = decode_argv(st.bytes(12), st.int64(13));
  if (!argv) throw bad("corrupt argv");
  r.argv = std::move(*argv);
  r.cwd = st.bytes(14);
  r.cgroup = st.bytes(15);
  r.hostname = st.bytes(16);
  r.boot_id = st.bytes(17);
  r.coredump_mask = static_cast<std::uint32_t>(st.int64(18));
  if (const auto sig = st.opt_int64(19)) r.signal = static_cast<int>(*sig);
  r.crashing_tid_ns = st.opt_int64(20);
  r.core_size = static_cast<std::uint64_t>(st.int64(21));
  r.stored_size = static_cast<std::uint64_t>(st.int64(22));
  r.compression = st.bytes(23);
  r.path = st.bytes(24);
  r.extra = nlohmann::json::parse(st.bytes(25), nullptr, /*allow_exceptions=*/false);
  if (r.extra.is_discarded()) throw bad("unparsable extra JSON");
  if (version >= 2) {
    r.rule = st.bytes(26);
    r.container_key = st.opt_bytes(27);
  } else {
    r.rule = rule_from_extra(r.extra);
    r.container_key = container_key_from_extra(r.extra);
  }
  if (version >= 3) {
    r.signature = st.opt_bytes(28).value_or("");
    r.signature_text = st.opt_bytes(29).value_or("");
    if (const auto analysis = st.opt_bytes(30)) {  // NULL: not analysed, or left out by list()
      r.analysis = nlohmann::json::parse(*analysis, nullptr, /*allow_exceptions=*/false);
      if (r.analysis.is_discarded()) throw bad("unparsable analysis JSON");
    }
  }
  return r;
}

}  // namespace index_rows

using index_rows::read_record;

std::string Index::db_path(const std::string& store_dir) {
  if (!store_dir.empty() && store_dir.back() == '/') return store_dir + kDbName;
  return store_dir + "/" + kDbName;
}

std::string Index::select_sql(bool with_analysis) const {
  return index_rows::select_columns(version_, with_analysis) + " FROM dumps";
}

void Index::write_one(const DumpRecord& r, bool is_update) {
  Stmt st(db_, path_, is_update ? kUpdate : kInsert);
  bind_record(st, r, is_update);
  st.step(is_update ? "update" : "insert");
  if (sqlite3_changes(db_) != 1) throw IndexError("index " + path_ + ": no dump with id " + r.id);
}

void Index::insert(const DumpRecord& r) {
  store(r, false);
}

void Index::update(const DumpRecord& r) {
  store(r, true);
}

std::vector<DumpRecord> Index::list() const {
  std::lock_guard lock(mu_);
  require_open();
  Stmt st(db_, path_, (select_sql() + " ORDER BY timestamp_us, rowid").c_str());
  std::vector<DumpRecord> out;
  while (st.step("list")) out.push_back(read_record(st, path_, version_));
  return out;
}

std::vector<DumpRecord> Index::list_container_candidates(const std::string& ref) const {
  if (version_ < 2) return list();  // no container_key column: the caller's match decides
  std::lock_guard lock(mu_);
  require_open();
  // A row matches container_ref_matches() by its key (the column), its name or an id prefix (in
  // extra.container). Names and ids that are byte arrays (not UTF-8) are left to the caller.
  const std::string c = std::string("'$.") + extras::kContainer + ".";
  const std::string name = c + extras::kContainerName + "'";
  const std::string id = c + extras::kContainerId + "'";
  const std::string sql =
      select_sql() + " WHERE container_key = ?1 OR (container_key IS NOT NULL AND json_valid(extra) AND ("
      " json_type(extra, " + name + ") = 'array' OR json_type(extra, " + id + ") = 'array'"
      " OR json_extract(extra, " + name + ") = ?2"
      " OR (?3 AND instr(json_extract(extra, " + id + "), ?2) = 1)))"
      " ORDER BY timestamp_us, rowid";
  Stmt st(db_, path_, sql.c_str());
  st.bind_blob(1, ref);
  st.bind_text(2, ref);
  st.bind(3, ref.size() >= kMinContainerIdPrefix ? 1 : 0);
  std::vector<DumpRecord> out;
  while (st.step("list by container")) out.push_back(read_record(st, path_, version_));
  return out;
}

std::vector<RowSummary> Index::list_summaries() const {
  std::lock_guard lock(mu_);
  require_open();
  // extra is always valid JSON when written by insert()/update(); json_valid() guards the
  // json_type() call (which fails on malformed text) against a hand-edited database. CASE only
  // evaluates the branch it takes.
  const std::string sql = std::string("SELECT id, state, timestamp_us, uid, stored_size, path, ") +
                          index_schema::rule_expression(version_) +
                          ", CASE WHEN json_valid(extra) AND json_type(extra, '$." + extras::kVacuumed +
                          "') = 'object' THEN 1 ELSE 0 END, " + index_schema::upload_expression(version_) +
                          " FROM dumps ORDER BY timestamp_us, rowid";
  Stmt st(db_, path_, sql.c_str());
  std::vector<RowSummary> out;
  while (st.step("list summaries")) {
    RowSummary r;
    r.id = st.bytes(0);
    const auto state = parse_state(st.bytes(1));
    if (!state) {
      throw IndexError("index " + path_ + ": dump " + r.id + ": unknown state '" + st.bytes(1) +
                       "'");
    }
    r.state = *state;
    r.timestamp_us = st.int64(2);
    r.uid = st.int64(3);
    r.stored_size = static_cast<std::uint64_t>(st.int64(4));
    r.path = st.bytes(5);
    r.rule = st.bytes(6);
    r.vacuumed = st.int64(7) != 0;
    r.upload = static_cast<RowSummary::Upload>(st.int64(8));
    out.push_back(std::move(r));
  }
  return out;
}

std::optional<DumpRecord> Index::get(const std::string& id) const {
  std::lock_guard lock(mu_);
  require_open();
  Stmt st(db_, path_, (select_sql(/*with_analysis=*/true) + " WHERE id = ?1").c_str());
  st.bind_text(1, id);
  if (!st.step("get")) return std::nullopt;
  return read_record(st, path_, version_);
}

bool Index::remove(const std::string& id) {
  std::lock_guard lock(mu_);
  require_open();
  Stmt st(db_, path_, "DELETE FROM dumps WHERE id = ?1");
  st.bind_text(1, id);
  st.step("remove");
  return sqlite3_changes(db_) == 1;
}

bool Index::set_analysis(const std::string& id, const nlohmann::json& report, const std::string& signature,
                         const std::string& signature_text) {
  std::lock_guard lock(mu_);
  require_open();
  if (!writable_) throw IndexError("index " + path_ + " is read-only: cannot store the analysis of " + id);
  Stmt st(db_, path_, kSetAnalysis);
  st.bind_text(1, id);
  bind_analysis(st, 2, signature, signature_text, report);
  st.step("set analysis");
  return sqlite3_changes(db_) == 1;
}

int Index::mark_in_progress_interrupted(const std::string& reason) {
  std::lock_guard lock(mu_);
  require_open();
  Stmt st(db_, path_, "UPDATE dumps SET state = ?1, reason = ?2 WHERE state = ?3");
  const std::string interrupted = state_name(DumpState::Interrupted);
  const std::string in_progress = state_name(DumpState::InProgress);
  st.bind_text(1, interrupted);
  st.bind_blob(2, reason);
  st.bind_text(3, in_progress);
  st.step("mark interrupted");
  return sqlite3_changes(db_);
}

}  // namespace coredumpd
