// The fleet index (fleet/fleet_index.h, issue 26 item 2) against a real PostgreSQL 15 started by
// the test (scripts/fleet/pg-up.sh): migrations, concurrent hosts, idempotent upserts, the queries
// of `dumpctl fleet`, and a server that restarts or goes away.
#include "fleet/fleet_index.h"

#include <gtest/gtest.h>
#include <libpq-fe.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <future>
#include <thread>
#include <memory>

#include "tests/support/pg_server.h"

namespace coredumpd {
namespace {

test::PgServer* server = nullptr;  // one for the whole binary (PgEnvironment)

class PgEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    if (!test::postgres_unavailable()) server = new test::PgServer();
  }
  void TearDown() override { delete server; }
};
const auto* const kEnv = ::testing::AddGlobalTestEnvironment(new PgEnvironment);

// A statement on an open connection of our own: "" when it succeeded, else the error.
std::string sql1_on(PGconn* c, const std::string& sql) {
  std::unique_ptr<PGresult, decltype(&PQclear)> r(PQexec(c, sql.c_str()), PQclear);
  const auto st = PQresultStatus(r.get());
  return st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK ? "" : std::string("error: ") + PQresultErrorMessage(r.get());
}

// A query of our own, beside the library, to see what it wrote.
std::string sql1(const std::string& conninfo, const std::string& sql) {
  std::unique_ptr<PGconn, decltype(&PQfinish)> c(PQconnectdb(conninfo.c_str()), PQfinish);
  if (PQstatus(c.get()) != CONNECTION_OK) return std::string("connect: ") + PQerrorMessage(c.get());
  std::unique_ptr<PGresult, decltype(&PQclear)> r(PQexec(c.get(), sql.c_str()), PQclear);
  const auto st = PQresultStatus(r.get());
  if (st == PGRES_COMMAND_OK) return "";
  if (st != PGRES_TUPLES_OK) return std::string("error: ") + PQresultErrorMessage(r.get());
  std::string out;
  for (int i = 0; i < PQntuples(r.get()); ++i) {
    for (int j = 0; j < PQnfields(r.get()); ++j) out += (j ? "|" : "") + std::string(PQgetvalue(r.get(), i, j));
    out += i + 1 < PQntuples(r.get()) ? "\n" : "";
  }
  return out;
}

FleetRecord crash(const std::string& host, const std::string& id, std::int64_t t, const std::string& sig) {
  FleetRecord r;
  r.host_id = host;
  r.machine_id = std::string(32, host.back());
  r.dump_id = id;
  r.timestamp_us = t;
  r.exe = "/usr/bin/crash";
  r.comm = "crash";
  r.signal = 11;
  r.signature = sig;
  r.signature_text = sig.empty() ? "" : "crash!f <- crash!main";
  r.build_ids = {"aa11", "bb22"};
  r.state = "metadata";
  r.record_key = "records/" + host + "/" + id + ".json";
  return r;
}

class FleetIndexTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto why = test::postgres_unavailable()) GTEST_SKIP() << *why;
    ASSERT_NE(server, nullptr);
    // A database of its own per test: tests see only their rows and a schema made from nothing.
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = std::string("t_") + info->name();
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    conninfo_ = server->create_database(name);
  }
  std::string conninfo_;
};

const std::string kSigA(64, 'a');
const std::string kSigB = "ab" + std::string(62, '0');

TEST_F(FleetIndexTest, MigrationsApplyOnceAndAgainChangeNothing) {
  { FleetIndex first(conninfo_); }
  const std::string after_first = sql1(conninfo_, "SELECT version, applied_at FROM fleet_schema_migrations ORDER BY 1");
  EXPECT_EQ(sql1(conninfo_, "SELECT string_agg(version::text, ',' ORDER BY version) FROM fleet_schema_migrations"), "1");
  { FleetIndex second(conninfo_); }
  EXPECT_EQ(sql1(conninfo_, "SELECT version, applied_at FROM fleet_schema_migrations ORDER BY 1"), after_first);
  EXPECT_EQ(sql1(conninfo_, "SELECT count(*) FROM pg_tables WHERE tablename LIKE 'fleet_%'"), "2");
}

