// The upload queue's statements (Index, schema 4: table `uploads`, store/upload_row.h).
#include <sqlite3.h>

#include "store/index.h"
#include "store/sqlite_stmt.h"

namespace coredumpd {

namespace {

using sqlite::Stmt;

constexpr const char* kColumns =
    "id, mode, state, upload_id, object_key, record_key, core_bytes, attempts, next_try_us, last_error, queued_us, done_us";

UploadRow read_row(const Stmt& st) {
  UploadRow r;
  r.id = st.bytes(0);
  r.mode = st.bytes(1);
  r.state = st.bytes(2);
  r.upload_id = st.bytes(3);
  r.object_key = st.bytes(4);
  r.record_key = st.bytes(5);
  r.core_bytes = static_cast<std::uint64_t>(st.int64(6));
  r.attempts = st.int64(7);
  r.next_try_us = st.int64(8);
  r.last_error = st.bytes(9);
  r.queued_us = st.int64(10);
  r.done_us = st.int64(11);
  return r;
}

// Binds r's columns as ?1..?12 in kColumns' order.
void bind_row(Stmt& st, const UploadRow& r) {
  st.bind_text(1, r.id);
  st.bind_text(2, r.mode);
  st.bind_text(3, r.state);
  st.bind_text(4, r.upload_id);
  st.bind_text(5, r.object_key);
  st.bind_text(6, r.record_key);
  st.bind(7, static_cast<std::int64_t>(r.core_bytes));
  st.bind(8, r.attempts);
  st.bind(9, r.next_try_us);
  st.bind_text(10, r.last_error);
  st.bind(11, r.queued_us);
  st.bind(12, r.done_us);
}

}  // namespace

std::int64_t Index::upload_origin(std::int64_t now_us) {
  std::lock_guard lock(mu_);
  require_open();
  {
    Stmt st(db_, path_, "SELECT since_us FROM upload_origin LIMIT 1");
    if (st.step("read upload origin")) return st.int64(0);
  }
  Stmt ins(db_, path_, "INSERT INTO upload_origin (since_us) VALUES (?1)");
  ins.bind(1, now_us);
  ins.step("set upload origin");
  return now_us;
}

std::vector<std::string> Index::upload_candidates(std::int64_t since_us, std::size_t max) const {
  std::lock_guard lock(mu_);
  require_open();
  Stmt st(db_, path_,
          "SELECT id FROM dumps WHERE timestamp_us >= ?1 AND state != 'in_progress'"
          " AND NOT EXISTS (SELECT 1 FROM uploads u WHERE u.id = dumps.id)"
          " ORDER BY timestamp_us, rowid LIMIT ?2");
  st.bind(1, since_us);
  st.bind(2, static_cast<std::int64_t>(max));
  std::vector<std::string> out;
  while (st.step("list upload candidates")) out.push_back(st.bytes(0));
  return out;
}

bool Index::add_upload(const UploadRow& r) {
  std::lock_guard lock(mu_);
  require_open();
  Stmt st(db_, path_, (std::string("INSERT OR IGNORE INTO uploads (") + kColumns +
                       ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)").c_str());
  bind_row(st, r);
  st.step("queue an upload");
  return sqlite3_changes(db_) > 0;
}

bool Index::save_upload(const UploadRow& r) {
  std::lock_guard lock(mu_);
  require_open();
  Stmt st(db_, path_,
          "UPDATE uploads SET mode = ?2, state = ?3, upload_id = ?4, object_key = ?5, record_key = ?6,"
          " core_bytes = ?7, attempts = ?8, next_try_us = ?9, last_error = ?10, queued_us = ?11, done_us = ?12"
          " WHERE id = ?1");
  bind_row(st, r);
  st.step("save an upload");
  return sqlite3_changes(db_) > 0;
}

std::optional<UploadRow> Index::get_upload(const std::string& id) const {
  std::lock_guard lock(mu_);
  require_open();
  Stmt st(db_, path_, (std::string("SELECT ") + kColumns + " FROM uploads WHERE id = ?1").c_str());
  st.bind_text(1, id);
  if (!st.step("get an upload")) return std::nullopt;
  return read_row(st);
}

std::vector<UploadRow> Index::due_uploads(std::int64_t now_us, std::size_t max) const {
  return due_uploads(now_us, max, [](const UploadRow&) { return true; });
}

std::vector<UploadRow> Index::due_uploads(std::int64_t now_us, std::size_t max,
                                          const std::function<bool(const UploadRow&)>& take) const {
  std::lock_guard lock(mu_);
  require_open();
  Stmt st(db_, path_, (std::string("SELECT ") + kColumns +
                       " FROM uploads WHERE state NOT IN ('done', 'skipped') AND next_try_us <= ?1"
                       " ORDER BY next_try_us, queued_us").c_str());
  st.bind(1, now_us);
  std::vector<UploadRow> out;
  while (out.size() < max && st.step("list due uploads")) {
    UploadRow row = read_row(st);
    if (take(row)) out.push_back(std::move(row));
  }
  return out;
}

std::size_t Index::uploads_waiting(std::int64_t* soonest_us) const {
  std::lock_guard lock(mu_);
  require_open();
  Stmt st(db_, path_, "SELECT COUNT(*), COALESCE(MIN(next_try_us), 0) FROM uploads WHERE state NOT IN ('done', 'skipped')");
  st.step("count waiting uploads");
  if (soonest_us) *soonest_us = st.int64(1);
  return static_cast<std::size_t>(st.int64(0));
}

}  // namespace coredumpd
