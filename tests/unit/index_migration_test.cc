// The index's migration from schema version 1 (coredumpd up to commit 04ca55a) to version 2 (the
// rule and container_key columns). The version 1 store is written here byte for byte as that
// code wrote it: its DDL, its PRAGMAs and its INSERT, with extra.rule and extra.container as the
// session set them. Then the new Index opens it.
#include <fcntl.h>
#include <gtest/gtest.h>

#include "tests/unit/raw_db.h"
#include <sqlite3.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cli/dumpctl.h"
#include "store/index.h"
#include "store/retention_limits.h"
#include "store/usage.h"
#include "store/vacuum.h"
#include "tests/unit/store_test_files.h"
#include "util/unique_fd.h"

namespace coredumpd {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// The version 1 DDL, kept as a file of its own (fixtures/index-v1.sql: `git show
// 04ca55a:store/index.cc`, kSchema) so that no edit of the migration code can change it.
std::string schema_v1() {
  std::ifstream in(COREDUMPD_UNIT_FIXTURES "/index-v1.sql");
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_FALSE(text.str().empty()) << "cannot read " COREDUMPD_UNIT_FIXTURES "/index-v1.sql";
  return text.str();
}

// `git show 04ca55a:store/index.cc`: kInsert, verbatim.
constexpr const char* kInsertV1 =
    "INSERT INTO dumps (id, state, reason, timestamp_us, pid, tid, uid, gid, euid, egid, comm, exe,"
    " argv, argc, cwd, cgroup, hostname, boot_id, coredump_mask, signal, crashing_tid_ns,"
    " core_size, stored_size, compression, path, extra)"
    " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19,"
    " ?20, ?21, ?22, ?23, ?24, ?25, ?26)";

const std::string kDockerId = "0123456789abcdef" + std::string(48, 'e');
const std::string kBadKey = "cgroup:/machine.slice/\xff\xfe";  // not UTF-8: stored as a byte array

/// A raw connection to the store's database, bypassing Index.
class Db : public testing_db::RawDb {
 public:
  using RawDb::RawDb;
  /// Inserts a complete dump the way version 1's Index::insert() did (empty argv, zstd core).
  void insert_v1(const std::string& id, std::int64_t ts, std::int64_t uid, std::uint64_t stored, const json& extra) {
    sqlite3_stmt* st = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(db_, kInsertV1, -1, &st, nullptr), SQLITE_OK);
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
    for (int i = 7; i <= 10; ++i) sqlite3_bind_int64(st, i, uid);
    blob(11, "prog");
    blob(12, "/usr/bin/prog");
    blob(13, "");
    sqlite3_bind_int64(st, 14, 0);
    blob(15, "/");
    blob(16, "0::/\n");
    blob(17, "host");
    text(18, "boot");
    sqlite3_bind_int64(st, 19, 1);
    sqlite3_bind_int64(st, 20, 11);
    sqlite3_bind_null(st, 21);
    sqlite3_bind_int64(st, 22, static_cast<std::int64_t>(stored) * 4);
    sqlite3_bind_int64(st, 23, static_cast<std::int64_t>(stored));
    text(24, "zstd");
    text(25, id + ".zst");
    text(26, extra.dump(-1, ' ', false, json::error_handler_t::replace));
    EXPECT_EQ(sqlite3_step(st), SQLITE_DONE) << sqlite3_errmsg(db_);
    sqlite3_finalize(st);
  }
};

/// extra.container as to_json(ContainerInfo) wrote it (the keys dumpctl reads).
json container(const json& key, const std::string& name, const std::string& id, bool in_container) {
  return {{"runtime", id.empty() ? "" : "docker"}, {"id", id},    {"name", name},
          {"in_container", in_container},          {"key", key}, {"pidns", nullptr}};
}

class IndexMigrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "index_migration_test.XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    write_v1_store();
  }
  void TearDown() override { fs::remove_all(dir_); }

  /// The store as version 1 left it: six dumps, each complete with its core file.
  void write_v1_store() {
    Db db(Index::db_path(dir_));
    db.exec("PRAGMA journal_mode=WAL");
    db.exec("BEGIN IMMEDIATE");
    db.exec(schema_v1().c_str());
    db.exec("PRAGMA user_version = 1");
    db.exec("COMMIT");
    const auto add = [&](int n, std::int64_t uid, std::uint64_t stored, const json& extra) {
      db.insert_v1(id(n), n * 1'000'000, uid, stored, extra);
      unit::write_file(dir_ + "/" + id(n) + ".zst", std::string(stored, 'z'));
    };
    add(1, 1000, 100, {{"rule", "web"}, {"container", container("docker:" + kDockerId, "", kDockerId, true)}});
    add(2, 1000, 200, {{"rule", "web"}, {"container", container("host", "", "", false)}});
    add(3, 0, 50, {{"rule", ""}, {"container", container("nspawn:box\x1b", "box\x1b", "", true)}});
    add(4, 0, 30, json::object());  // written before rules and containers were recorded
    add(5, 0, 20, {{"rule", 42}, {"container", container(bytes_to_json(kBadKey), "", "", true)}});
    add(6, 0, 10, {{"rule", "db"}, {"container", {{"runtime", "docker"}}}});  // a container without key
  }

  static std::string id(int n) { return unit::make_id(n); }

  /// The ids `dumpctl list --container ref` prints (its --json form).
  std::vector<std::string> listed(const std::string& ref) const {
    std::ostringstream out, err;
    const int rc = cli::dumpctl_main({"dumpctl", "--store", dir_, "list", "--json=pretty", "--container", ref},
                                     cli::Io{out, err, false});
    std::vector<std::string> ids;
    if (rc != 0) return ids;
    for (const auto& r : json::parse(out.str())) ids.push_back(r["id"].get<std::string>());
    return ids;
  }

  /// The checks shared by a read-only open of the old store and a migrated one.
  void expect_fields_and_queries(const Index& index) const {
    EXPECT_EQ(index.get(id(1))->rule, "web");
    EXPECT_EQ(index.get(id(1))->container_key, "docker:" + kDockerId);
    EXPECT_EQ(index.get(id(2))->container_key, "host");
    EXPECT_EQ(index.get(id(3))->rule, "");
    EXPECT_EQ(index.get(id(3))->container_key, "nspawn:box\x1b");
    EXPECT_EQ(index.get(id(4))->rule, "");
    EXPECT_EQ(index.get(id(4))->container_key, std::nullopt) << "no container recorded";
    EXPECT_EQ(index.get(id(5))->rule, "") << "a rule that is not a string counts as the defaults";
    EXPECT_EQ(index.get(id(5))->container_key, kBadKey) << "the key's bytes, from its byte array";
    EXPECT_EQ(index.get(id(6))->container_key, "") << "a container object without key";

    const UsageReport u = usage(index);
    const auto& rules = u.groups.at(GroupKind::Rule);
    EXPECT_EQ(rules.at("web").bytes, 300U);
    EXPECT_EQ(rules.at("web").cores, 2U);
    EXPECT_EQ(rules.at("").bytes, 100U);
    EXPECT_EQ(rules.at("db").bytes, 10U);

    EXPECT_EQ(listed("docker:" + kDockerId), std::vector<std::string>{id(1)}) << "by key";
    EXPECT_EQ(listed(kDockerId.substr(0, 12)), std::vector<std::string>{id(1)}) << "by id prefix";
    EXPECT_TRUE(listed(kDockerId.substr(0, 11)).empty()) << "prefixes shorter than 12 never match";
    EXPECT_EQ(listed("host"), std::vector<std::string>{id(2)});
    EXPECT_EQ(listed("box\x1b"), std::vector<std::string>{id(3)}) << "by name";
    EXPECT_EQ(listed("nspawn:box\x1b"), std::vector<std::string>{id(3)});
    EXPECT_EQ(listed(kBadKey), std::vector<std::string>{id(5)}) << "a key that is not UTF-8";
    EXPECT_TRUE(listed("nope").empty());
  }

  std::string dir_;
};

TEST_F(IndexMigrationTest, ReadOnlyOpenReadsVersion1AsItIs) {
  {
    const Index ro(dir_, /*writable=*/false);
    expect_fields_and_queries(ro);
  }
  Db db(Index::db_path(dir_));
  EXPECT_EQ(db.scalar("PRAGMA user_version"), "1") << "a read-only open never migrates";
  EXPECT_EQ(db.scalar("SELECT count(*) FROM pragma_table_info('dumps') WHERE name = 'rule'"), "0");
}