TEST_F(FleetIndexTest, HostsStartingTogetherMigrateOnce) {
  // Four processes released at once by one pipe, each creating the schema and inserting a row.
  int go[2];
  ASSERT_EQ(::pipe(go), 0);
  std::vector<pid_t> kids;
  for (int i = 0; i < 4; ++i) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::close(go[1]);
      char c;
      if (::read(go[0], &c, 1) != 0) ::_exit(3);  // EOF = go
      try {
        FleetIndex idx(conninfo_);
        idx.upsert(crash("host" + std::to_string(i), "d" + std::to_string(i), 1000 + i, kSigA));
        ::_exit(0);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "child %d: %s\n", i, e.what());
        ::_exit(1);
      }
    }
    kids.push_back(pid);
  }
  ::close(go[0]);
  ::close(go[1]);
  for (pid_t pid : kids) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
  }
  EXPECT_EQ(sql1(conninfo_, "SELECT count(*) FROM fleet_schema_migrations"), "1");
  EXPECT_EQ(sql1(conninfo_, "SELECT count(*) FROM fleet_crashes"), "4");
}

TEST_F(FleetIndexTest, ADatabaseNewerThanTheProgramIsRefused) {
  { FleetIndex idx(conninfo_); }
  ASSERT_EQ(sql1(conninfo_, "INSERT INTO fleet_schema_migrations (version) VALUES (99)"), "");
  try {
    FleetIndex idx(conninfo_);
    FAIL() << "a schema from the future was accepted";
  } catch (const FleetIndexError& e) {
    EXPECT_NE(std::string(e.what()).find("version 99, newer"), std::string::npos) << e.what();
  }
}

TEST_F(FleetIndexTest, UpsertIsIdempotentAndUpdatesTheState) {
  FleetIndex idx(conninfo_);
  FleetRecord r = crash("h1", "0123abcd", 5000, kSigA);
  idx.upsert(r);
  idx.upsert(r);
  EXPECT_EQ(sql1(conninfo_, "SELECT count(*), min(state) FROM fleet_crashes"), "1|metadata");
  r.state = "uploaded";
  r.object_key = "cores/h1/0123abcd.zst";
  r.core_bytes = 12345;
  r.signature = "";  // a later upsert without the analysis keeps what the index knew
  r.signature_text = "";
  idx.upsert(r);
  EXPECT_EQ(sql1(conninfo_, "SELECT count(*), min(state), min(object_key), min(core_bytes), min(signature) FROM fleet_crashes"),
            "1|uploaded|cores/h1/0123abcd.zst|12345|" + kSigA);
  const auto back = idx.find_dump("0123abcd");
  ASSERT_TRUE(back);
  EXPECT_EQ(back->build_ids, (std::vector<std::string>{"aa11", "bb22"}));
  EXPECT_EQ(back->machine_id, std::string(32, '1'));
  EXPECT_EQ(back->signal, 11);
  EXPECT_EQ(back->record_key, "records/h1/0123abcd.json");
  // The same dump id on another host is another crash.
  idx.upsert(crash("h2", "0123abcd", 5001, kSigA));
  EXPECT_EQ(sql1(conninfo_, "SELECT count(*) FROM fleet_crashes"), "2");
}

TEST_F(FleetIndexTest, ABadRecordIsRefusedWithTheDatabasesReason) {
  FleetIndex idx(conninfo_);
  FleetRecord r = crash("h1", "d1", 1, kSigA);
  r.state = "lost";
  try {
    idx.upsert(r);
    FAIL() << "an unknown state was stored";
  } catch (const FleetIndexError& e) {
    EXPECT_NE(std::string(e.what()).find("check constraint"), std::string::npos) << e.what();
  }
  // The connection is still usable after an SQL error.
  idx.upsert(crash("h1", "d1", 1, kSigA));
  EXPECT_EQ(sql1(conninfo_, "SELECT count(*) FROM fleet_crashes"), "1");
}

