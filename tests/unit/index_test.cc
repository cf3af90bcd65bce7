// The SQLite index: lossless round trips of hostile records, ordering, updates, concurrency,
// schema versioning and file properties.
#include "store/index.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>

#include <atomic>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

namespace coredumpd {
namespace {

using namespace std::string_literals;
namespace fs = std::filesystem;

/// A fresh store directory, removed with its contents at the end of the test.
class IndexTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "index_test.XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }

  /// Runs one SQL statement directly (bypassing Index) on the store's database.
  void raw_sql(const std::string& sql) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(Index::db_path(dir_).c_str(), &db), SQLITE_OK);
    char* err = nullptr;
    const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
    EXPECT_EQ(rc, SQLITE_OK) << (err ? err : "");
    sqlite3_free(err);
    sqlite3_close(db);
  }

  std::string dir_;
};

std::string make_id(int n) {
  char buf[33];
  std::snprintf(buf, sizeof buf, "%032x", n);
  return buf;
}

DumpRecord sample(int n, std::int64_t ts) {
  DumpRecord r;
  r.id = make_id(n);
  r.state = DumpState::Complete;
  r.timestamp_us = ts;
  r.pid = 1000 + n;
  r.uid = r.euid = 1000;
  r.gid = r.egid = 100;
  r.comm = "prog" + std::to_string(n);
  r.exe = "/usr/bin/prog" + std::to_string(n);
  r.argv = {r.exe, "--flag"};
  r.boot_id = "3f1a";
  r.compression = "zstd";
  r.path = r.id + ".zst";
  return r;
}

DumpRecord hostile(int n) {
  DumpRecord r;
  r.id = make_id(n);
  r.state = DumpState::Truncated;
  r.reason = "stream ended\nearly \xff";
  r.timestamp_us = -5;  // before the epoch: must survive too
  r.pid = 2147483647;
  r.tid = 2147483646;
  r.uid = 0;
  r.gid = 4294967294;
  r.euid = 65534;
  r.egid = -1;
  r.comm = "a\nb\x1b[31m\r\t";
  r.exe = "/tmp/\xff\xfe\x80 evil (deleted)";
  r.argv = {"",
            "with space",
            "new\nline",
            "\xff\xc0\x80",
            "",
            "'; DROP TABLE dumps; --",
            std::string(100000, 'x') + "\xe2\x80\xae",
            ""};
  r.cwd = "/\x01\x02\x7f";
  r.cgroup = "12:pids:/a\n0::/b\n";
  r.hostname = "host\xffname";
  r.boot_id = "0123";
  r.coredump_mask = 0xffffffffU;
  r.signal = SIGSEGV;
  r.crashing_tid_ns = 7;
  r.core_size = 18446744073709551615ULL;  // u64 max: must survive SQLite's signed INTEGER
  r.stored_size = 9223372036854775808ULL;
  r.compression = "zstd";
  r.path = r.id + ".zst";
  r.extra = {{"k", "v\u00e9"}, {"n", {1, 2, 3}}, {"nested", {{"x", nullptr}}}};
  return r;
}

void expect_same(const DumpRecord& a, const DumpRecord& b) {
  EXPECT_EQ(a.id, b.id);
  EXPECT_EQ(a.state, b.state);
  EXPECT_EQ(a.reason, b.reason);
  EXPECT_EQ(a.timestamp_us, b.timestamp_us);
  EXPECT_EQ(a.pid, b.pid);
  EXPECT_EQ(a.tid, b.tid);
  EXPECT_EQ(a.uid, b.uid);
  EXPECT_EQ(a.gid, b.gid);
  EXPECT_EQ(a.euid, b.euid);
  EXPECT_EQ(a.egid, b.egid);
  EXPECT_EQ(a.comm, b.comm);
  EXPECT_EQ(a.exe, b.exe);
  EXPECT_EQ(a.argv, b.argv);
  EXPECT_EQ(a.cwd, b.cwd);
  EXPECT_EQ(a.cgroup, b.cgroup);
  EXPECT_EQ(a.hostname, b.hostname);
  EXPECT_EQ(a.boot_id, b.boot_id);
  EXPECT_EQ(a.coredump_mask, b.coredump_mask);
  EXPECT_EQ(a.signal, b.signal);
  EXPECT_EQ(a.crashing_tid_ns, b.crashing_tid_ns);
  EXPECT_EQ(a.core_size, b.core_size);
  EXPECT_EQ(a.stored_size, b.stored_size);
  EXPECT_EQ(a.compression, b.compression);
  EXPECT_EQ(a.path, b.path);
  EXPECT_EQ(a.extra, b.extra);
}

