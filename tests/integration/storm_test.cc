// Integration tests of crash storms under the fake kernel: dumps in flight are bounded by their
// memory, disk and count (daemon/dump/dump_budget.h), so many simultaneous small dumps wait their
// turn and all get their core; one that finds no room before its handshake deadline gets the
// overload_action as an explicit record, with the reason.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <future>
#include <memory>
#include <thread>
#include <vector>

#include "store/index.h"
#include "tests/fake_kernel/expect_released.h"
#include "tests/fake_kernel/fake_kernel.h"
#include "tests/support/settled_records.h"
#include "tests/support/test_support.h"

using namespace coredumpd;
using namespace coredumpd::test;
namespace fk = coredumpd::fake_kernel;

namespace {

class Storm : public ::testing::Test {
 protected:
  void start(const std::string& config) {
    dir_ = std::make_unique<TempDir>();
    socket_ = *dir_ / "s";
    store_ = *dir_ / "store";
    std::ofstream(*dir_ / "config.json") << config;
    daemon_ = std::make_unique<Daemon>(COREDUMPD_BIN, socket_, store_, *dir_ / "log",
                                       std::vector<std::string>{"--allow-unverified-peers", "--config", *dir_ / "config.json"});
  }
  void TearDown() override {
    if (HasFailure() && daemon_) std::fprintf(stderr, "coredumpd log:\n%s\n", daemon_->log().c_str());
  }

  fk::Options options(std::uint64_t size) {
    fk::Options o;
    o.socket_path = socket_;
    o.core = fk::CoreSource::pattern(size, 3, 4096, 7, true);
    o.timeout = std::chrono::milliseconds(120'000);
    return o;
  }

  std::vector<DumpRecord> settled(std::size_t n) { return settled_records(store_, n, 120s); }

  std::unique_ptr<TempDir> dir_;
  std::string socket_, store_;
  std::unique_ptr<Daemon> daemon_;
  ScopedCoreLimit core_limit_{~0ULL};  // the peer is this process: its RLIMIT_CORE is policy input
};

// Room for one dump at a time: the first holds it mid-stream until every other crash has sent its
// request, so the others must wait for it (the old count limit turned them into records without a
// core). The handshake deadline is far: waiting, not the deadline, is what is tested.
TEST_F(Storm, ManySimultaneousSmallDumpsWaitTheirTurnAndAllGetTheirCore) {
  start(R"({"max_concurrent_dumps": 1, "handshake_timeout_ms": 60000})");
  constexpr int kOthers = 40;
  std::atomic<int> requests_sent{0};
  std::promise<void> first_streaming;

  auto first = options(1 << 20);
  first.hook_stream_offset = 64 * 1024;
  first.hook = [&](fk::Point p, int) {
    if (p != fk::Point::StreamOffset) return;
    first_streaming.set_value();
    wait_until([&] { return requests_sent.load() == kOthers; }, 60s);
  };
  std::thread first_thread([&] { EXPECT_TRUE(fk::task_released(fk::run(first))); });
  first_streaming.get_future().wait();

  std::vector<std::thread> others;
  std::atomic<int> dumped{0};
  for (int i = 0; i < kOthers; ++i)
    others.emplace_back([&] {
      auto o = options(256 * 1024);
      o.hook = [&](fk::Point p, int) {
        if (p == fk::Point::RequestSent) ++requests_sent;
      };
      const auto res = fk::run(o);
      if (fk::task_released(res) && res.bytes_streamed == 256 * 1024) ++dumped;
    });
  for (auto& t : others) t.join();
  first_thread.join();
  EXPECT_EQ(dumped.load(), kOthers) << "every crash streamed its whole core";

  const auto all = settled(kOthers + 1);
  ASSERT_EQ(all.size(), static_cast<std::size_t>(kOthers + 1));
  int waited = 0;
  for (const auto& r : all) {
    EXPECT_EQ(r.state, DumpState::Complete) << r.reason;
    EXPECT_GT(r.core_size, 0u);
    waited += r.extra.value("handshake_steps_us", nlohmann::json::object()).contains("budget_wait") ? 1 : 0;
  }
  EXPECT_GE(waited, kOthers - 1) << "with room for one, all but at most one of the others waited";
}

}  // namespace

// A crash whose dump cannot fit before the handshake deadline gets the overload_action: a
// metadata-only record (or a rejection) saying why, never a silent drop; the dump in flight is kept.
class StormDeadline : public Storm, public ::testing::WithParamInterface<std::pair<std::string, DumpState>> {};

TEST_P(StormDeadline, ADumpThatCannotFitGetsTheExplicitRecord) {
  const auto& [action, want] = GetParam();
  start(R"({"max_concurrent_dumps": 1, "handshake_timeout_ms": 500, "stream_idle_timeout_ms": 60000,
            "overload_action": ")" + action + R"("})");
  std::promise<void> first_streaming;
  std::promise<void> second_done;
  auto second_done_f = second_done.get_future().share();
  auto first = options(1 << 20);
  first.hook_stream_offset = 64 * 1024;
  first.hook = [&](fk::Point p, int) {
    if (p != fk::Point::StreamOffset) return;
    first_streaming.set_value();
    second_done_f.wait_for(60s);  // holds the only room until the second crash has its answer
  };
  std::thread first_thread([&] { EXPECT_TRUE(fk::task_released(fk::run(first))); });
  first_streaming.get_future().wait();

  const auto res = fk::run(options(256 * 1024));
  second_done.set_value();
  first_thread.join();
  if (want == DumpState::Rejected) EXPECT_EQ(res.outcome, fk::Outcome::Rejected) << res.error;
  else EXPECT_TRUE(fk::task_released(res));
  EXPECT_EQ(res.bytes_streamed, 0u) << "no core streamed for the crash that found no room";

  const auto all = settled(2);
  ASSERT_EQ(all.size(), 2u);
  int complete = 0, overloaded = 0;
  for (const auto& r : all) {
    if (r.state == DumpState::Complete) ++complete;
    if (r.state == want) {
      ++overloaded;
      EXPECT_NE(r.reason.find("overload: no room for this dump within the handshake deadline"), std::string::npos)
          << r.reason;
      EXPECT_NE(r.reason.find("max_concurrent_dumps 1"), std::string::npos) << r.reason;
    }
  }
  EXPECT_EQ(complete, 1) << "the dump in flight is stored";
  EXPECT_EQ(overloaded, 1);
  EXPECT_NE(daemon_->log().find("overload: no room"), std::string::npos) << "the log says so";
}

INSTANTIATE_TEST_SUITE_P(Actions, StormDeadline,
                         ::testing::Values(std::pair{std::string("metadata-only"), DumpState::MetadataOnly},
                                           std::pair{std::string("reject"), DumpState::Rejected}),
                         [](const auto& p) { return p.param.first == "reject" ? "Reject" : "MetadataOnly"; });
