// The query service of a real coredumpd (daemon/query/, docs/QUERY.md) on a store seeded with
// records: root sees all; an unprivileged user (a forked child that drops to nobody) sees only its
// own dumps with owner_may_read, gets "not_found" for root's and for a set-uid dump, and receives
// its core as a descriptor; hostile clients (a flood, a 1 MiB request, garbage, silence, a slow
// reader of a 5,000-record list) are refused or dropped while others are still served.
#include <fcntl.h>
#include <grp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <fstream>
#include <thread>

#include "store/index.h"
#include "store/query_protocol.h"
#include "store/record_extras.h"
#include "tests/integration/query_client.h"
#include "tests/support/test_support.h"

namespace coredumpd::test {
namespace {

constexpr uid_t kNobody = 65534;
constexpr gid_t kNogroup = 65534;

std::string id_of(int n) {
  char buf[33];
  std::snprintf(buf, sizeof(buf), "%032x", n);
  return buf;
}

DumpRecord record(int n, std::int64_t uid, bool owner_may_read, const std::string& core_name = "") {
  DumpRecord r;
  r.id = id_of(n);
  r.state = core_name.empty() ? DumpState::MetadataOnly : DumpState::Complete;
  r.timestamp_us = 1'700'000'000'000'000 + n;
  r.pid = 1000 + n;
  r.uid = r.euid = uid;
  r.gid = r.egid = uid == 0 ? 0 : kNogroup;
  r.comm = "prog" + std::to_string(n);
  r.extra[extras::kOwnerMayRead] = owner_may_read;
  if (!core_name.empty()) {
    r.compression = "none";
    r.path = core_name;
    r.core_size = r.stored_size = 12;
  }
  return r;
}

class QueryServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root (drops to uid nobody to test visibility)";
    ::chmod(dir_.path().c_str(), 0711);  // nobody must reach the query socket inside
    store_ = dir_ / "store";
    ::mkdir(store_.c_str(), 0750);
    seed();
    query_ = dir_ / "q.socket";
    daemon_ = std::make_unique<Daemon>(COREDUMPD_BIN, dir_ / "kernel.socket", store_, dir_ / "log",
                                       std::vector<std::string>{"--query-socket", query_, "--config", dir_ / "none.json"});
    ASSERT_TRUE(wait_until([&] { return ::access(query_.c_str(), F_OK) == 0; }, 10s)) << daemon_->log();
  }

  virtual void seed() {
    Index index(store_, true);
    write_core("root.core", "root's core!");
    write_core("user.core", "nobody core!");
    write_core("suid.core", "set-uid core");
    index.insert(record(1, 0, false, "root.core"));   // root's
    index.insert(record(2, kNobody, true, "user.core"));  // nobody's own
    DumpRecord suid = record(3, kNobody, false, "suid.core");  // a set-uid program run by nobody
    suid.euid = 0;
    index.insert(suid);
    index.insert(record(4, kNobody, true));  // nobody's, no core
  }

  void write_core(const std::string& name, const std::string& bytes) {
    std::ofstream(store_ + "/" + name) << bytes;
    ::chmod((store_ + "/" + name).c_str(), 0640);
  }

  // Runs `body` in a child as uid/gid nobody, without supplementary groups; returns what it wrote
  // to its pipe. The child's own failures show as a missing or short answer.
  std::string as_nobody(const std::function<std::string()>& body) {
    int p[2];
    EXPECT_EQ(::pipe2(p, O_CLOEXEC), 0);
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::close(p[0]);
      if (::setgroups(0, nullptr) != 0 || ::setresgid(kNogroup, kNogroup, kNogroup) != 0 ||
          ::setresuid(kNobody, kNobody, kNobody) != 0)
        ::_exit(2);
      const std::string out = body();
      (void)!::write(p[1], out.data(), out.size());
      ::_exit(0);
    }
    ::close(p[1]);
    std::string out;
    char buf[4096];
    ssize_t n;
    while ((n = ::read(p[0], buf, sizeof(buf))) > 0) out.append(buf, static_cast<std::size_t>(n));
    ::close(p[0]);
    EXPECT_TRUE(wait_for(pid, 30s).exited);
    return out;
  }

  TempDir dir_;
  std::string store_, query_;
  std::unique_ptr<Daemon> daemon_;
};

std::vector<std::string> ids(const std::vector<nlohmann::json>& envelopes) {
  std::vector<std::string> out;
  for (const auto& e : envelopes) out.push_back(e["record"]["id"]);
  return out;
}

