// Index::scan(): the same answers as record_matches() over list() on randomized records and
// queries, its order, limit and time-range edges, paging, visibility, and its query plans.
#include "store/index_scan.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "store/index.h"
#include "store/query_protocol.h"
#include "store/record_query.h"

namespace coredumpd {
namespace {

namespace fs = std::filesystem;

class IndexScanTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "index_scan_test.XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    index_ = std::make_unique<Index>(dir_, /*writable=*/true);
  }
  void TearDown() override {
    index_.reset();
    fs::remove_all(dir_);
  }

  std::vector<std::string> scanned(const RecordQuery& q) const {
    std::vector<std::string> ids;
    index_->scan(q, [&](DumpRecord&& r) {
      ids.push_back(r.id);
      return true;
    });
    return ids;
  }

  std::string dir_;
  std::unique_ptr<Index> index_;
};

std::string make_id(int n) {
  char buf[33];
  std::snprintf(buf, sizeof buf, "%032x", n);
  return buf;
}

/// What the contract says (store/record_query.h, DumpSource::scan()'s default): list() filtered by
/// record_matches(), the newest `limit`, in the asked order.
std::vector<std::string> expected(const std::vector<DumpRecord>& all, const RecordQuery& q) {
  std::vector<std::string> ids;
  for (const auto& r : all)
    if (record_matches(q, r)) ids.push_back(r.id);
  if (q.limit && ids.size() > *q.limit) ids.erase(ids.begin(), ids.end() - static_cast<std::ptrdiff_t>(*q.limit));
  if (q.newest_first) std::reverse(ids.begin(), ids.end());
  return ids;
}

template <typename T>
const T& pick(std::mt19937& rng, const std::vector<T>& v) {
  return v[std::uniform_int_distribution<std::size_t>(0, v.size() - 1)(rng)];
}

const std::vector<std::string> kComms{"a", "b", "", "\xff\x01", "sleep"};
const std::vector<std::string> kBoots{"", "0123", "4567"};
const std::vector<std::string> kRules{"", "web", "db"};
const std::vector<std::string> kSignatures{"", "0123456789abcdef0123456789abcdef", "fedcba9876543210fedcba9876543210"};

DumpRecord random_record(std::mt19937& rng, int n) {
  DumpRecord r;
  r.id = make_id(n);
  r.state = pick(rng, std::vector<DumpState>{DumpState::Complete, DumpState::Truncated, DumpState::Failed,
                                             DumpState::MetadataOnly});
  r.timestamp_us = 1'700'000'000'000'000 + std::uniform_int_distribution<int>(0, 40)(rng);  // many ties
  r.pid = pick(rng, std::vector<std::int64_t>{1, 2, 3, -1});
  r.uid = pick(rng, std::vector<std::int64_t>{0, 1000, 1001, -1});
  r.euid = pick(rng, std::vector<std::int64_t>{r.uid, r.uid, 0});
  r.gid = pick(rng, std::vector<std::int64_t>{100, 0});
  r.egid = pick(rng, std::vector<std::int64_t>{r.gid, r.gid, 5});
  r.comm = pick(rng, kComms);
  r.exe = "/usr/bin/" + r.comm;
  r.cwd = pick(rng, std::vector<std::string>{"", "/", "/tmp"});
  r.hostname = pick(rng, std::vector<std::string>{"", "h1", "h2"});
  r.boot_id = pick(rng, kBoots);
  if (rng() % 3 != 0) r.signal = pick(rng, std::vector<int>{6, 11, 31});
  r.rule = pick(rng, kRules);
  r.signature = pick(rng, kSignatures);
  r.extra = {{"proc", {{"status", std::string(2000, 'x')}}}, {"owner_may_read", rng() % 4 != 0}};
  if (rng() % 2) {
    const std::string key = pick(rng, std::vector<std::string>{"", "docker:abc", "host"});
    r.extra["container"] = {{"key", key}, {"name", "web"}};
    r.container_key = key;
  }
  return r;
}

FieldMatch random_match(std::mt19937& rng) {
  static const std::vector<std::string> fields{
      "COREDUMP_PID", "COREDUMP_UID",     "COREDUMP_GID",        "COREDUMP_SIGNAL",  "COREDUMP_SIGNAL_NAME",
      "COREDUMP_COMM", "COREDUMP_EXE",    "COREDUMP_CWD",        "COREDUMP_HOSTNAME", "_BOOT_ID",
      "COREDUMPD_ID",  "COREDUMPD_STATE", "COREDUMPD_SIGNATURE", "COREDUMPD_RULE",   "COREDUMPD_CONTAINER",
      "COREDUMP_TIMESTAMP", "NO_SUCH_FIELD"};
  static const std::vector<std::string> values{
      "1", "2", "-1", "01", "0", "1000", "100", "11", "6", "SIGSEGV", "a", "b", "", "\xff\x01", "/usr/bin/a", "/",
      "/tmp", "h1", "0123", "web", "docker:abc", "host", "complete", "failed", "00000000000000000000000000000001",
      "000000000000000000000000000000", "0123", "fedcba", "x", "1700000000000000007"};
  return {pick(rng, fields), pick(rng, values)};
}

