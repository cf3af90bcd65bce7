// dumpctl through the daemon's query service (issue 23 parts 2 and 4): the real coredumpd with
// --query-socket on a seeded store, and dumpctl run as an unprivileged uid in a forked child, which
// lists only its own dumps, resolves short ids among them, gets its cores byte for byte with `dump`
// and `debug` (the debugger running as that user), is refused root's and a set-uid program's, and
// reads `dumpctl status`; plus the messages when the daemon is not running.
#include <fcntl.h>
#include <grp.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zstd.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>

#include "store/index.h"
#include "store/query_protocol.h"
#include "store/record_extras.h"
#include "tests/integration/dumpctl_as_user.h"
#include "tests/support/test_support.h"

using namespace coredumpd;
using namespace coredumpd::test;

namespace {

/// dumpctl as `uid`/`gid` with TMPDIR=`tmpdir`, its output in files in `dir` (dumpctl_as_user.h).
Result run_dumpctl_as(uid_t uid, gid_t gid, const std::vector<std::string>& args, const std::string& dir,
                      const std::string& tmpdir = "/tmp") {
  return run_dumpctl({.uid = uid, .gid = gid, .dir = dir, .tmpdir = tmpdir, .cwd = "", .err_fd = -1}, args);
}

class DumpctlQuery : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root: runs dumpctl as uid " << kUser << " and seeds a root-only store";
    dir_ = std::make_unique<TempDir>();
    ::chmod(dir_->path().c_str(), 0755);  // the user reaches the query socket and its own directory in here
    socket_ = *dir_ / "kernel.socket";
    query_ = *dir_ / "query.socket";
    store_ = *dir_ / "store";
    user_dir_ = *dir_ / "user";
    std::filesystem::create_directory(user_dir_);
    ASSERT_EQ(::chown(user_dir_.c_str(), kUser, kGroup), 0);
    std::filesystem::create_directory(store_);
    ::chmod(store_.c_str(), 0750);
    std::ofstream(*dir_ / "config.json") << "{}";
    seed();
  }
  void TearDown() override {
    if (HasFailure() && daemon_) std::fprintf(stderr, "coredumpd log:\n%s\n", daemon_->log().c_str());
  }

  void start_daemon() {
    daemon_ = std::make_unique<Daemon>(COREDUMPD_BIN, socket_, store_, *dir_ / "log",
                                       std::vector<std::string>{"--allow-unverified-peers", "--config", *dir_ / "config.json",
                                                                "--query-socket", query_});
    ASSERT_TRUE(wait_until([&] { return std::filesystem::exists(query_); }, 10s)) << "no query socket";
  }

  DumpRecord record(int n, std::int64_t uid, std::int64_t euid, bool owner_may_read) {
    DumpRecord r;
    char id[33];
    std::snprintf(id, sizeof id, "%016llx%016llx", 0x5f0000000000ULL + static_cast<unsigned long long>(n),
                  0xabcdef00ULL + static_cast<unsigned long long>(n));
    r.id = id;
    r.state = DumpState::Complete;
    r.timestamp_us = 1'700'000'000'000'000 + n * 1'000'000;
    r.pid = 1000 + n;
    r.uid = uid;
    r.euid = euid;
    r.gid = r.egid = uid == 0 ? 0 : kGroup;
    r.comm = "prog" + std::to_string(n);
    r.exe = "/nonexistent/prog" + std::to_string(n);
    r.argv = {r.exe};
    r.signal = 11;
    r.extra = {{extras::kOwnerMayRead, owner_may_read}};
    return r;
  }

  /// The user's zstd dump, the user's raw dump, root's dump, and a set-uid program the user ran.
  void seed() {
    Index index(store_, /*writable=*/true);
    user_core_ = core_bytes('a', 300'000);
    DumpRecord u = record(1, kUser, kUser, true);
    const std::string z = zstd_compress(user_core_);
    u.compression = kCompressionZstd;
    u.path = u.id + ".zst";
    u.core_size = user_core_.size();
    u.stored_size = z.size();
    std::ofstream(store_ + "/" + u.path, std::ios::binary) << z;
    index.insert(u);
    user_zstd_ = u.id;

    user_raw_core_ = core_bytes('r', 70'000);
    DumpRecord raw = record(2, kUser, kUser, true);
    raw.compression = kCompressionNone;
    raw.path = raw.id + ".core";
    raw.core_size = raw.stored_size = user_raw_core_.size();
    std::ofstream(store_ + "/" + raw.path, std::ios::binary) << user_raw_core_;
    index.insert(raw);
    user_raw_ = raw.id;

    for (auto [n, uid, euid, may] : {std::tuple{3, 0, 0, true}, std::tuple{4, int(kUser), 0, false}}) {
      DumpRecord o = record(n, uid, euid, may);
      // Root's dump shares 24 characters with the user's raw dump: a prefix ambiguous in the store
      // that the user's own list resolves.
      if (n == 3) o.id = raw.id.substr(0, 24) + "ffffffff";
      const std::string oz = zstd_compress(core_bytes('x', 1000));
      o.compression = kCompressionZstd;
      o.path = o.id + ".zst";
      o.core_size = 1000;
      o.stored_size = oz.size();
      std::ofstream(store_ + "/" + o.path, std::ios::binary) << oz;
      index.insert(o);
      others_.push_back(o.id);
    }
  }

  Result as_user(std::vector<std::string> args) {
    args.insert(args.begin(), {"--query-socket", query_});
    return run_dumpctl_as(kUser, kGroup, args, user_dir_, user_dir_);
  }

  std::unique_ptr<TempDir> dir_;
  std::string socket_, query_, store_, user_dir_;
  std::unique_ptr<Daemon> daemon_;
  std::string user_core_, user_raw_core_, user_zstd_, user_raw_;
  std::vector<std::string> others_;  ///< root's dump, the set-uid one
};

TEST_F(DumpctlQuery, NotRunningSaysSoInOneLine) {
  const std::string none = *dir_ / "no-such.socket";
  const Result r = run_dumpctl_as(kUser, kGroup, {"--query-socket", none, "list"}, user_dir_);
  EXPECT_EQ(r.rc(), 1);
  EXPECT_EQ(r.err, "dumpctl: coredumpd is not running: no query service at " + none +
                       " (No such file or directory); root can read the store directly\n");
  const Result root = run_dumpctl_as(0, 0, {"--query-socket", none, "info"}, user_dir_);
  EXPECT_EQ(root.rc(), 1) << "root with --query-socket uses the service too";
  EXPECT_NE(root.err.find("coredumpd is not running"), std::string::npos) << root.err;
}

TEST_F(DumpctlQuery, UserWithoutOptionsAsksTheDefaultService) {
  if (std::filesystem::exists(kDefaultQuerySocket)) GTEST_SKIP() << kDefaultQuerySocket << " exists on this machine";
  const Result r = run_dumpctl_as(kUser, kGroup, {"list"}, user_dir_);
  EXPECT_EQ(r.rc(), 1);
  EXPECT_NE(r.err.find(std::string("no query service at ") + kDefaultQuerySocket), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("unable to open database"), std::string::npos) << "not SQLite's message: " << r.err;
}

TEST_F(DumpctlQuery, RootReadsTheStoreDirectlyWithoutTheDaemon) {
  const Result r = run_dumpctl_as(0, 0, {"--store", store_, "list", "--json=pretty"}, user_dir_);
  ASSERT_EQ(r.rc(), 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out).size(), 4U);
}