// Group commit (index_write.cc): writers on many threads share transactions, and a record that
// fails (a duplicate id, an update of no row) fails alone: every other record is in the index and
// its writer returned normally.
TEST_F(IndexTest, ConcurrentWritersShareCommitsAndFailAlone) {
  Index idx(dir_, true);
  idx.insert(sample(0, 1));
  constexpr int kThreads = 16, kEach = 40;
  std::atomic<int> failed{0}, wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        const int n = 1 + t * kEach + i;
        try {
          if (i == 7) idx.insert(sample(0, 1));                  // duplicate: must fail
          else if (i == 13) idx.update(sample(100000 + n, n));   // no such row: must fail
          else idx.insert(sample(n, n));
          if (i == 7 || i == 13) ++wrong;
        } catch (const IndexError&) {
          if (i != 7 && i != 13) ++wrong;
          ++failed;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(failed.load(), 2 * kThreads);
  const auto all = idx.list();
  EXPECT_EQ(all.size(), static_cast<std::size_t>(1 + kThreads * (kEach - 2)));
  for (int t = 0; t < kThreads; ++t) {
    for (int i = 0; i < kEach; ++i) {
      if (i != 7 && i != 13) {
        EXPECT_TRUE(idx.get(make_id(1 + t * kEach + i))) << t << "/" << i;
      }
    }
  }
}

TEST_F(IndexTest, HostileRecordRoundTrips) {
  const DumpRecord r = hostile(1);
  {
    Index idx(dir_, true);
    idx.insert(r);
    const auto got = idx.get(r.id);
    ASSERT_TRUE(got.has_value());
    expect_same(*got, r);
  }
  // And after reopening, read-only.
  const Index ro(dir_, false);
  const auto all = ro.list();
  ASSERT_EQ(all.size(), 1U);
  expect_same(all[0], r);
}

TEST_F(IndexTest, ArgvEdgeCasesAreDistinguished) {
  Index idx(dir_, true);
  const std::vector<std::vector<std::string>> cases = {{},        {""},      {"", ""}, {"a"},
                                                       {"a", ""}, {"", "a"}, {"\xff"}};
  for (std::size_t i = 0; i < cases.size(); ++i) {
    DumpRecord r = sample(static_cast<int>(i), static_cast<std::int64_t>(i));
    r.argv = cases[i];
    idx.insert(r);
  }
  const auto all = idx.list();
  ASSERT_EQ(all.size(), cases.size());
  for (std::size_t i = 0; i < cases.size(); ++i) EXPECT_EQ(all[i].argv, cases[i]) << i;
}

TEST_F(IndexTest, RejectsUnrepresentableAndUnsafeRecords) {
  Index idx(dir_, true);
  DumpRecord r = sample(1, 1);
  r.argv = {"a\0b"s};
  EXPECT_THROW(idx.insert(r), IndexError);
  r = sample(1, 1);
  r.path = "../../etc/shadow";
  EXPECT_THROW(idx.insert(r), IndexError);
  r.path = "..";
  EXPECT_THROW(idx.insert(r), IndexError);
  r = sample(1, 1);
  r.id = "NOT-HEX";
  EXPECT_THROW(idx.insert(r), IndexError);
  r.id = "";
  EXPECT_THROW(idx.insert(r), IndexError);
  EXPECT_TRUE(idx.list().empty());

  idx.insert(sample(1, 1));
  EXPECT_THROW(idx.insert(sample(1, 2)), IndexError);  // duplicate id
  EXPECT_EQ(idx.list().size(), 1U);
}

TEST_F(IndexTest, UpdateReplacesEveryField) {
  Index idx(dir_, true);
  DumpRecord r = sample(1, 100);
  r.state = DumpState::InProgress;
  idx.insert(r);
  idx.insert(sample(2, 200));

  DumpRecord u = hostile(1);
  u.id = r.id;
  idx.update(u);
  const auto got = idx.get(r.id);
  ASSERT_TRUE(got.has_value());
  expect_same(*got, u);
  // The other row is untouched.
  expect_same(*idx.get(make_id(2)), sample(2, 200));

  // Clearing optionals works too.
  u.tid.reset();
  u.signal.reset();
  u.crashing_tid_ns.reset();
  u.argv.clear();
  idx.update(u);
  expect_same(*idx.get(r.id), u);

  EXPECT_THROW(idx.update(sample(3, 1)), IndexError);  // no such row
}

TEST_F(IndexTest, ListIsOldestFirstWithInsertionOrderTies) {
  Index idx(dir_, true);
  idx.insert(sample(5, 300));
  idx.insert(sample(1, 100));
  idx.insert(sample(9, 200));
  idx.insert(sample(2, 200));  // same timestamp as 9, inserted later
  idx.insert(sample(3, -50));
  const auto all = idx.list();
  ASSERT_EQ(all.size(), 5U);
  EXPECT_EQ(all[0].id, make_id(3));
  EXPECT_EQ(all[1].id, make_id(1));
  EXPECT_EQ(all[2].id, make_id(9));
  EXPECT_EQ(all[3].id, make_id(2));
  EXPECT_EQ(all[4].id, make_id(5));
}

TEST_F(IndexTest, GetBindsTheIdAsData) {
  Index idx(dir_, true);
  idx.insert(sample(1, 1));
  EXPECT_FALSE(idx.get("' OR 1=1 --").has_value());
  EXPECT_FALSE(idx.get(make_id(2)).has_value());
  EXPECT_FALSE(idx.get("").has_value());
  EXPECT_TRUE(idx.get(make_id(1)).has_value());
}

TEST_F(IndexTest, MarkInProgressInterrupted) {
  Index idx(dir_, true);
  DumpRecord a = sample(1, 1);
  a.state = DumpState::InProgress;
  DumpRecord b = sample(2, 2);
  b.state = DumpState::InProgress;
  DumpRecord c = sample(3, 3);  // Complete: untouched
  c.reason = "";
  idx.insert(a);
  idx.insert(b);
  idx.insert(c);
  EXPECT_EQ(idx.mark_in_progress_interrupted("daemon restarted"), 2);
  EXPECT_EQ(idx.get(a.id)->state, DumpState::Interrupted);
  EXPECT_EQ(idx.get(a.id)->reason, "daemon restarted");
  EXPECT_EQ(idx.get(b.id)->state, DumpState::Interrupted);
  EXPECT_EQ(idx.get(c.id)->state, DumpState::Complete);
  EXPECT_EQ(idx.get(c.id)->reason, "");
  EXPECT_EQ(idx.mark_in_progress_interrupted("again"), 0);
}

TEST_F(IndexTest, FilePropertiesAndPragmas) {
  const mode_t old = ::umask(022);
  {
    Index idx(dir_, true);
    idx.insert(sample(0, 0));
    // While open, the WAL and shared-memory files exist; SQLite gives them the database's mode.
    for (const char* suffix : {"", "-wal", "-shm"}) {
      struct stat sb {};
      ASSERT_EQ(::stat((Index::db_path(dir_) + suffix).c_str(), &sb), 0) << suffix;
      EXPECT_EQ(sb.st_mode & 0777, 0640U) << suffix;
    }
  }
  ::umask(old);
  struct stat sb {};
  ASSERT_EQ(::stat(Index::db_path(dir_).c_str(), &sb), 0);
  EXPECT_EQ(sb.st_mode & 0777, 0640U);

  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2(Index::db_path(dir_).c_str(), &db, SQLITE_OPEN_READONLY, nullptr),
            SQLITE_OK);
  const auto scalar = [&](const char* sql) {
    sqlite3_stmt* st = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db, sql, -1, &st, nullptr), SQLITE_OK);
    EXPECT_EQ(sqlite3_step(st), SQLITE_ROW);
    std::string v = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    return v;
  };
  EXPECT_EQ(scalar("PRAGMA journal_mode"), "wal");
  EXPECT_EQ(scalar("PRAGMA user_version"), std::to_string(Index::kSchemaVersion));
  EXPECT_EQ(scalar("SELECT count(*) FROM sqlite_master WHERE type = 'index' AND "
                   "name IN ('dumps_timestamp', 'dumps_pid')"),
            "2");
  sqlite3_close(db);

  // Reopening an existing index keeps its data and schema.
  {
    Index idx(dir_, true);
    idx.insert(sample(1, 1));
  }
  {
    Index idx(dir_, true);
    EXPECT_EQ(idx.list().size(), 2U);
  }
}

