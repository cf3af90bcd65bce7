// Real-kernel crash storm (issue 20 item 3): many tiny processes crash at once; each waits its turn
// for room in the budget of dumps in flight (daemon/dump/dump_budget.h) and is stored with its core.
// No timing threshold: the handshake deadline is set far, and every wait is bounded.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "tests/e2e/real_kernel_fixture.h"
#include "tests/support/settled_records.h"

using namespace coredumpd;
using namespace coredumpd::test;

// 150 tiny crashers started together. Room for 4 dumps at a time (by memory: 24 MiB at 6 MiB each),
// so most must wait; with a handshake deadline of 60 s none should reach it, and every crash must
// end Complete with its core (the count limit shed most of such a burst before).
TEST_F(RealKernel, CrashStormOfTinyProcessesAllStoredWithTheirCore) {
  start_daemon(R"({"dump_memory_budget": "24M", "handshake_timeout_ms": 60000})");
  if (IsSkipped()) return;
  constexpr int kCrashers = 150;
  std::vector<pid_t> pids;
  for (int i = 0; i < kCrashers; ++i) pids.push_back(spawn({CRASHER_BIN, "--mode", "segv"}));
  int dumped = 0;
  for (pid_t p : pids) dumped += wait_for(p, 300s).core_dumped() ? 1 : 0;
  EXPECT_EQ(dumped, kCrashers) << "the kernel reports WCOREDUMP for every crash";

  const auto all = settled_records(store_, kCrashers, 300s);
  int with_core = 0, waited = 0;
  for (pid_t p : pids) {
    const auto it = std::find_if(all.begin(), all.end(), [&](const DumpRecord& r) { return r.pid == p; });
    if (it == all.end()) {
      ADD_FAILURE() << "no record for pid " << p;
      continue;
    }
    EXPECT_EQ(it->state, DumpState::Complete) << p << ": " << it->reason;
    expect_released_promptly(*it);
    if (it->state == DumpState::Complete && it->core_size > 0) ++with_core;
    waited += it->extra.value("handshake_steps_us", nlohmann::json::object()).contains("budget_wait") ? 1 : 0;
  }
  EXPECT_EQ(with_core, kCrashers);
  std::printf("storm: %d crashes, %d stored with their core, %d waited for room\n", kCrashers, with_core, waited);
  // One core checked end to end: it is the ELF core of its process.
  const auto& first = *std::find_if(all.begin(), all.end(), [&](const DumpRecord& r) { return r.pid == pids[0]; });
  dumped_core_of(first, pids[0], SIGSEGV);
}
