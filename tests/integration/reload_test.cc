// SIGHUP reloads: coredumpd rereads its main file and conf.d/ drop-ins. A valid new configuration
// applies from the next crash on, while a dump in flight finishes with the one it started with; a
// broken one is refused with its file, key and reason logged, and the old one stays in force.
// Driven by the fake kernel (the daemon runs with --allow-unverified-peers).
#include <signal.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>

#include <nlohmann/json.hpp>

#include "store/index.h"
#include "tests/fake_kernel/expect_released.h"
#include "tests/fake_kernel/fake_kernel.h"
#include "tests/support/test_support.h"

using namespace coredumpd;
using namespace coredumpd::test;
namespace fk = coredumpd::fake_kernel;

namespace {

class Reload : public ::testing::Test {
 protected:
  void SetUp() override {
    socket_ = dir_ / "s";
    store_ = dir_ / "store";
    std::filesystem::create_directories(dir_ / "conf.d");
  }
  void TearDown() override {
    if (HasFailure() && daemon_) std::fprintf(stderr, "coredumpd log:\n%s\n", daemon_->log().c_str());
  }

  void write(const std::string& relative, const std::string& text) { std::ofstream(dir_ / relative) << text; }
  // `extra_args` go on the daemon's command line (--enable-test-hooks).
  void start(const std::vector<std::string>& extra_args = {}) {
    std::vector<std::string> args{"--allow-unverified-peers", "--config", dir_ / "coredumpd.json"};
    args.insert(args.end(), extra_args.begin(), extra_args.end());
    daemon_ = std::make_unique<Daemon>(COREDUMPD_BIN, socket_, store_, dir_ / "log", args);
  }
  // Sends SIGHUP and waits until the daemon logged the outcome of the reload (`marker`).
  bool reload_and_wait_for(const std::string& marker) {
    const auto before = count(marker);
    if (::kill(daemon_->pid(), SIGHUP) != 0) return false;
    return wait_until([&] { return count(marker) > before; }, 10s);
  }
  std::size_t count(const std::string& needle) const {
    const std::string log = daemon_->log();
    std::size_t n = 0;
    for (auto at = log.find(needle); at != std::string::npos; at = log.find(needle, at + 1)) ++n;
    return n;
  }

  // A rule that rejects crashes of this process (the fake kernel's peer is the test process).
  static std::string reject_us_rule(const std::string& name) {
    std::string comm = read_file("/proc/self/comm").value();
    comm.pop_back();  // the newline
    return R"({"rules": [{"name": ")" + name + R"(", "match": {"comm": ")" + comm + R"("}, "action": "reject"}]})";
  }

  fk::Options options(std::uint64_t size) {
    fk::Options o;
    o.socket_path = socket_;
    o.core = fk::CoreSource::pattern(size, 3, 4096, 7, true);
    o.timeout = std::chrono::milliseconds(30'000);
    return o;
  }

  // The records once there are `n` and none is still in progress.
  std::vector<DumpRecord> records(std::size_t n) {
    std::vector<DumpRecord> out;
    wait_until(
        [&] {
          try {
            out = Index(store_, false).list();
          } catch (const IndexError&) {
            out.clear();
          }
          return out.size() == n &&
                 std::none_of(out.begin(), out.end(), [](const DumpRecord& r) { return r.state == DumpState::InProgress; });
        },
        15s);
    return out;
  }

  TempDir dir_;
  std::string socket_, store_;
  std::unique_ptr<Daemon> daemon_;
  ScopedCoreLimit core_limit_{~0ULL};  // the peer is this process: its RLIMIT_CORE is policy input
};

TEST_F(Reload, NewDropInAppliesToTheNextCrashAndTheDumpInFlightCompletes) {
  write("coredumpd.json", "{}");
  start();
  // SIGHUP while the first core is half streamed, with a new drop-in that rejects us.
  auto o = options(16 << 20);
  o.hook_stream_offset = o.core.size() / 2;
  bool reloaded = false;
  o.hook = [&](fk::Point p, int) {
    if (p != fk::Point::StreamOffset) return;
    write("conf.d/50-reject.json", reject_us_rule("reject-after-reload"));
    reloaded = reload_and_wait_for("SIGHUP: configuration reloaded");
  };
  const auto first = fk::run(o);
  ASSERT_TRUE(reloaded) << "no reload logged";
  ASSERT_TRUE(fk::task_released(first));
  EXPECT_EQ(first.bytes_streamed, o.core.size());
  EXPECT_NE(daemon_->log().find(dir_ / "conf.d/50-reject.json"), std::string::npos) << "the drop-in is named as read";

  const auto second = fk::run(options(64 * 1024));
  EXPECT_EQ(second.outcome, fk::Outcome::Rejected) << second.error;

  const auto all = records(2);
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].state, DumpState::Complete) << all[0].reason << ": the dump in flight kept its configuration";
  EXPECT_EQ(all[0].core_size, o.core.size());
  EXPECT_EQ(all[0].extra.value("rule", ""), "");
  EXPECT_EQ(all[1].state, DumpState::Rejected);
  EXPECT_EQ(all[1].extra.value("rule", ""), "reject-after-reload");
}

