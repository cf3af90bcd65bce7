// dumpctl run as root or as another user in a forked child, and the store fixtures its tests write
// (compressed cores of known bytes): shared by dumpctl_query_test.cc and the delete/export tests
// (dumpctl_verbs_fixture.h).
#pragma once

#include <fcntl.h>
#include <grp.h>
#include <stdlib.h>
#include <sys/types.h>
#include <unistd.h>
#include <zstd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "tests/support/test_support.h"

namespace coredumpd::test {

constexpr uid_t kUser = 65534;  // nobody
constexpr gid_t kGroup = 65534;

struct Result {
  ExitStatus status;
  std::string out, err;
  int rc() const { return status.exited && !status.signaled() ? status.exit_code() : -1; }
};

/// How run_dumpctl() runs it: as `uid`/`gid` (no supplementary groups; root stays root), stdout
/// and stderr to files in `dir` (stderr to `err_fd` instead when >= 0, e.g. a pty), with
/// TMPDIR=`tmpdir`, in `cwd` when not empty.
struct DumpctlRun {
  uid_t uid = 0;
  gid_t gid = kGroup;
  std::string dir;
  std::string tmpdir = "/tmp";
  std::string cwd;
  int err_fd = -1;
};

/// Runs DUMPCTL_BIN with `args` as `how` says. Bounded: 60 s (then killed; status says so).
inline Result run_dumpctl(const DumpctlRun& how, const std::vector<std::string>& args) {
  using namespace std::chrono_literals;
  const std::string out_path = how.dir + "/stdout", err_path = how.dir + "/stderr";
  const int out = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  const int err = how.err_fd >= 0 ? ::dup(how.err_fd)
                                  : ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  std::vector<std::string> argv{DUMPCTL_BIN};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> cargv;
  for (auto& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(out, 1);
    ::dup2(err, 2);
    ::setenv("TMPDIR", how.tmpdir.c_str(), 1);
    if (!how.cwd.empty() && ::chdir(how.cwd.c_str()) != 0) ::_exit(124);
    if (how.uid != 0 && (::setgroups(0, nullptr) != 0 || ::setresgid(how.gid, how.gid, how.gid) != 0 ||
                         ::setresuid(how.uid, how.uid, how.uid) != 0))
      ::_exit(125);
    ::execv(cargv[0], cargv.data());
    ::_exit(126);
  }
  ::close(out);
  ::close(err);
  Result r;
  r.status = wait_for(pid, 60s);
  r.out = read_file(out_path).value_or("");
  if (how.err_fd < 0) r.err = read_file(err_path).value_or("");
  return r;
}

/// `data` compressed as the store keeps a core (zstd level 3).
inline std::string zstd_compress(const std::string& data) {
  std::string out(ZSTD_compressBound(data.size()), '\0');
  const std::size_t n = ZSTD_compress(out.data(), out.size(), data.data(), data.size(), 3);
  EXPECT_EQ(ZSTD_isError(n), 0U);
  out.resize(n);
  return out;
}

/// Core bytes that are not all alike (an ELF header is not needed: only the bytes are compared).
inline std::string core_bytes(char seed, std::size_t n) {
  std::string s(n, '\0');
  for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>(seed + static_cast<char>(i * 7 % 251));
  return s;
}

}  // namespace coredumpd::test