TEST_F(IndexTest, ReadOnlyOpenOfMissingIndexFailsClearly) {
  try {
    const Index ro(dir_, false);
    FAIL() << "expected IndexError";
  } catch (const IndexError& e) {
    EXPECT_EQ(std::string(e.what()),
              "no index at " + Index::db_path(dir_) + ": is this a coredumpd store?");
  }
  EXPECT_FALSE(fs::exists(Index::db_path(dir_)));  // and nothing was created
}

TEST_F(IndexTest, ReadOnlyIndexRefusesWrites) {
  {
    Index idx(dir_, true);
    idx.insert(sample(1, 1));
  }
  Index ro(dir_, false);
  EXPECT_THROW(ro.insert(sample(2, 2)), IndexError);
  EXPECT_THROW(ro.update(sample(1, 5)), IndexError);
  EXPECT_THROW(ro.mark_in_progress_interrupted("x"), IndexError);
  EXPECT_EQ(ro.list().size(), 1U);
}

TEST_F(IndexTest, RuleAndContainerKeyColumnsRoundTrip) {
  Index idx(dir_, true);
  DumpRecord none = sample(1, 1);  // no container identified: NULL
  DumpRecord keyless = sample(2, 2);
  keyless.container_key = "";
  DumpRecord bytes = sample(3, 3);
  bytes.rule = "web";
  bytes.container_key = "cgroup:/a\xff\n\0b"s;
  for (const auto& r : {none, keyless, bytes}) idx.insert(r);
  EXPECT_EQ(idx.get(none.id)->container_key, std::nullopt);
  EXPECT_EQ(idx.get(keyless.id)->container_key, "");
  EXPECT_EQ(idx.get(bytes.id)->container_key, bytes.container_key);
  EXPECT_EQ(idx.get(bytes.id)->rule, "web");
  EXPECT_EQ(idx.list_summaries()[2].rule, "web");
  bytes.rule = "db";
  bytes.container_key.reset();
  idx.update(bytes);
  EXPECT_EQ(idx.get(bytes.id)->rule, "db");
  EXPECT_EQ(idx.get(bytes.id)->container_key, std::nullopt);
}

