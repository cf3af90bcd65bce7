// The fixture of dumpctl's delete and export tests (dumpctl_delete_test.cc, dumpctl_export_test.cc):
// a root-only store seeded with four dumps (two of user nobody's, root's, a set-uid program's), the
// real coredumpd with its query service, and dumpctl run as root or as nobody in a forked child.
#pragma once

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zstd.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <thread>

#include "store/index.h"
#include "store/query_protocol.h"
#include "store/record_extras.h"
#include "tests/integration/query_client.h"
#include "tests/integration/dumpctl_as_user.h"
#include "tests/support/test_support.h"

namespace coredumpd::test::verbs {

/// dumpctl as `uid` (group nobody), in and with TMPDIR=`dir`, its output in files there; stderr to
/// `err_fd` when >= 0 (a pty).
inline Result run_dumpctl_as(uid_t uid, const std::vector<std::string>& args, const std::string& dir, int err_fd = -1) {
  return run_dumpctl({.uid = uid, .gid = kGroup, .dir = dir, .tmpdir = dir, .cwd = dir, .err_fd = err_fd}, args);
}

/// Runs `argv` (paths without quotes in them) through popen(); its stdout, or std::nullopt if it failed.
inline std::optional<std::string> run_command(const std::vector<std::string>& argv) {
  std::string cmd;
  for (const auto& a : argv) cmd += "'" + a + "' ";
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return std::nullopt;
  std::string out;
  char buf[65536];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  return ::pclose(p) == 0 ? std::optional(out) : std::nullopt;
}

class DumpctlVerbs : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root: runs dumpctl as uid " << kUser << " and seeds a root-only store";
    dir_ = std::make_unique<TempDir>();
    ::chmod(dir_->path().c_str(), 0755);
    query_ = *dir_ / "query.socket";
    store_ = *dir_ / "store";
    user_dir_ = *dir_ / "user";
    std::filesystem::create_directory(user_dir_);
    ASSERT_EQ(::chown(user_dir_.c_str(), kUser, kGroup), 0);
    std::filesystem::create_directory(store_);
    ::chmod(store_.c_str(), 0750);
    std::ofstream(*dir_ / "config.json") << "{}";
    Index index(store_, /*writable=*/true);
    mine_ = add(index, 1, kUser, kUser, true);
    mine2_ = add(index, 2, kUser, kUser, true);
    roots_ = add(index, 3, 0, 0, true);
    setuid_ = add(index, 4, kUser, 0, false);
  }
  void TearDown() override {
    if (HasFailure() && daemon_) std::fprintf(stderr, "coredumpd log:\n%s\n", daemon_->log().c_str());
  }

  std::string add(Index& index, int n, std::int64_t uid, std::int64_t euid, bool owner_may_read) {
    DumpRecord r;
    char id[33];
    std::snprintf(id, sizeof id, "%016llx%016llx", 0x7e0000000000ULL + static_cast<unsigned long long>(n), 0x1234ULL + static_cast<unsigned long long>(n));
    r.id = id;
    r.state = DumpState::Complete;
    r.timestamp_us = 1'700'000'000'000'000 + n * 1'000'000;
    r.pid = 2000 + n;
    r.uid = uid;
    r.euid = euid;
    r.gid = r.egid = uid == 0 ? 0 : kGroup;
    r.comm = "prog" + std::to_string(n);
    r.exe = "/usr/bin/true";  // exists: export archives it
    r.argv = {r.exe};
    r.signal = 11;
    r.extra = {{extras::kOwnerMayRead, owner_may_read}};
    cores_[r.id] = core_bytes(static_cast<char>('a' + n), 200'000);
    const std::string z = zstd_compress(cores_[r.id]);
    r.compression = kCompressionZstd;
    r.path = r.id + ".zst";
    r.core_size = cores_[r.id].size();
    r.stored_size = z.size();
    std::ofstream(store_ + "/" + r.path, std::ios::binary) << z;
    index.insert(r);
    return r.id;
  }

  void start_daemon() {
    daemon_ = std::make_unique<Daemon>(COREDUMPD_BIN, *dir_ / "kernel.socket", store_, *dir_ / "log",
                                       std::vector<std::string>{"--allow-unverified-peers", "--config",
                                                                *dir_ / "config.json", "--query-socket", query_});
    ASSERT_TRUE(wait_until([&] { return std::filesystem::exists(query_); }, 10s)) << "no query socket";
  }

  bool row(const std::string& id) { return Index(store_, false).get(id).has_value(); }
  bool file(const std::string& id) { return std::filesystem::exists(store_ + "/" + id + ".zst"); }

  Result as_user(std::vector<std::string> args) {
    args.insert(args.begin(), {"--query-socket", query_});
    return run_dumpctl_as(kUser, args, user_dir_);
  }
  Result as_root(std::vector<std::string> args) {
    args.insert(args.begin(), {"--store", store_});
    return run_dumpctl_as(0, args, user_dir_);
  }

  /// The reply to `line` sent by uid `uid` (a forked child connects as that user).
  nlohmann::json ask_as(uid_t uid, const std::string& line) {
    const std::string reply_path = user_dir_ + "/reply";
    std::filesystem::remove(reply_path);  // the child may be another user: it creates a new one
    const pid_t pid = ::fork();
    if (pid == 0) {
      if (::setresgid(kGroup, kGroup, kGroup) != 0 || ::setresuid(uid, uid, uid) != 0) ::_exit(125);
      const UniqueFd fd = connect_query(query_);
      std::ofstream(reply_path) << ask(fd.get(), line).dump();
      ::_exit(0);
    }
    EXPECT_TRUE(wait_for(pid, 30s).exited);
    return nlohmann::json::parse(read_file(reply_path).value_or("null"));
  }

  std::unique_ptr<TempDir> dir_;
  std::string query_, store_, user_dir_;
  std::unique_ptr<Daemon> daemon_;
  std::map<std::string, std::string> cores_;
  std::string mine_, mine2_, roots_, setuid_;
};

}  // namespace coredumpd::test::verbs