TEST_F(FleetIndexTest, TopSignaturesCountsHostsAndVersionsInTheWindow) {
  FleetIndex idx(conninfo_);
  auto a1 = crash("h1", "a1", 100, kSigA);
  a1.package = "crash 1.0";
  auto a2 = crash("h2", "a2", 200, kSigA);
  a2.package = "crash 1.1";
  auto a3 = crash("h2", "a3", 300, kSigA);
  a3.package = "crash 1.1";
  idx.upsert(a1);
  idx.upsert(a2);
  idx.upsert(a3);
  idx.upsert(crash("h3", "b1", 250, kSigB));  // no package: its executable's build-id is its version
  idx.upsert(crash("h3", "n1", 260, ""));     // not analysed yet: in no group
  idx.upsert(crash("h3", "old", 10, kSigB));  // before the window

  const auto top = idx.top_signatures(100, 300, 10);
  ASSERT_EQ(top.size(), 2u);
  EXPECT_EQ(top[0].signature, kSigA);
  EXPECT_EQ(top[0].signature_text, "crash!f <- crash!main");
  EXPECT_EQ(top[0].count, 3u);
  EXPECT_EQ(top[0].hosts, 2u);
  EXPECT_EQ(top[0].first_us, 100);
  EXPECT_EQ(top[0].last_us, 300);
  EXPECT_EQ(top[0].versions, (std::vector<std::string>{"crash 1.0", "crash 1.1"}));
  EXPECT_EQ(top[1].signature, kSigB);
  EXPECT_EQ(top[1].count, 1u);
  EXPECT_EQ(top[1].versions, (std::vector<std::string>{"aa11"}));
  EXPECT_EQ(idx.top_signatures(100, 300, 1).size(), 1u);
  EXPECT_EQ(idx.top_signatures(0, 300, 10)[1].count, 2u);
  EXPECT_TRUE(idx.top_signatures(400, 500, 10).empty());
  EXPECT_EQ(idx.top_signatures(0, INT64_MAX, SIZE_MAX).size(), 2u);  // no limit, all time
}

TEST_F(FleetIndexTest, CrashesOfASignatureByPrefix) {
  FleetIndex idx(conninfo_);
  idx.upsert(crash("h1", "a1", 100, kSigA));
  idx.upsert(crash("h2", "a2", 300, kSigA));
  idx.upsert(crash("h3", "b1", 200, kSigB));
  const auto all = idx.crashes_of("AAAA", 10);  // upper case: the same hex
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].dump_id, "a2");  // newest first
  EXPECT_EQ(all[1].dump_id, "a1");
  EXPECT_EQ(idx.crashes_of(kSigA, 1).size(), 1u);
  EXPECT_EQ(idx.crashes_of("ab", 10).size(), 1u);
  EXPECT_TRUE(idx.crashes_of("ff", 10).empty());
  EXPECT_THROW(idx.crashes_of("a", 10), FleetIndexError);   // both signatures start with a
  EXPECT_THROW(idx.crashes_of("a%", 10), FleetIndexError);  // not hex
  EXPECT_THROW(idx.crashes_of("", 10), FleetIndexError);
}