TEST_F(IndexMigrationTest, WritableOpenAddsAndBackFillsTheColumns) {
  { const Index migrated(dir_, /*writable=*/true); }
  Db db(Index::db_path(dir_));
  EXPECT_EQ(db.scalar("PRAGMA user_version"), std::to_string(Index::kSchemaVersion));
  EXPECT_EQ(db.scalar("SELECT rule FROM dumps WHERE id = '" + id(1) + "'"), "web");
  EXPECT_EQ(db.scalar("SELECT container_key FROM dumps WHERE id = '" + id(1) + "'"), "docker:" + kDockerId);
  EXPECT_EQ(db.scalar("SELECT typeof(container_key) FROM dumps WHERE id = '" + id(1) + "'"), "blob");
  EXPECT_EQ(db.scalar("SELECT container_key FROM dumps WHERE id = '" + id(4) + "'"), "NULL");
  EXPECT_EQ(db.scalar("SELECT container_key FROM dumps WHERE id = '" + id(5) + "'"), kBadKey);
  EXPECT_EQ(db.scalar("SELECT rule FROM dumps WHERE id = '" + id(5) + "'"), "");
  EXPECT_EQ(db.scalar("SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = 'dumps_container'"), "1");
  EXPECT_EQ(db.scalar("SELECT count(*) FROM dumps"), "6") << "no row lost";

  const Index index(dir_, /*writable=*/false);
  expect_fields_and_queries(index);
  // The extras are untouched: readers of the JSON still find rule and container there.
  EXPECT_EQ(index.get(id(1))->extra["rule"], "web");
  EXPECT_EQ(index.get(id(1))->extra["container"]["key"], "docker:" + kDockerId);
}

TEST_F(IndexMigrationTest, PerRuleQuotaUsesTheMigratedColumn) {
  Index index(dir_, /*writable=*/true);
  const UniqueFd dirfd(::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  ASSERT_TRUE(dirfd);
  RetentionLimits limits;
  limits.max_use_per_rule_bytes["web"] = 250;
  const VacuumResult res = vacuum(index, dirfd.get(), limits, "", std::chrono::system_clock::now());
  ASSERT_EQ(res.removed.size(), 1U);
  EXPECT_EQ(res.removed[0].id, id(1)) << "the oldest dump of rule web";
  EXPECT_EQ(res.removed[0].rule, "web");
  EXPECT_FALSE(fs::exists(dir_ + "/" + id(1) + ".zst"));
  EXPECT_TRUE(fs::exists(dir_ + "/" + id(2) + ".zst"));
  EXPECT_EQ(index.get(id(1))->rule, "web") << "the vacuumed row keeps its columns";
  EXPECT_EQ(index.get(id(1))->container_key, "docker:" + kDockerId);
}

TEST_F(IndexMigrationTest, SecondOpenChangesNothing) {
  { const Index migrated(dir_, /*writable=*/true); }
  std::string schema_version;
  {
    Db db(Index::db_path(dir_));
    schema_version = db.scalar("PRAGMA schema_version");
    // Were the back-fill to run again, it would restore "web".
    db.exec("UPDATE dumps SET rule = 'changed by hand' WHERE id = '" + id(1) + "'");
  }
  { const Index again(dir_, /*writable=*/true); }
  Db db(Index::db_path(dir_));
  EXPECT_EQ(db.scalar("PRAGMA schema_version"), schema_version) << "no table was altered";
  EXPECT_EQ(db.scalar("PRAGMA user_version"), std::to_string(Index::kSchemaVersion));
  EXPECT_EQ(db.scalar("SELECT rule FROM dumps WHERE id = '" + id(1) + "'"), "changed by hand");
}

TEST_F(IndexMigrationTest, UnparsableExtraIsBackFilledEmpty) {
  {
    Db db(Index::db_path(dir_));
    db.exec("UPDATE dumps SET extra = '{not json' WHERE id = '" + id(1) + "'");
  }
  const Index index(dir_, /*writable=*/true);
  const auto rows = index.list_summaries();
  ASSERT_EQ(rows.size(), 6U);
  EXPECT_EQ(rows[0].id, id(1));
  EXPECT_EQ(rows[0].rule, "");
  EXPECT_EQ(rows[1].rule, "web");
}

}  // namespace
}  // namespace coredumpd