TEST_F(IndexScanTest, AgreesWithRecordMatchesOnRandomRecordsAndQueries) {
  std::mt19937 rng(24);
  for (int n = 1; n <= 200; ++n) index_->insert(random_record(rng, n));
  const std::vector<DumpRecord> all = index_->list();
  for (int i = 0; i < 400; ++i) {
    RecordQuery q;
    const int matches = std::uniform_int_distribution<int>(0, 3)(rng);
    for (int m = 0; m < matches; ++m) q.matches.push_back(random_match(rng));
    if (rng() % 3 == 0) q.since_us = 1'700'000'000'000'000 + std::uniform_int_distribution<int>(-2, 42)(rng);
    if (rng() % 3 == 0) q.until_us = 1'700'000'000'000'000 + std::uniform_int_distribution<int>(-2, 42)(rng);
    if (rng() % 3 == 0) q.limit = std::uniform_int_distribution<std::size_t>(0, 12)(rng);
    q.newest_first = rng() % 2 == 0;
    q.with_extra = rng() % 2 == 0;
    std::string shown;
    for (const auto& m : q.matches) shown += m.field + "=" + m.value + " ";
    SCOPED_TRACE(shown + "since " + std::to_string(q.since_us.value_or(0) % 100) + " until " +
                 std::to_string(q.until_us.value_or(0) % 100) + " limit " + std::to_string(q.limit.value_or(999)) +
                 (q.newest_first ? " newest first" : "") + (q.with_extra ? " with extra" : ""));
    ASSERT_EQ(scanned(q), expected(all, q));

    // Page by page (the query service), with peer_may_see() as the service applies it.
    IndexScan s;
    s.query = q;
    s.visible_to = pick(rng, std::vector<uid_t>{0, 1000, 1001});
    std::vector<std::string> paged;
    const std::size_t page = std::uniform_int_distribution<std::size_t>(1, 5)(rng);
    for (int guard = 0; !s.done && guard < 1000; ++guard)
      index_->scan_page(s, page, [&](DumpRecord&& r) { paged.push_back(r.id); });
    std::vector<DumpRecord> visible;
    for (const auto& r : all)
      if (peer_may_see(r, *s.visible_to)) visible.push_back(r);
    ASSERT_EQ(paged, expected(visible, q)) << "visible to " << *s.visible_to << ", pages of " << page;
  }
}

TEST_F(IndexScanTest, WithoutExtraReadsOnlyTheSmallFacts) {
  std::mt19937 rng(1);
  DumpRecord r = random_record(rng, 1);
  r.extra["container"] = {{"key", "docker:abc"}, {"name", "web"}};
  r.extra["rlimit_core"] = 123;
  r.extra["vacuumed"] = {{"reason", "max_use"}};
  r.extra["environ"] = {"A=1"};
  index_->insert(r);
  RecordQuery q;
  q.with_extra = false;
  index_->scan(q, [&](DumpRecord&& got) {
    EXPECT_EQ(got.extra.size(), 4u) << got.extra.dump();
    EXPECT_EQ(got.extra["container"], r.extra["container"]);
    EXPECT_EQ(got.extra["owner_may_read"], r.extra["owner_may_read"]);
    EXPECT_EQ(got.extra["rlimit_core"], 123);
    EXPECT_EQ(got.extra["vacuumed"], r.extra["vacuumed"]);
    EXPECT_EQ(got.comm, r.comm);
    EXPECT_EQ(got.signature, r.signature);
    return true;
  });
  q.with_extra = true;
  index_->scan(q, [&](DumpRecord&& got) {
    EXPECT_EQ(got.extra, r.extra);
    return true;
  });
}

