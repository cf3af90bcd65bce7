// Issue 21.3: the test hooks of coredumpd are off unless its command line says
// --enable-test-hooks, which it logs as a warning. Without the flag a "testing" section in the
// main file or a drop-in fails --check-config and the start (reload: reload_test.cc), and
// --test-hold-before-store needs the flag too. With it, a stop (SIGTERM) ends a collector's test
// delay at once instead of waiting for it. Driven by the fake kernel (--allow-unverified-peers).
#include <signal.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <thread>
#include <tuple>

#include <nlohmann/json.hpp>

#include "store/index.h"
#include "tests/fake_kernel/expect_released.h"
#include "tests/fake_kernel/fake_kernel.h"
#include "tests/support/settled_records.h"
#include "tests/support/test_support.h"

using namespace coredumpd;
using namespace coredumpd::test;
namespace fk = coredumpd::fake_kernel;

namespace {

constexpr const char* kWarning = "*** --enable-test-hooks: test hooks are on";

class TestHooks : public ::testing::Test {
 protected:
  void SetUp() override {
    socket_ = dir_ / "s";
    store_ = dir_ / "store";
    std::filesystem::create_directories(dir_ / "conf.d");
    write("coredumpd.json", "{}");
  }
  void TearDown() override {
    if (HasFailure() && daemon_) std::fprintf(stderr, "coredumpd log:\n%s\n", daemon_->log().c_str());
  }

  void write(const std::string& relative, const std::string& text) { std::ofstream(dir_ / relative) << text; }
  std::vector<std::string> base_args() const {
    return {"--socket", socket_, "--store", store_, "--allow-unverified-peers", "--config", dir_ / "coredumpd.json"};
  }
  void start(const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args{"--allow-unverified-peers", "--config", dir_ / "coredumpd.json"};
    args.insert(args.end(), extra.begin(), extra.end());
    daemon_ = std::make_unique<Daemon>(COREDUMPD_BIN, socket_, store_, dir_ / "log", args);
  }
  // Runs `coredumpd ARGS` to its end (bounded: a daemon that started instead of failing is killed
  // at 30 s, exit code -1); returns {exit code, stdout, stderr}.
  std::tuple<int, std::string, std::string> run(const std::vector<std::string>& args) {
    const std::string err_file = dir_ / "stderr";
    std::vector<std::string> argv{"/bin/sh", "-c", "f=$1; shift; exec \"$@\" 2>\"$f\"", "sh", err_file, COREDUMPD_BIN};
    argv.insert(argv.end(), args.begin(), args.end());
    const auto [st, out] = run_capture(argv, 30s);
    return {st.exited ? st.exit_code() : -1, out, read_file(err_file).value_or("")};
  }
  // The daemon logged `needle`.
  bool logged(const std::string& needle) const { return daemon_->log().find(needle) != std::string::npos; }

