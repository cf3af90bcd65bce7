// The `fake-kernel` executable: flags in, JSON out, exit status from --expect-*.
#include <sys/wait.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/fake_kernel/test_support.h"

namespace coredumpd::fake_kernel {
namespace {

using namespace coredumpd::fake_kernel::testing;
using protocol::COREDUMP_KERNEL;
using protocol::COREDUMP_RECORDS;
using protocol::COREDUMP_REJECT;
using protocol::COREDUMP_SPARSE;

// Runs the CLI, returns (exit status, stdout).
std::pair<int, std::string> run_cli(const std::string& args) {
  const std::string cmd = std::string(FAKE_KERNEL_CLI) + " " + args;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return {-1, ""};
  std::string out;
  char buf[4096];
  std::size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  const int status = ::pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

TEST(FakeKernelCli, ReportsAConnectFailureAsJson) {
  const std::string dir = testing::make_temp_dir();
  const auto [status, out] = run_cli("--socket " + dir + "/missing.sock --timeout-ms 2000");
  std::filesystem::remove_all(dir);
  EXPECT_EQ(status, 0);
  const auto j = nlohmann::json::parse(out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << out;
  EXPECT_EQ(j["outcome"], "connect_failed");
  EXPECT_EQ(j["connect_errno"], ENOENT);
}

TEST(FakeKernelCli, RunsAScenarioAndChecksExpectations) {
  ReadEnd stream;
  ScriptedServer server([&](ServerConn& c) {
    c.read_request();
    c.send(make_ack(24, COREDUMP_KERNEL | COREDUMP_RECORDS | COREDUMP_SPARSE));
    c.read_marker();
    stream = c.read_to_end();
  });
  const auto [status, out] =
      run_cli("--socket " + server.path() +
              " --request-size 32 --size-ack 24 --mask 0x7f --core-bytes 65536 --data-page-stride 4"
              " --timeout-ms 5000 --expect-marker 0 --expect-outcome dumped --stall marker-sent:1");
  server.join();
  EXPECT_EQ(status, 0) << out;
  const auto j = nlohmann::json::parse(out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << out;
  EXPECT_EQ(j["sparse_acked"], true);
  EXPECT_EQ(j["core"], "pattern:65536/4");
  const auto d = decode_records(stream.data, true);
  EXPECT_EQ(d.error, "");
  EXPECT_TRUE(d.saw_end);
  EXPECT_EQ(d.core.size(), 65536u);
}

TEST(FakeKernelCli, FailedExpectationExitsOne) {
  ScriptedServer server([&](ServerConn& c) {
    c.read_request();
    c.send(make_ack(16, COREDUMP_REJECT));
    c.read_marker();
  });
  const auto [status, out] =
      run_cli("--socket " + server.path() + " --timeout-ms 5000 --expect-outcome dumped");
  server.join();
  EXPECT_EQ(status, 1) << out;
}

// A server that never hangs up after the dump: the JSON says not_released (a frozen task), and
// --expect-outcome dumped fails.
TEST(FakeKernelCli, AWaitEndedByTheDeadlineIsNotReleased) {
  ScriptedServer server([&](ServerConn& c) {
    c.read_request();
    c.send(make_ack(16, COREDUMP_KERNEL | protocol::COREDUMP_WAIT));
    c.read_marker();
    c.read_to_end();
    c.wait_peer_closed();  // only the fake's deadline ends the WAIT
  });
  const auto [status, out] =
      run_cli("--socket " + server.path() + " --core-bytes 4096 --timeout-ms 400 --expect-outcome dumped");
  server.join();
  EXPECT_EQ(status, 1) << out;
  const auto j = nlohmann::json::parse(out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << out;
  EXPECT_EQ(j["outcome"], "not_released");
  EXPECT_EQ(j["wait_end"], "timeout");
  EXPECT_EQ(j["stream_complete"], true);
}

}  // namespace
}  // namespace coredumpd::fake_kernel