TEST_F(IndexScanTest, OrderLimitAndTimeEdges) {
  // Three at the same time (insertion order breaks the tie), one before, one after.
  const std::int64_t t = 1'700'000'000'000'000;
  const std::vector<std::pair<int, std::int64_t>> rows{{5, t}, {3, t}, {4, t}, {1, t - 1}, {2, t + 1}};
  std::mt19937 rng(3);
  for (const auto& [n, ts] : rows) {
    DumpRecord r = random_record(rng, n);
    r.timestamp_us = ts;
    index_->insert(r);
  }
  const auto ids = [](std::initializer_list<int> ns) {
    std::vector<std::string> v;
    for (int n : ns) v.push_back(make_id(n));
    return v;
  };
  RecordQuery q;
  EXPECT_EQ(scanned(q), ids({1, 5, 3, 4, 2}));
  q.newest_first = true;
  EXPECT_EQ(scanned(q), ids({2, 4, 3, 5, 1}));
  q.limit = 2;
  EXPECT_EQ(scanned(q), ids({2, 4}));
  q.newest_first = false;
  EXPECT_EQ(scanned(q), ids({4, 2}));  // the newest two, oldest first
  q.limit = 0;
  EXPECT_TRUE(scanned(q).empty());
  q.limit = 99;
  EXPECT_EQ(scanned(q), ids({1, 5, 3, 4, 2}));
  q.limit.reset();
  q.since_us = q.until_us = t;  // both bounds inclusive
  EXPECT_EQ(scanned(q), ids({5, 3, 4}));
  q.limit = 1;
  EXPECT_EQ(scanned(q), ids({4}));
  q.since_us = t + 2;
  q.until_us.reset();
  EXPECT_TRUE(scanned(q).empty());
  q.since_us = t + 1;
  q.until_us = t;  // an empty range
  EXPECT_TRUE(scanned(q).empty());
  // A match that needs decoding (no column) with a limit, oldest first: still the newest N.
  q = RecordQuery{};
  q.matches = {{"COREDUMP_TIMESTAMP", std::to_string(t)}, {"NO_SUCH_FIELD", "x"}};
  EXPECT_TRUE(scanned(q).empty());
  q.matches = {{"COREDUMP_SIGNAL_NAME", "SIGSEGV"}, {"COREDUMP_SIGNAL_NAME", "SIGABRT"}, {"COREDUMP_SIGNAL_NAME", "SIGSYS"}};
  q.limit = 2;
  std::vector<DumpRecord> all = index_->list();
  EXPECT_EQ(scanned(q), expected(all, q));
  // Stopping early: `each` returning false ends the scan.
  q = RecordQuery{};
  int calls = 0;
  index_->scan(q, [&](DumpRecord&&) { return ++calls < 2; });
  EXPECT_EQ(calls, 2);
}

/// EXPLAIN QUERY PLAN of `sql` on the store's database, its details joined by "; ".
std::string plan_of(const std::string& dir, const std::string& sql) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open_v2(Index::db_path(dir).c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db, ("EXPLAIN QUERY PLAN " + sql).c_str(), -1, &st, nullptr), SQLITE_OK)
      << sqlite3_errmsg(db) << ": " << sql;
  std::string plan;
  while (st && sqlite3_step(st) == SQLITE_ROW)
    plan += std::string(reinterpret_cast<const char*>(sqlite3_column_text(st, 3))) + "; ";
  sqlite3_finalize(st);
  sqlite3_close(db);
  return plan;
}

TEST_F(IndexScanTest, QueryPlansWalkTheTimeIndex) {
  std::mt19937 rng(5);
  for (int n = 1; n <= 50; ++n) index_->insert(random_record(rng, n));
  IndexScan s;
  s.query.since_us = 1'700'000'000'000'010;
  s.query.until_us = 1'700'000'000'000'020;
  for (const bool newest_first : {false, true}) {
    s.query.newest_first = newest_first;
    const std::string plan = plan_of(dir_, index_scan::page_sql(s, Index::kSchemaVersion, 64).sql);
    EXPECT_NE(plan.find("USING INDEX dumps_timestamp (timestamp_us>? AND timestamp_us<?)"), std::string::npos) << plan;
    EXPECT_EQ(plan.find("TEMP B-TREE"), std::string::npos) << plan;  // the index gives the order
  }
  // A plain listing, the next page of one, and the limit's first row: the index's order, no sort.
  IndexScan all;
  all.query.with_extra = false;
  all.query.limit = 10;
  for (const std::string& sql : {index_scan::page_sql(all, Index::kSchemaVersion, 64).sql,
                                 index_scan::nth_newest_sql(all, Index::kSchemaVersion, 10).sql}) {
    const std::string plan = plan_of(dir_, sql);
    EXPECT_NE(plan.find("dumps_timestamp"), std::string::npos) << plan;
    EXPECT_EQ(plan.find("TEMP B-TREE"), std::string::npos) << plan;
  }
  all.last = IndexScan::Key{1'700'000'000'000'010, 7};
  std::string plan = plan_of(dir_, index_scan::page_sql(all, Index::kSchemaVersion, 64).sql);
  EXPECT_NE(plan.find("USING INDEX dumps_timestamp (timestamp_us>?)"), std::string::npos) << plan;
  // A match on a column is in the WHERE clause, not left to decoding.
  IndexScan pid;
  pid.query.matches = {{"COREDUMP_PID", "2"}, {"COREDUMP_COMM", "a"}, {"COREDUMPD_ID", "00"}};
  const auto sql = index_scan::page_sql(pid, Index::kSchemaVersion, 64);
  EXPECT_FALSE(sql.decode_check);
  EXPECT_NE(sql.sql.find("pid = ?"), std::string::npos) << sql.sql;
  EXPECT_NE(sql.sql.find("CAST(comm AS BLOB) = ?"), std::string::npos) << sql.sql;
}

}  // namespace
}  // namespace coredumpd
