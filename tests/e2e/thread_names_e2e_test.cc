// Real-kernel tests: every thread's name is captured before the ack (extra.thread_names), keyed by
// the TIDs of the core's NT_PRSTATUS notes (the record's crashing_tid_ns), in our pid namespace and
// in a fresh one. The crash: tests/programs/crash_threads.cc (sleepers "sleeper-<i>", the faulting
// thread "faulter").
#include <gtest/gtest.h>

#include <set>

#include "store/dump_record.h"
#include "tests/e2e/real_kernel_fixture.h"

using namespace coredumpd;
using namespace coredumpd::test;

namespace {

constexpr int kSleepers = 5;

// extra.thread_names of `rec` as tid -> bytes (empty if absent).
std::map<std::int64_t, std::string> thread_names(const DumpRecord& rec) {
  std::map<std::int64_t, std::string> out;
  const auto names = rec.extra.value(extras::kThreadNames, nlohmann::json::object());
  for (const auto& [tid, name] : names.items()) out[std::stoll(tid)] = bytes_from_json(name).value_or("<not bytes>");
  return out;
}

// Every thread (main, the sleepers, the faulter) has its name, the faulter's under crashing_tid_ns,
// and as many as the core has NT_PRSTATUS notes (extra.threads).
void expect_every_thread_named(const DumpRecord& rec) {
  SCOPED_TRACE(rec.extra.dump());
  const auto names = thread_names(rec);
  EXPECT_FALSE(rec.extra.contains(extras::kThreadNamesIncomplete));
  ASSERT_EQ(names.size(), static_cast<std::size_t>(kSleepers + 2));
  EXPECT_EQ(rec.extra.value(extras::kThreads, 0), kSleepers + 2) << "NT_PRSTATUS notes";
  ASSERT_TRUE(rec.crashing_tid_ns);
  ASSERT_TRUE(names.contains(*rec.crashing_tid_ns)) << "no name under the crashing TID " << *rec.crashing_tid_ns;
  EXPECT_EQ(names.at(*rec.crashing_tid_ns), "faulter");
  std::multiset<std::string> got;
  for (const auto& [tid, name] : names) got.insert(name);
  std::multiset<std::string> want{"crash_threads", "faulter"};
  for (int i = 0; i < kSleepers; ++i) want.insert("sleeper-" + std::to_string(i));
  EXPECT_EQ(got, want);
}

// In our pid namespace: the TIDs are the host's, the main thread's is the pid.
TEST_F(RealKernel, ThreadNamesOfEveryThreadIncludingTheFaultingOne) {
  SKIP_WITHOUT_REAL_KERNEL("real-kernel test");
  const pid_t pid = spawn({CRASH_THREADS_BIN, std::to_string(kSleepers)});
  const auto st = wait_for(pid, 60s);
  ASSERT_TRUE(st.exited) << "crash_threads hung (SIGKILLed)";
  EXPECT_TRUE(st.core_dumped());
  const auto rec = stored_dump_of(pid);
  ASSERT_TRUE(rec) << "no dump indexed for pid " << pid;
  EXPECT_EQ(rec->state, DumpState::Complete) << rec->reason;
  expect_released_promptly(*rec);
  expect_every_thread_named(*rec);
  const auto names = thread_names(*rec);
  ASSERT_TRUE(names.contains(pid));
  EXPECT_EQ(names.at(pid), "crash_threads");
  EXPECT_EQ(rec->tid, rec->crashing_tid_ns) << "same pid namespace: host TID = namespace TID";
}

// In a fresh pid namespace (unshare; the shell is its init, crash_threads its pid 2): the keys are
// the namespace's TIDs, as the core's NT_PRSTATUS has them, not the host's.
TEST_F(RealKernel, ThreadNamesInAPidNamespaceUseItsTids) {
  SKIP_WITHOUT_REAL_KERNEL("real-kernel test");
  const pid_t pid = spawn({"/usr/bin/unshare", "--pid", "--fork", "--kill-child", "--", "/bin/sh", "-c",
                           std::string(CRASH_THREADS_BIN) + " " + std::to_string(kSleepers) + "; exit 0"});
  const auto st = wait_for(pid, 60s);
  ASSERT_TRUE(st.exited) << "unshare hung (SIGKILLed)";
  ASSERT_EQ(st.exit_code(), 0) << "unshare --pid failed (needs root)";
  std::optional<DumpRecord> rec;
  ASSERT_TRUE(wait_until([&] {
    try {
      for (auto& r : Index(store_, false).list())
        if (r.comm == "crash_threads" && r.state != DumpState::InProgress) rec = r;
    } catch (const IndexError&) {
    }
    return rec.has_value();
  }, 30s)) << "no dump of crash_threads indexed";
  EXPECT_EQ(rec->state, DumpState::Complete) << rec->reason;
  expect_released_promptly(*rec);
  expect_every_thread_named(*rec);
  const auto names = thread_names(*rec);
  ASSERT_TRUE(names.contains(2)) << "pid 2 in its namespace: " << rec->extra.dump();
  EXPECT_EQ(names.at(2), "crash_threads");
  EXPECT_FALSE(names.contains(rec->pid)) << "a host TID as key";
  ASSERT_TRUE(rec->tid && rec->crashing_tid_ns);
  EXPECT_NE(*rec->tid, *rec->crashing_tid_ns) << "another pid namespace: the host TID differs";
}

}  // namespace
