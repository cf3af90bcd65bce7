// `dumpctl fleet` runs dumpctl-fleet (cli/fleet_launch.h): the command line reaches it unchanged,
// its exit status and output are dumpctl's, --help and dumpctl's global options still work, and a
// missing program is a clear error. No PostgreSQL or S3 needed (a refused connection suffices).
#include <sys/stat.h>

#include <gtest/gtest.h>

#include <fstream>

#include "tests/support/test_support.h"

namespace coredumpd {
namespace {

using namespace std::chrono_literals;

// `program` with `args` and the environment assignments `env`, its stdout and stderr together.
std::pair<int, std::string> run(const std::string& program, const std::vector<std::string>& args,
                                const std::vector<std::string>& env = {}) {
  std::vector<std::string> argv = {"/bin/sh", "-c", "exec \"$0\" \"$@\" 2>&1", "/usr/bin/env"};
  argv.insert(argv.end(), env.begin(), env.end());
  argv.push_back(program);
  argv.insert(argv.end(), args.begin(), args.end());
  auto [status, out] = test::run_capture(argv, 30s);
  return {status.exit_code(), out};
}

std::pair<int, std::string> dumpctl(const std::vector<std::string>& args, const std::vector<std::string>& env = {}) {
  return run(DUMPCTL_BIN, args, env);
}

TEST(DumpctlFleetLaunch, HelpShowsTheFleetVerbsAndOptions) {
  auto [rc, out] = dumpctl({"fleet", "--help"});
  EXPECT_EQ(rc, 0) << out;
  for (const char* want : {"Usage: dumpctl fleet", "--database", "--bucket", "top", "crashes", "fetch"})
    EXPECT_NE(out.find(want), std::string::npos) << want << " in:\n" << out;
  std::tie(rc, out) = dumpctl({"fleet", "fetch", "--help"});
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("DUMP-ID"), std::string::npos) << out;
  std::tie(rc, out) = dumpctl({"--help"});
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("fleet"), std::string::npos) << out;
  EXPECT_NE(out.find("the fleet index (PostgreSQL) and cores in S3"), std::string::npos) << out;
  std::tie(rc, out) = dumpctl({"fleet"});  // a verb is required, as before
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find("subcommand"), std::string::npos) << out;
}

TEST(DumpctlFleetLaunch, GlobalOptionsBeforeAndAfterTheVerbReachIt) {
  // dumpctl's own checks of its options, made by dumpctl-fleet (it parses them as dumpctl does).
  auto [rc, out] = dumpctl({"-n", "0", "fleet", "--database", "host=127.0.0.1 port=1 dbname=x", "top"});
  EXPECT_EQ(rc, 1);
  EXPECT_NE(out.find("dumpctl: Invalid numeric parameter to -n: 0"), std::string::npos) << out;
  std::tie(rc, out) = dumpctl({"fleet", "--database", "host=127.0.0.1 port=1 dbname=x", "top", "--json=bogus"});
  EXPECT_EQ(rc, 1);
  EXPECT_NE(out.find("bogus"), std::string::npos) << out;
  // Accepted before and after the verb: the error is the database's, not a usage error.
  std::tie(rc, out) = dumpctl({"--no-pager", "--json=short", "fleet", "--database", "host=127.0.0.1 port=1 dbname=x",
                               "top", "-n", "3", "--no-legend", "-S", "-7d"});
  EXPECT_EQ(rc, 1);
  EXPECT_NE(out.find("dumpctl: fleet index: cannot connect:"), std::string::npos) << out;
}

TEST(DumpctlFleetLaunch, TheCommandLineExitStatusAndOutputAreTheProgramsUnchanged) {
  test::TempDir dir;
  {
    std::ofstream(dir / "dumpctl-fleet") << "#!/bin/sh\nfor a in \"$@\"; do echo \"[$a]\"; done\necho to-stderr >&2\nexit 7\n";
  }
  ASSERT_EQ(::chmod((dir / "dumpctl-fleet").c_str(), 0755), 0);
  auto [rc, out] = dumpctl({"--json=short", "fleet", "--database", "a b", "crashes", "-1x", "--", "--no-legend"},
                           {"COREDUMPD_LIBEXEC_DIR=" + dir.path()});
  EXPECT_EQ(rc, 7) << out;
  EXPECT_EQ(out, "[--json=short]\n[fleet]\n[--database]\n[a b]\n[crashes]\n[-1x]\n[--]\n[--no-legend]\nto-stderr\n");
}

TEST(DumpctlFleetLaunch, AMissingProgramIsAClearError) {
  test::TempDir dir;
  auto [rc, out] = dumpctl({"fleet", "top"}, {"COREDUMPD_LIBEXEC_DIR=" + dir.path()});
  EXPECT_EQ(rc, 1);
  EXPECT_EQ(out, "dumpctl: cannot run " + dir.path() + "/dumpctl-fleet (the fleet commands): No such file or directory\n");
}

TEST(DumpctlFleetLaunch, TheProgramRunsTheFleetVerbsOnly) {
  auto [rc, out] = run(DUMPCTL_FLEET_BIN, {"list"});
  EXPECT_EQ(rc, 1);
  EXPECT_NE(out.find("dumpctl-fleet runs `dumpctl fleet` only"), std::string::npos) << out;
}

}  // namespace
}  // namespace coredumpd