TEST_F(DumpctlQuery, UserListsOnlyTheirOwnDumps) {
  start_daemon();
  const Result r = as_user({"list", "--json=pretty"});
  ASSERT_EQ(r.rc(), 0) << r.err;
  std::vector<std::string> ids;
  for (const auto& j : nlohmann::json::parse(r.out)) ids.push_back(j.at("id").get<std::string>());
  EXPECT_EQ(ids, (std::vector<std::string>{user_zstd_, user_raw_}));
  const Result table = as_user({"list"});
  ASSERT_EQ(table.rc(), 0) << table.err;
  EXPECT_NE(table.out.find("present"), std::string::npos) << table.out;

  const Result root = run_dumpctl_as(0, 0, {"--query-socket", query_, "list", "--json=pretty"}, user_dir_);
  ASSERT_EQ(root.rc(), 0) << root.err;
  EXPECT_EQ(nlohmann::json::parse(root.out).size(), 4U) << "root sees every dump";
}

TEST_F(DumpctlQuery, ShortIdsResolveAmongTheUsersOwnDumps) {
  start_daemon();
  const std::string prefix = user_raw_.substr(0, 24);
  const Result info = as_user({"info", "--json=pretty", prefix});
  ASSERT_EQ(info.rc(), 0) << info.err;
  EXPECT_EQ(nlohmann::json::parse(info.out).at("id"), user_raw_);
  const Result root = run_dumpctl_as(0, 0, {"--store", store_, "info", prefix}, user_dir_);
  EXPECT_EQ(root.rc(), 1);
  EXPECT_NE(root.err.find("ambiguous"), std::string::npos) << "among all dumps it is: " << root.err;
  // Root's dump: not listed, so not matched, whatever the prefix; and refused by full id too.
  for (const auto& other : others_) {
    const Result r = as_user({"info", other});
    EXPECT_EQ(r.rc(), 1) << other;
    EXPECT_EQ(r.err, "No coredumps found.\n") << "coredumpctl's message: the id names no dump of theirs";
    const Result d = as_user({"dump", other, "-o", user_dir_ + "/stolen"});
    EXPECT_EQ(d.rc(), 1);
    EXPECT_FALSE(std::filesystem::exists(user_dir_ + "/stolen"));
  }
}