TEST_F(QueryServerTest, SocketIsWorldConnectable) {
  struct stat st {};
  ASSERT_EQ(::stat(query_.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0666u);
}

TEST_F(QueryServerTest, RootSeesEverything) {
  UniqueFd c = connect_query(query_);
  ASSERT_TRUE(c);
  const auto list = ask_list(c.get());
  ASSERT_TRUE(list);
  EXPECT_EQ(ids(*list), (std::vector<std::string>{id_of(1), id_of(2), id_of(3), id_of(4)}));
  EXPECT_TRUE((*list)[0]["record"].value("analysis", nlohmann::json()).is_null());
  // Bounds, inclusive.
  const auto bounded = ask_list(c.get(), R"({"op":"list","since_us":1700000000000002,"until_us":1700000000000003})" "\n");
  ASSERT_TRUE(bounded);
  EXPECT_EQ(ids(*bounded), (std::vector<std::string>{id_of(2), id_of(3)}));

  UniqueFd core;
  const auto reply = ask(c.get(), R"({"op":"core","id":")" + id_of(1) + "\"}\n", &core);
  ASSERT_EQ(reply["ok"], true) << reply;
  ASSERT_TRUE(core);
  char buf[64] = {};
  EXPECT_EQ(::pread(core.get(), buf, sizeof(buf), 0), 12);
  EXPECT_STREQ(buf, "root's core!");
  EXPECT_EQ(::fcntl(core.get(), F_GETFL) & O_ACCMODE, O_RDONLY);

  const auto nocore = ask(c.get(), R"({"op":"core","id":")" + id_of(4) + "\"}\n");
  EXPECT_EQ(nocore["code"], "no_core") << nocore;
  const auto missing = ask(c.get(), R"({"op":"get","id":")" + id_of(99) + "\"}\n");
  EXPECT_EQ(missing["code"], "not_found") << missing;

  const auto status = ask(c.get(), "{\"op\":\"status\"}\n");
  ASSERT_EQ(status["ok"], true) << status;
  const QueryStatus s = status_from_json(status["status"]);
  EXPECT_EQ(s.pid, daemon_->pid());
  EXPECT_EQ(s.activation, "direct");
  EXPECT_EQ(s.query_socket, query_);
  EXPECT_EQ(s.store, store_);
  EXPECT_FALSE(s.version.empty());
  EXPECT_TRUE(s.counters.contains("stored"));
  EXPECT_GE(s.counters["query_served"].get<int>(), 3);
  EXPECT_EQ(s.store_usage["rows"], 4);
  EXPECT_TRUE(s.store_usage["limits"].is_object());
}

TEST_F(QueryServerTest, UserSeesOnlyOwnDumpsAndGetsItsCore) {
  const std::string out = as_nobody([&] {
    nlohmann::json result;
    UniqueFd c = connect_query(query_);
    if (!c) return std::string("connect failed");
    const auto list = ask_list(c.get());
    result["list"] = list ? nlohmann::json(ids(*list)) : nlohmann::json(nullptr);
    result["get_root"] = ask(c.get(), R"({"op":"get","id":")" + id_of(1) + "\"}\n");
    result["core_root"] = ask(c.get(), R"({"op":"core","id":")" + id_of(1) + "\"}\n");
    result["get_suid"] = ask(c.get(), R"({"op":"get","id":")" + id_of(3) + "\"}\n");
    result["get_own"] = ask(c.get(), R"({"op":"get","id":")" + id_of(2) + "\"}\n");
    UniqueFd core;
    result["core_own"] = ask(c.get(), R"({"op":"core","id":")" + id_of(2) + "\"}\n", &core);
    char buf[64] = {};
    result["core_bytes"] = core ? std::string(buf, static_cast<std::size_t>(std::max<ssize_t>(0, ::pread(core.get(), buf, sizeof(buf), 0)))) : "";
    result["status"] = ask(c.get(), "{\"op\":\"status\"}\n")["ok"];
    return result.dump();
  });
  const auto r = nlohmann::json::parse(out, nullptr, false);
  ASSERT_TRUE(r.is_object()) << out;
  EXPECT_EQ(r["list"], nlohmann::json({id_of(2), id_of(4)}));
  EXPECT_EQ(r["get_root"]["code"], "not_found") << r;
  EXPECT_EQ(r["core_root"]["code"], "not_found") << r;
  EXPECT_EQ(r["get_suid"]["code"], "not_found") << r;
  EXPECT_EQ(r["get_own"]["ok"], true) << r;
  EXPECT_EQ(r["get_own"]["dump"]["record"]["id"], id_of(2));
  EXPECT_EQ(r["core_own"]["ok"], true) << r;
  EXPECT_EQ(r["core_bytes"], "nobody core!");
  EXPECT_EQ(r["status"], true);
}