  TempDir dir_;
  std::string socket_, store_;
  std::unique_ptr<Daemon> daemon_;
  ScopedCoreLimit core_limit_{~0ULL};  // the peer is this process: its RLIMIT_CORE is policy input
};

// --check-config: a drop-in's "testing" section is an error naming the drop-in and the flag; with
// the flag the same files are valid, the hooks show in the effective configuration and the
// warning is printed.
TEST_F(TestHooks, CheckConfigRefusesTheTestingSectionWithoutTheFlag) {
  write("conf.d/50-stall.json", R"({"testing": {"collector_delay_ms": 1500, "collector_delay_in": "cwd"}})");
  const auto [rc, out, err] = run({"--check-config", "--config", dir_ / "coredumpd.json"});
  EXPECT_EQ(rc, 1) << out << err;
  EXPECT_TRUE(out.empty()) << out;
  EXPECT_NE(err.find((dir_ / "conf.d/50-stall.json") + ": testing: "), std::string::npos) << err;
  EXPECT_NE(err.find("--enable-test-hooks"), std::string::npos) << err;

  const auto [rc2, out2, err2] = run({"--check-config", "--enable-test-hooks", "--config", dir_ / "coredumpd.json"});
  ASSERT_EQ(rc2, 0) << err2;
  const auto j = nlohmann::json::parse(out2);
  EXPECT_EQ(j["testing"], (nlohmann::json{{"collector_delay_ms", 1500}, {"collector_delay_in", "cwd"}}));
  EXPECT_NE(err2.find(kWarning), std::string::npos) << err2;

  // Without a "testing" section the effective configuration shows none and loads back as it is.
  std::filesystem::remove(dir_ / "conf.d/50-stall.json");
  const auto [rc3, out3, err3] = run({"--check-config", "--config", dir_ / "coredumpd.json"});
  ASSERT_EQ(rc3, 0) << err3;
  EXPECT_FALSE(nlohmann::json::parse(out3).contains("testing")) << out3;
  EXPECT_EQ(err3.find("test hooks"), std::string::npos) << err3;
  write("coredumpd.json", out3);
  const auto [rc4, out4, err4] = run({"--check-config", "--config", dir_ / "coredumpd.json"});
  EXPECT_EQ(rc4, 0) << err4;
  EXPECT_EQ(out4, out3);
}

// The daemon does not start on such a configuration (exit 1, the error on stderr, no socket); a
// daemon that started anyway would run until run() kills it at its bound (exit code -1).
// --test-hold-before-store is refused without the flag as well.
TEST_F(TestHooks, TheDaemonDoesNotStartWithTestHooksItWasNotGiven) {
  write("coredumpd.json", R"({"testing": {"collector_delay_ms": 100}})");
  auto [rc, out, err] = run(base_args());
  EXPECT_EQ(rc, 1) << err;
  EXPECT_NE(err.find((dir_ / "coredumpd.json") + ": testing: "), std::string::npos) << err;
  EXPECT_NE(err.find("--enable-test-hooks"), std::string::npos) << err;
  EXPECT_FALSE(std::filesystem::exists(socket_));

  write("coredumpd.json", "{}");
  auto args = base_args();
  args.push_back("--test-hold-before-store");
  std::tie(rc, out, err) = run(args);
  EXPECT_NE(rc, 0);
  EXPECT_NE(rc, -1) << "it started";
  EXPECT_NE(err.find("--enable-test-hooks"), std::string::npos) << err;
  EXPECT_FALSE(std::filesystem::exists(socket_));
}

// A stop during a collector's test delay (5 s, the cap, inside a 10 s handshake, so the crash's
// ack waits for it) ends the delay at once: the daemon logs that it cut it short, acks and stores
// the crash, and exits cleanly. Before, the stop waited for the whole sleep. The ack's time from
// the daemon's own record must be below the delay, which only a cut-short delay allows; the wait
// for the exit is bounded far above any normal stop.
TEST_F(TestHooks, AStopDoesNotWaitForACollectorDelay) {
  write("coredumpd.json", R"({"handshake_timeout_ms": 10000, "testing": {"collector_delay_ms": 5000}})");
  start({"--enable-test-hooks"});
  fk::Options o;
  o.socket_path = socket_;
  o.core = fk::CoreSource::pattern(256 * 1024, 3, 4096, 7, true);
  o.timeout = std::chrono::milliseconds(30'000);  // the fake kernel's own wait, far above the delay
  fk::Result res;
  std::thread crash([&] { res = fk::run(o); });
  const bool sleeping = wait_until([&] { return logged("test hook: a collector sleeps 5000 ms"); }, 30s);
  EXPECT_TRUE(sleeping) << "the delay never started";
  const ExitStatus st = daemon_->stop(60s);
  crash.join();
  ASSERT_TRUE(st.exited) << "coredumpd did not exit within 60 s of SIGTERM";
  EXPECT_EQ(st.exit_code(), 0) << "raw status " << st.raw;
  EXPECT_TRUE(logged("test hook: collector delay cut short by the stop")) << "the stop waited for the delay";
  EXPECT_TRUE(fk::task_released(res));
  const auto all = settled_records(store_, 1, 30s);
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].state, DumpState::Complete) << all[0].reason;
  const auto handshake_us = all[0].extra.value("handshake_us", std::int64_t{0});
  EXPECT_GT(handshake_us, 0);
  EXPECT_LT(handshake_us, 5'000'000) << "the ack waited for the whole delay";
}

}  // namespace