TEST_F(FleetIndexTest, FindDumpByIdOrPrefix) {
  FleetIndex idx(conninfo_);
  idx.upsert(crash("h1", "abc_1", 100, kSigA));
  idx.upsert(crash("h1", "abcx1", 100, kSigA));
  idx.upsert(crash("h2", "fff", 100, kSigA));
  idx.upsert(crash("h3", "fff", 100, kSigA));
  idx.upsert(crash("h3", "fffe", 100, kSigA));
  EXPECT_EQ(idx.find_dump("abc_")->dump_id, "abc_1");  // '_' is no wildcard
  EXPECT_EQ(idx.find_dump("abcx")->dump_id, "abcx1");
  EXPECT_THROW(idx.find_dump("abc"), FleetIndexError);
  EXPECT_EQ(idx.find_dump("fffe")->host_id, "h3");
  try {
    idx.find_dump("fff");  // the same id on two hosts
    FAIL();
  } catch (const FleetIndexError& e) {
    EXPECT_NE(std::string(e.what()).find("ambiguous: fff on h2, fff on h3"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(idx.find_dump("0000"));
  EXPECT_THROW(idx.find_dump(""), FleetIndexError);
}

TEST_F(FleetIndexTest, SignatureHasCoreOnlyOnceACoreIsUploaded) {
  FleetIndex idx(conninfo_);
  EXPECT_FALSE(idx.signature_has_core(kSigA));
  auto r = crash("h1", "a1", 100, kSigA);
  idx.upsert(r);
  EXPECT_FALSE(idx.signature_has_core(kSigA));  // metadata only
  r.state = "uploaded";
  r.object_key = "cores/h1/a1.zst";
  idx.upsert(r);
  EXPECT_TRUE(idx.signature_has_core(kSigA));
  EXPECT_TRUE(idx.signature_has_core(std::string(64, 'A')));
  EXPECT_FALSE(idx.signature_has_core(kSigB));
  EXPECT_FALSE(idx.signature_has_core(""));
}

TEST_F(FleetIndexTest, NoServerIsAClearErrorAtOnce) {
  const auto t0 = std::chrono::steady_clock::now();
  try {
    FleetIndex idx("host=127.0.0.1 port=1 dbname=fleet");
    FAIL();
  } catch (const FleetIndexError& e) {
    EXPECT_NE(std::string(e.what()).find("fleet index: cannot connect:"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("Connection refused"), std::string::npos) << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(30));  // bounded, not a hang
}

// A process names itself with any bytes (prctl(PR_SET_NAME), its executable's file name): the
// row goes in all the same, each invalid byte as U+FFFD (a UTF8 database refuses the raw bytes,
// and the upload would fail, and be retried, for ever), valid text unchanged.
TEST_F(FleetIndexTest, NamesThatAreNotUtf8AreStoredReplaced) {
  FleetIndex idx(conninfo_);
  FleetRecord r = crash("h1", "bad-utf8", 100, kSigA);
  r.comm = std::string("a\xff\xfe b");
  r.exe = std::string("/tmp/../x\n\xc3(\xe2\x82 caf\xc3\xa9");
  r.signature_text = std::string("f\x80 <- main");
  r.package = std::string("p\xc0\xaf");
  r.container = std::string("c\xed\xa0\x80");
  idx.upsert(r);
  const auto got = idx.find_dump("bad-utf8");
  ASSERT_TRUE(got);
  EXPECT_EQ(got->comm, "a\uFFFD\uFFFD b");
  EXPECT_EQ(got->exe, "/tmp/../x\n\uFFFD(\uFFFD\uFFFD caf\xc3\xa9");
  EXPECT_EQ(got->signature_text, "f\uFFFD <- main");
  EXPECT_EQ(got->package, "p\uFFFD\uFFFD");
  EXPECT_EQ(got->container, "c\uFFFD\uFFFD\uFFFD");
}

// A table locked by someone else (a DBA's ALTER TABLE in an open transaction, a stuck migration):
// an upsert gives up with the server's reason instead of waiting for ever. A worker blocked in
// libpq cannot be stopped, so an unbounded wait also held the daemon's SIGTERM.
TEST_F(FleetIndexTest, ALockedTableIsAnErrorNotAHang) {
  FleetIndex idx(conninfo_);
  idx.upsert(crash("h1", "a1", 100, kSigA));
  std::unique_ptr<PGconn, decltype(&PQfinish)> dba(PQconnectdb(conninfo_.c_str()), PQfinish);
  ASSERT_EQ(PQstatus(dba.get()), CONNECTION_OK) << PQerrorMessage(dba.get());
  ASSERT_EQ(sql1_on(dba.get(), "BEGIN; LOCK TABLE fleet_crashes IN ACCESS EXCLUSIVE MODE"), "");
  try {
    idx.upsert(crash("h1", "a2", 200, kSigA));
    ADD_FAILURE() << "an upsert into a locked table succeeded";
  } catch (const FleetIndexError& e) {
    EXPECT_NE(std::string(e.what()).find("lock timeout"), std::string::npos) << e.what();
  }
  try {
    FleetIndex other(conninfo_);  // the migrations' check reads the locked table too
    EXPECT_FALSE(other.signature_has_core(kSigA));
    ADD_FAILURE() << "a read of a locked table succeeded";
  } catch (const FleetIndexError& e) {
    EXPECT_NE(std::string(e.what()).find("lock timeout"), std::string::npos) << e.what();
  }
  ASSERT_EQ(sql1_on(dba.get(), "ROLLBACK"), "");
  idx.upsert(crash("h1", "a2", 200, kSigA));  // the same object, once the lock is gone
  EXPECT_EQ(sql1(conninfo_, "SELECT count(*) FROM fleet_crashes"), "2");
}

// A server that stops answering in the middle of a statement (its backend frozen: SIGSTOP, as a
// paused machine or a lost network look from here): no timeout of the server's fires, and libpq
// waits for ever. The cancel check (the daemon's stop) ends the wait; a new object works.
TEST_F(FleetIndexTest, AFrozenServerIsCancelled) {
  if (::geteuid() != 0) GTEST_SKIP() << "stopping the server's backend (user postgres) needs root";
  auto idx = std::make_unique<FleetIndex>(conninfo_);
  idx->upsert(crash("h1", "f1", 100, kSigA));
  const std::string pid = sql1(conninfo_,
                               "SELECT pid FROM pg_stat_activity WHERE datname = current_database()"
                               " AND application_name = 'coredumpd'");
  ASSERT_GT(std::atoi(pid.c_str()), 0) << pid;
  std::atomic<bool> stop{false};
  idx->set_cancel([&] { return stop.load(); });
  ASSERT_EQ(::kill(std::atoi(pid.c_str()), SIGSTOP), 0);
  auto upsert = std::async(std::launch::async, [&] { idx->upsert(crash("h1", "f2", 200, kSigA)); });
  std::this_thread::sleep_for(std::chrono::seconds(1));  // the statement is on its way
  stop = true;
  const bool returned = upsert.wait_for(std::chrono::seconds(30)) == std::future_status::ready;
  ::kill(std::atoi(pid.c_str()), SIGCONT);
  EXPECT_TRUE(returned) << "the upsert waited on the frozen backend despite the cancel";
  try {
    upsert.get();
    ADD_FAILURE() << "an upsert to a frozen server succeeded";
  } catch (const FleetIndexError& e) {
    EXPECT_NE(std::string(e.what()).find("upsert: cancelled"), std::string::npos) << e.what();
  }
  idx = std::make_unique<FleetIndex>(conninfo_);
  idx->upsert(crash("h1", "f2", 200, kSigA));
  EXPECT_EQ(sql1(conninfo_, "SELECT count(*) FROM fleet_crashes"), "2");
}

// Decided: the next call after a server restart reconnects once and succeeds (each statement is
// idempotent); while the server is down, a call fails at once with FleetIndexError naming both the
// lost connection and the failed reconnect, and the object works again once the server is back.
// Last in this file: it stops the shared server (and starts it again).
TEST_F(FleetIndexTest, ARestartedServerIsReconnectedAndADownOneIsAClearError) {
  FleetIndex idx(conninfo_);
  idx.set_cancel([] { return false; });  // as the daemon's uploader: statements sent asynchronously
  idx.upsert(crash("h1", "a1", 100, kSigA));
  server->stop();
  server->start();
  idx.upsert(crash("h1", "a2", 200, kSigA));  // reconnects
  EXPECT_EQ(idx.top_signatures(0, 1000, 10).at(0).count, 2u);

  server->stop();
  try {
    idx.upsert(crash("h1", "a3", 300, kSigA));
    ADD_FAILURE() << "an upsert with the server down succeeded";
  } catch (const FleetIndexError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("fleet index: upsert:"), std::string::npos) << what;
    EXPECT_NE(what.find("reconnecting failed"), std::string::npos) << what;
  }
  server->start();
  idx.upsert(crash("h1", "a3", 300, kSigA));
  EXPECT_EQ(sql1(conninfo_, "SELECT count(*) FROM fleet_crashes"), "3");
}

}  // namespace
}  // namespace coredumpd