TEST_F(DumpctlQuery, UserDumpsTheirCoresByteForByte) {
  start_daemon();
  for (const auto& [id, bytes] : {std::pair{user_zstd_, user_core_}, std::pair{user_raw_, user_raw_core_}}) {
    const std::string out = user_dir_ + "/core-" + id;
    const Result r = as_user({"dump", id, "-o", out});
    ASSERT_EQ(r.rc(), 0) << r.err;
    EXPECT_EQ(read_file(out), bytes) << id;
    struct stat sb {};
    ASSERT_EQ(::stat(out.c_str(), &sb), 0);
    EXPECT_EQ(sb.st_uid, kUser) << "written by the user";
  }
}

TEST_F(DumpctlQuery, DebugRunsTheDebuggerAsTheUser) {
  start_daemon();
  // A stand-in debugger: records who runs it and copies the core it is given (the last argument).
  const std::string debugger = *dir_ / "debugger.sh";
  std::ofstream(debugger) << "#!/bin/sh\nid -u > " << user_dir_ << "/debugger-uid\n"
                          << "for a; do core=$a; done\ncat \"$core\" > " << user_dir_ << "/debugger-core\n";
  ::chmod(debugger.c_str(), 0755);
  for (const auto& [id, bytes] : {std::pair{user_zstd_, user_core_}, std::pair{user_raw_, user_raw_core_}}) {
    const Result r = as_user({"debug", "--debugger", debugger, id});
    ASSERT_EQ(r.rc(), 0) << r.err;
    EXPECT_EQ(read_file(user_dir_ + "/debugger-uid"), std::to_string(kUser) + "\n");
    EXPECT_EQ(read_file(user_dir_ + "/debugger-core"), bytes) << id;
  }
  std::vector<std::string> left;
  for (const auto& e : std::filesystem::directory_iterator(user_dir_))
    if (e.path().filename().string().starts_with("dumpctl-core-")) left.push_back(e.path());
  EXPECT_TRUE(left.empty()) << "the private copy is removed";
}

TEST_F(DumpctlQuery, StatusWithTheDaemonUp) {
  start_daemon();
  const Result j = as_user({"status", "--json"});
  ASSERT_TRUE(j.rc() == 0 || j.rc() == 3) << j.err;
  const auto s = nlohmann::json::parse(j.out);
  EXPECT_TRUE(s.at("daemon").at("running").get<bool>());
  EXPECT_EQ(s["daemon"]["status"]["pid"], daemon_->pid());
  EXPECT_EQ(s["core_pattern"]["kernel_socket"], socket_);
  EXPECT_EQ(s["core_pattern"]["socket_listening"], true) << "seen in /proc/net/unix, not by connecting";
  EXPECT_EQ(j.rc(), s["loses_dumps"].get<bool>() ? 3 : 0);
  // This test does not install the pattern: unless the machine's points here, it is a problem.
  EXPECT_EQ(s["core_pattern"]["ours"].get<bool>(), read_file("/proc/sys/kernel/core_pattern") == "@@" + socket_ + "\n");

  const Result t = as_user({"status"});
  EXPECT_NE(t.out.find("Daemon: running (pid " + std::to_string(daemon_->pid())), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("Kernel Socket: " + socket_ + " (listening)"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("Store Usage: "), std::string::npos) << t.out;
}

TEST_F(DumpctlQuery, StatusWithTheDaemonDown) {
  const std::string none = *dir_ / "no-such.socket";
  const Result j = run_dumpctl_as(0, 0, {"--store", store_, "--query-socket", none, "status", "--json"}, user_dir_);
  const auto s = nlohmann::json::parse(j.out);
  EXPECT_FALSE(s.at("daemon").at("running").get<bool>());
  EXPECT_NE(s["daemon"]["error"].get<std::string>().find("coredumpd is not running"), std::string::npos);
  EXPECT_EQ(j.rc(), s["loses_dumps"].get<bool>() ? 3 : 0);
  EXPECT_EQ(s["store"]["source"], "local") << "root computes the usage itself";
  EXPECT_EQ(s["store"]["cores"], 4);
  EXPECT_EQ(s["store"]["rows"], 4);

  const Result t = run_dumpctl_as(kUser, kGroup, {"--query-socket", none, "status"}, user_dir_);
  // The machine's core_pattern may point at another coredumpd (one without this query socket).
  const bool listening = s["core_pattern"]["socket_listening"] == true;
  EXPECT_NE(t.out.find(listening ? "Daemon: no query service" : "Daemon: not running"), std::string::npos) << t.out;
  EXPECT_NE(t.err.find("warning: coredumpd is not running"), std::string::npos) << t.err;
  EXPECT_NE(t.out.find("Store Usage: unknown"), std::string::npos) << "a user cannot read the store: " << t.out;
}

}  // namespace