TEST_F(QueryServerTest, FloodIsBusyAndOthersAreStillServed) {
  std::vector<UniqueFd> flood;
  for (int i = 0; i < 200; ++i) {
    UniqueFd c = connect_query(query_);
    if (c) flood.push_back(std::move(c));
  }
  ASSERT_GE(flood.size(), 100u);
  // Beyond the per-uid limit each connection gets one "busy" line and is closed.
  int busy = 0;
  for (auto& c : flood) {
    std::string buf;
    if (auto line = read_line(c.get(), buf, 200ms)) {
      const auto j = nlohmann::json::parse(*line, nullptr, false);
      if (j.is_object() && j.value("code", "") == "busy") ++busy;
    }
  }
  EXPECT_GE(busy, 150) << daemon_->log();
  // Another user is still served at once.
  const std::string out = as_nobody([&] {
    UniqueFd c = connect_query(query_);
    return c ? ask(c.get(), "{\"op\":\"status\"}\n", nullptr, 5s).dump() : std::string("connect failed");
  });
  EXPECT_NE(out.find("\"ok\":true"), std::string::npos) << out;
}

TEST_F(QueryServerTest, HugeRequestIsTooLargeAndClosed) {
  UniqueFd c = connect_query(query_);
  ASSERT_TRUE(c);
  const std::string huge(1 << 20, 'x');
  std::thread sender([&] { (void)::send(c.get(), huge.data(), huge.size(), MSG_NOSIGNAL); });
  std::string buf;
  const auto line = read_line(c.get(), buf, 10s);
  ::shutdown(c.get(), SHUT_RDWR);
  sender.join();
  ASSERT_TRUE(line);
  EXPECT_EQ(nlohmann::json::parse(*line)["code"], "too_large");
}

TEST_F(QueryServerTest, GarbageIsBadRequestAndTheConnectionStaysUsable) {
  UniqueFd c = connect_query(query_);
  ASSERT_TRUE(c);
  constexpr char kGarbage[] = "\x00\xff\x01 garbage {\n";
  EXPECT_EQ(ask(c.get(), std::string(kGarbage, sizeof(kGarbage) - 1))["code"], "bad_request");
  EXPECT_EQ(ask(c.get(), "{\"op\":\"drop_table\"}\n")["code"], "bad_request");
  EXPECT_EQ(ask(c.get(), "{\"op\":\"get\",\"id\":\"../index.sqlite\"}\n")["code"], "bad_request");
  EXPECT_EQ(ask(c.get(), "{\"op\":\"status\"}\n")["ok"], true);
}

TEST_F(QueryServerTest, SilentClientIsDropped) {
  UniqueFd c = connect_query(query_);
  ASSERT_TRUE(c);
  std::string buf;
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_FALSE(read_line(c.get(), buf, 20s));  // EOF, not a timeout of ours
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 15s);
  EXPECT_NE(daemon_->log().find("no complete request"), std::string::npos) << daemon_->log();
}

// A store of 5,000 records, listed by a client that never reads.
class QueryServerBigTest : public QueryServerTest {
 protected:
  void seed() override {
    Index index(store_, true);
    std::vector<std::thread> writers;
    for (int t = 0; t < 8; ++t)
      writers.emplace_back([&index, t] {
        for (int n = t; n < 5000; n += 8) {
          DumpRecord r = record(n + 1, 0, false);
          r.argv.assign(8, std::string(100, 'a'));  // ~1 KiB each: 5 MB of list, far beyond socket buffers
          index.insert(r);
        }
      });
    for (auto& w : writers) w.join();
  }
};

TEST_F(QueryServerBigTest, SlowReaderDoesNotStallOthersAndIsDropped) {
  UniqueFd slow = connect_query(query_);
  ASSERT_TRUE(slow);
  const std::string req = "{\"op\":\"list\"}\n";
  ASSERT_EQ(::send(slow.get(), req.data(), req.size(), MSG_NOSIGNAL), static_cast<ssize_t>(req.size()));
  std::this_thread::sleep_for(1s);
  // Others are answered while the slow reader's reply waits.
  UniqueFd other = connect_query(query_);
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(ask(other.get(), "{\"op\":\"status\"}\n", nullptr, 5s)["ok"], true);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s);
  const auto list = ask_list(other.get());
  ASSERT_TRUE(list);
  EXPECT_EQ(list->size(), 5000u);
  // After the stall bound (30 s) the slow reader is dropped: what it reads ends without the trailer.
  std::this_thread::sleep_for(32s);
  std::string all;
  char buf[65536];
  ssize_t n;
  while ((n = ::recv(slow.get(), buf, sizeof(buf), 0)) > 0) all.append(buf, static_cast<std::size_t>(n));
  EXPECT_EQ(all.find("\"end\":true"), std::string::npos);
  EXPECT_NE(daemon_->log().find("reply left unread"), std::string::npos);
}

}  // namespace
}  // namespace coredumpd::test