TEST_F(Reload, BrokenConfigurationIsRefusedAndTheOldOneStays) {
  write("coredumpd.json", reject_us_rule("old-rule"));
  start();
  // The main file alone would now be fine (no rule), but a drop-in is broken: nothing may change.
  write("coredumpd.json", "{}");
  write("conf.d/60-bad.json", R"({"defaults": {"compression_level": 42}})");
  ASSERT_TRUE(reload_and_wait_for("SIGHUP: new configuration rejected, keeping the old one"));
  const std::string log = daemon_->log();
  EXPECT_NE(log.find(dir_ / "conf.d/60-bad.json" + ": defaults.compression_level: value 42 out of range"), std::string::npos)
      << "the error names the file, the key and the reason";

  const auto res = fk::run(options(64 * 1024));
  EXPECT_EQ(res.outcome, fk::Outcome::Rejected) << res.error;
  const auto all = records(1);
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].extra.value("rule", ""), "old-rule") << "the old configuration is still in force";

  // Fixed: the next SIGHUP applies the files as they now are (no rule: the crash is stored).
  write("conf.d/60-bad.json", R"({"defaults": {"compression_level": 4}})");
  ASSERT_TRUE(reload_and_wait_for("SIGHUP: configuration reloaded"));
  const auto stored = fk::run(options(64 * 1024));
  EXPECT_TRUE(fk::task_released(stored));
  const auto both = records(2);
  ASSERT_EQ(both.size(), 2u);
  EXPECT_EQ(both[1].state, DumpState::Complete) << both[1].reason;
}

// Issue 21.3: without --enable-test-hooks a reload cannot turn a test hook on. A drop-in that
// brings a "testing" section (and a rule that would reject this process's crashes) is refused as a
// whole, the error naming its file and the flag, and the next crash is stored under the old
// configuration with no delay run. The same drop-in without its "testing" section is accepted.
TEST_F(Reload, ATestingSectionIsRefusedWithoutTheTestHooksFlag) {
  write("coredumpd.json", "{}");
  start();
  EXPECT_EQ(count("test hooks are on"), 0u);
  nlohmann::json dropin = nlohmann::json::parse(reject_us_rule("no-us"));
  dropin["testing"] = {{"collector_delay_ms", 1000}};
  write("conf.d/50-new.json", dropin.dump());
  ASSERT_TRUE(reload_and_wait_for("SIGHUP: new configuration rejected, keeping the old one"));
  const std::string log = daemon_->log();
  EXPECT_NE(log.find(dir_ / "conf.d/50-new.json" + ": testing: "), std::string::npos) << log;
  EXPECT_NE(log.find("--enable-test-hooks"), std::string::npos) << log;

  EXPECT_TRUE(fk::task_released(fk::run(options(64 * 1024))));
  auto all = records(1);
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].state, DumpState::Complete) << all[0].reason;
  EXPECT_EQ(count("test hook: a collector sleeps"), 0u) << "the refused delay ran";

  dropin.erase("testing");
  write("conf.d/50-new.json", dropin.dump());
  ASSERT_TRUE(reload_and_wait_for("SIGHUP: configuration reloaded"));
  EXPECT_EQ(fk::run(options(64 * 1024)).outcome, fk::Outcome::Rejected);
  all = records(2);
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[1].state, DumpState::Rejected);
  EXPECT_EQ(all[1].extra.value("rule", ""), "no-us") << "the accepted reload's rule";
}

// With --enable-test-hooks: the warning is logged once at start, and a reload may set the
// collector delay, which then runs (logged) in the next crash's handshake.
TEST_F(Reload, WithTheTestHooksFlagAReloadSetsTheCollectorDelay) {
  write("coredumpd.json", "{}");
  start({"--enable-test-hooks"});
  EXPECT_TRUE(wait_until([&] { return count("*** --enable-test-hooks: test hooks are on") == 1; }, 10s)) << daemon_->log();
  write("conf.d/50-stall.json", R"({"testing": {"collector_delay_ms": 300, "collector_delay_in": "cwd"}})");
  ASSERT_TRUE(reload_and_wait_for("SIGHUP: configuration reloaded"));
  EXPECT_TRUE(fk::task_released(fk::run(options(64 * 1024))));
  const auto all = records(1);
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].state, DumpState::Complete) << all[0].reason;
  EXPECT_EQ(count("test hook: a collector sleeps 300 ms"), 1u);
}

}  // namespace