TEST_F(IndexTest, RefusesNewerSchemaVersion) {
  {
    Index idx(dir_, true);
    idx.insert(sample(1, 1));
  }
  raw_sql("PRAGMA user_version = " + std::to_string(Index::kSchemaVersion + 1));
  for (const bool writable : {false, true}) {
    try {
      const Index idx(dir_, writable);
      FAIL() << "expected IndexError, writable=" << writable;
    } catch (const IndexError& e) {
      EXPECT_NE(std::string(e.what()).find("schema version " + std::to_string(Index::kSchemaVersion + 1) + ", newer than"), std::string::npos)
          << e.what();
    }
  }
}

TEST_F(IndexTest, RefusesForeignFiles) {
  raw_sql("CREATE TABLE other (x)");  // an SQLite file without our schema (user_version 0)
  EXPECT_THROW(Index(dir_, false), IndexError);
  fs::remove(Index::db_path(dir_));
  std::ofstream(Index::db_path(dir_)) << "this is not an sqlite database, just some text.....";
  EXPECT_THROW(Index(dir_, false), IndexError);
  EXPECT_THROW(Index(dir_, true), IndexError);
  EXPECT_THROW(Index(dir_ + "/does/not/exist", true), IndexError);
}

TEST_F(IndexTest, ReadOnlyReaderWhileWriterInserts) {
  Index writer(dir_, true);
  writer.insert(sample(0, 0));
  constexpr int kRows = 200;
  std::atomic<bool> done{false};
  std::atomic<int> reads{0};
  std::string reader_error;

  std::thread reader([&] {
    try {
      const Index ro(dir_, false);
      std::size_t last = 0;
      while (!done.load()) {
        const auto all = ro.list();
        if (all.size() < last) throw std::runtime_error("row count went backwards");
        for (std::size_t i = 0; i < all.size(); ++i) {
          if (all[i].id != make_id(static_cast<int>(i))) throw std::runtime_error("bad order");
        }
        last = all.size();
        reads.fetch_add(1);
      }
    } catch (const std::exception& e) {
      reader_error = e.what();
    }
  });
  // A second writer connection on another thread, as the daemon's sessions might have.
  std::thread writer_thread([&] {
    for (int i = 1; i < kRows; ++i) {
      DumpRecord r = sample(i, i);
      r.state = DumpState::InProgress;
      writer.insert(r);
      r.state = DumpState::Complete;
      writer.update(r);
    }
  });
  writer_thread.join();
  while (reads.load() < 3) std::this_thread::yield();
  done = true;
  reader.join();
  EXPECT_EQ(reader_error, "");
  EXPECT_GT(reads.load(), 0);
  const Index ro(dir_, false);
  EXPECT_EQ(ro.list().size(), static_cast<std::size_t>(kRows));
}

TEST_F(IndexTest, SharedInstanceAcrossThreads) {
  Index idx(dir_, true);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 25; ++i) {
        idx.insert(sample(t * 100 + i, i));
        (void)idx.list();
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(idx.list().size(), 100U);
}

}  // namespace
}  // namespace coredumpd
