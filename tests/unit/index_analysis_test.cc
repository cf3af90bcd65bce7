// The index's schema version 3: the analysis columns (signature, signature_text, analysis), their
// migration from a version 2 store written as that code wrote it, Index::set_analysis(), and
// update() leaving the analysis alone.
#include <gtest/gtest.h>

#include "tests/unit/raw_db.h"
#include <sqlite3.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "store/index.h"
#include "tests/unit/store_test_files.h"

namespace coredumpd {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Version 2 as coredumpd wrote it up to commit 36b451a (`git show 36b451a:store/index_schema.cc`,
// kMigrateV2, and store/index.cc, kInsert), verbatim, on top of version 1's DDL (fixtures/index-v1.sql).
constexpr const char* kMigrateV2 =
    "ALTER TABLE dumps ADD COLUMN rule TEXT NOT NULL DEFAULT '';"
    "ALTER TABLE dumps ADD COLUMN container_key BLOB;"
    "CREATE INDEX dumps_container ON dumps(container_key);";
constexpr const char* kInsertV2 =
    "INSERT INTO dumps (id, state, reason, timestamp_us, pid, tid, uid, gid, euid, egid, comm, exe,"
    " argv, argc, cwd, cgroup, hostname, boot_id, coredump_mask, signal, crashing_tid_ns,"
    " core_size, stored_size, compression, path, extra, rule, container_key)"
    " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19,"
    " ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27, ?28)";

const std::string kSig = "0123456789abcdef0123456789abcdef";

/// A raw connection to the store's database, bypassing Index.
class Db : public testing_db::RawDb {
 public:
  using RawDb::RawDb;
  /// Inserts a complete dump the way version 2's Index::insert() did.
  void insert_v2(const std::string& id, std::int64_t ts, const std::string& rule) {
    sqlite3_stmt* st = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(db_, kInsertV2, -1, &st, nullptr), SQLITE_OK);
    const auto text = [&](int i, const std::string& v) {
      sqlite3_bind_text64(st, i, v.data(), v.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
    };
    const auto blob = [&](int i, const std::string& v) { sqlite3_bind_blob64(st, i, v.data(), v.size(), SQLITE_TRANSIENT); };
    text(1, id);
    text(2, "complete");
    blob(3, "");
    sqlite3_bind_int64(st, 4, ts);
    sqlite3_bind_int64(st, 5, 1000);
    sqlite3_bind_null(st, 6);
    for (int i = 7; i <= 10; ++i) sqlite3_bind_int64(st, i, 1000);
    blob(11, "prog");
    blob(12, "/usr/bin/prog");
    blob(13, std::string("prog\0", 5));
    sqlite3_bind_int64(st, 14, 1);
    blob(15, "/");
    blob(16, "0::/\n");
    blob(17, "host");
    text(18, "boot");
    sqlite3_bind_int64(st, 19, 1);
    sqlite3_bind_int64(st, 20, 11);
    sqlite3_bind_int64(st, 21, 1);
    sqlite3_bind_int64(st, 22, 4096);
    sqlite3_bind_int64(st, 23, 1024);
    text(24, "zstd");
    text(25, id + ".zst");
    text(26, json{{"rule", rule}}.dump());
    text(27, rule);
    sqlite3_bind_null(st, 28);
    EXPECT_EQ(sqlite3_step(st), SQLITE_DONE) << sqlite3_errmsg(db_);
    sqlite3_finalize(st);
  }
};

std::string schema_v1() {
  std::ifstream in(COREDUMPD_UNIT_FIXTURES "/index-v1.sql");
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_FALSE(text.str().empty()) << "cannot read " COREDUMPD_UNIT_FIXTURES "/index-v1.sql";
  return text.str();
}

/// A report as the analyzer would print it (its exact shape is analysis/'s business, not the index's).
json report(const std::string& top) {
  return {{"version", 1}, {"state", "ok"}, {"threads", json::array({{{"frames", json::array({{{"function", top}}})}}})}};
}

class IndexAnalysisTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "index_analysis_test.XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }

  /// The store as version 2 left it: three complete dumps.
  void write_v2_store() {
    Db db(Index::db_path(dir_));
    db.exec("PRAGMA journal_mode=WAL");
    db.exec("BEGIN IMMEDIATE");
    db.exec(schema_v1());
    db.exec(kMigrateV2);
    db.exec("PRAGMA user_version = 2");
    db.exec("COMMIT");
    for (int n = 1; n <= 3; ++n) db.insert_v2(id(n), n * 1000, n == 2 ? "web" : "");
  }

  static std::string id(int n) { return unit::make_id(n); }

  DumpRecord record(int n) const {
    DumpRecord r;
    r.id = id(n);
    r.state = DumpState::InProgress;
    r.timestamp_us = n * 1000;
    r.pid = 77;
    r.compression = "zstd";
    r.path = r.id + ".zst";
    return r;
  }

  std::string dir_;
};

TEST_F(IndexAnalysisTest, ReadOnlyOpenReadsVersion2WithoutAnalysis) {
  write_v2_store();
  {
    const Index ro(dir_, /*writable=*/false);
    const auto all = ro.list();
    ASSERT_EQ(all.size(), 3U);
    EXPECT_EQ(all[1].rule, "web");
    EXPECT_EQ(all[1].signature, "");
    EXPECT_TRUE(ro.get(id(2))->analysis.is_null());
  }
  Db db(Index::db_path(dir_));
  EXPECT_EQ(db.scalar("PRAGMA user_version"), "2") << "a read-only open never migrates";
}

TEST_F(IndexAnalysisTest, ReadOnlyIndexRefusesSetAnalysis) {
  write_v2_store();
  { const Index migrated(dir_, /*writable=*/true); }
  Index ro(dir_, /*writable=*/false);
  EXPECT_THROW(ro.set_analysis(id(1), report("f"), kSig, "SIGSEGV: f"), IndexError);
  EXPECT_TRUE(ro.get(id(1))->analysis.is_null());
}

TEST_F(IndexAnalysisTest, WritableOpenMigratesVersion2) {
  write_v2_store();
  { const Index migrated(dir_, /*writable=*/true); }
  {
    Db db(Index::db_path(dir_));
    EXPECT_EQ(db.scalar("PRAGMA user_version"), std::to_string(Index::kSchemaVersion));
    for (const char* column : {"signature", "signature_text", "analysis"}) {
      EXPECT_EQ(db.scalar(std::string("SELECT type FROM pragma_table_info('dumps') WHERE name = '") + column + "'"), "TEXT")
          << column;
      EXPECT_EQ(db.scalar(std::string("SELECT count(*) FROM dumps WHERE ") + column + " IS NOT NULL"), "0") << column;
    }
    EXPECT_EQ(db.scalar("SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = 'dumps_signature'"), "1");
    EXPECT_EQ(db.scalar("SELECT count(*) FROM dumps"), "3") << "no row lost";
  }
  Index index(dir_, /*writable=*/true);
  EXPECT_EQ(index.get(id(2))->rule, "web") << "version 2's columns kept";
  EXPECT_EQ(index.get(id(2))->argv, std::vector<std::string>{"prog"});
  ASSERT_TRUE(index.set_analysis(id(2), report("crash_here"), kSig, "SIGSEGV: crash_here"));
  EXPECT_EQ(index.get(id(2))->signature, kSig);
}

TEST_F(IndexAnalysisTest, SetAnalysisThenGetAndList) {
  Index index(dir_, /*writable=*/true);
  for (int n = 1; n <= 2; ++n) index.insert(record(n));
  EXPECT_TRUE(index.get(id(1))->analysis.is_null()) << "not analysed yet";
  EXPECT_EQ(index.get(id(1))->signature, "");

  const std::string text = "SIGSEGV: crash_here | \xff\xfe | main";  // symbols may not be UTF-8
  ASSERT_TRUE(index.set_analysis(id(1), report("crash_here"), kSig, text));
  const auto got = index.get(id(1));
  EXPECT_EQ(got->signature, kSig);
  EXPECT_EQ(got->signature_text, text);
  EXPECT_EQ(got->analysis, report("crash_here"));

  const auto all = index.list();
  ASSERT_EQ(all.size(), 2U);
  EXPECT_EQ(all[0].signature, kSig);
  EXPECT_EQ(all[0].signature_text, text);
  EXPECT_TRUE(all[0].analysis.is_null()) << "list() leaves the (possibly 1 MiB) report out";
  EXPECT_EQ(all[1].signature, "");

  // A second analysis replaces the first; an unavailable one has no signature (stored NULL).
  const json unavailable = {{"version", 1}, {"state", "unavailable"}, {"reason", "analyzer timed out"}};
  ASSERT_TRUE(index.set_analysis(id(1), unavailable, "", ""));
  EXPECT_EQ(index.get(id(1))->analysis, unavailable);
  EXPECT_EQ(index.get(id(1))->signature, "");
  Db db(Index::db_path(dir_));
  EXPECT_EQ(db.scalar("SELECT signature FROM dumps WHERE id = '" + id(1) + "'"), "NULL");
  EXPECT_EQ(db.scalar("SELECT signature_text FROM dumps WHERE id = '" + id(1) + "'"), "NULL");
}

TEST_F(IndexAnalysisTest, SetAnalysisRefusals) {
  Index index(dir_, /*writable=*/true);
  index.insert(record(1));
  EXPECT_FALSE(index.set_analysis(id(9), report("f"), kSig, "SIGSEGV: f")) << "no such row";
  EXPECT_THROW(index.set_analysis(id(1), report("f"), "0123", "SIGSEGV: f"), IndexError);
  EXPECT_THROW(index.set_analysis(id(1), report("f"), "0123456789ABCDEF0123456789ABCDEF", "x"), IndexError);
  EXPECT_TRUE(index.get(id(1))->analysis.is_null()) << "a refused call wrote nothing";
}

TEST_F(IndexAnalysisTest, UpdateKeepsTheAnalysis) {
  Index index(dir_, /*writable=*/true);
  DumpRecord r = record(1);
  index.insert(r);
  ASSERT_TRUE(index.set_analysis(r.id, report("crash_here"), kSig, "SIGSEGV: crash_here"));
  // finalize/retention update the record they hold, which has no analysis (or an older one).
  r.state = DumpState::Complete;
  r.extra["vacuumed"] = json::object();
  r.signature = "ffffffffffffffffffffffffffffffff";
  r.analysis = report("stale");
  index.update(r);
  const auto got = index.get(r.id);
  EXPECT_EQ(got->state, DumpState::Complete);
  EXPECT_TRUE(got->extra.contains("vacuumed"));
  EXPECT_EQ(got->signature, kSig);
  EXPECT_EQ(got->signature_text, "SIGSEGV: crash_here");
  EXPECT_EQ(got->analysis, report("crash_here"));
}

TEST_F(IndexAnalysisTest, InsertWritesTheRecordsAnalysis) {
  Index index(dir_, /*writable=*/true);
  DumpRecord r = record(1);
  r.signature = kSig;
  r.signature_text = "SIGBUS: f";
  r.analysis = report("f");
  index.insert(r);
  index.insert(record(2));
  EXPECT_EQ(index.get(id(1))->analysis, report("f"));
  EXPECT_EQ(index.get(id(1))->signature_text, "SIGBUS: f");
  EXPECT_TRUE(index.get(id(2))->analysis.is_null());
  r.id = id(3);
  r.signature = "not hex";
  EXPECT_THROW(index.insert(r), IndexError);
}

TEST_F(IndexAnalysisTest, RecordJsonCarriesTheAnalysis) {
  DumpRecord r = record(1);
  json j = to_json(r);
  EXPECT_TRUE(j["signature"].is_null());
  EXPECT_TRUE(j["signature_text"].is_null());
  EXPECT_FALSE(j.contains("analysis"));
  r.signature = kSig;
  r.signature_text = "SIGSEGV: \xff";
  r.analysis = report("f");
  j = to_json(r);
  EXPECT_EQ(j["signature"], kSig);
  EXPECT_EQ(j["signature_text"], json::parse("[83,73,71,83,69,71,86,58,32,255]")) << "bytes_to_json";
  EXPECT_EQ(j["analysis"], report("f"));
  EXPECT_NO_THROW((void)j.dump());
}

}  // namespace
}  // namespace coredumpd
