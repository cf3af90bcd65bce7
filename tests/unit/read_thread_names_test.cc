// Unit tests of read_thread_names() (daemon/proc/thread_names.h) on this process's own threads:
// the cap, the time budget, a thread gone, a truncated list.
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "daemon/proc/thread_names.h"
#include "store/dump_record.h"
#include "util/unique_fd.h"

using namespace coredumpd;

namespace {

class ThreadNamesOfSelf : public ::testing::Test {
 protected:
  void SetUp() override {
    pidfd_ = UniqueFd(static_cast<int>(::syscall(SYS_pidfd_open, ::getpid(), 0)));
    ASSERT_TRUE(pidfd_);
    std::string error;
    proc_ = ProcDir::open(pidfd_.get(), ::getpid(), error);
    ASSERT_TRUE(proc_) << error;
    // Two named threads beside the main one, the TIDs the same in every pid namespace we map.
    for (const char* name : {"tnu-one", "tnu-two"}) {
      std::atomic<pid_t> tid{0};
      workers_.emplace_back([this, name, &tid] {
        ::pthread_setname_np(::pthread_self(), name);
        tid = static_cast<pid_t>(::syscall(SYS_gettid));
        while (!stop_) std::this_thread::sleep_for(std::chrono::milliseconds(5));
      });
      while (tid == 0) std::this_thread::yield();
      tids_.push_back({tid, tid + 100000});  // ns TIDs distinct from host ones: the keys are the ns ones
    }
  }
  void TearDown() override {
    stop_ = true;
    for (auto& t : workers_) t.join();
  }
  static auto later() { return std::chrono::steady_clock::now() + std::chrono::seconds(10); }

  UniqueFd pidfd_;
  std::optional<ProcDir> proc_;
  std::atomic<bool> stop_{false};
  std::vector<std::thread> workers_;
  std::vector<ThreadIds> tids_;
};

TEST_F(ThreadNamesOfSelf, NamesUnderTheNamespaceTids) {
  const auto r = read_thread_names(*proc_, tids_, 10, later());
  EXPECT_EQ(r.names.size(), 2u) << r.names.dump();
  EXPECT_EQ(bytes_from_json(r.names.value(std::to_string(tids_[0].ns_tid), nlohmann::json())), "tnu-one");
  EXPECT_EQ(bytes_from_json(r.names.value(std::to_string(tids_[1].ns_tid), nlohmann::json())), "tnu-two");
  EXPECT_TRUE(r.incomplete.is_null()) << r.incomplete.dump();
  EXPECT_TRUE(r.error.empty()) << r.error;
}

TEST_F(ThreadNamesOfSelf, AThreadGoneIsSkippedNotCounted) {
  std::atomic<pid_t> gone{0};
  std::thread([&] { gone = static_cast<pid_t>(::syscall(SYS_gettid)); }).join();
  const std::string task = "/proc/self/task/" + std::to_string(gone.load());
  for (int i = 0; i < 1000 && ::access(task.c_str(), F_OK) == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  auto list = tids_;
  list.insert(list.begin() + 1, ThreadIds{gone, gone});
  const auto r = read_thread_names(*proc_, list, 10, later());
  EXPECT_EQ(r.names.size(), 2u) << r.names.dump();
  EXPECT_TRUE(r.incomplete.is_null()) << r.incomplete.dump();
  EXPECT_TRUE(r.error.empty()) << r.error;
}

TEST_F(ThreadNamesOfSelf, TheCapCountsTheRestOmitted) {
  const auto r = read_thread_names(*proc_, tids_, 1, later());
  EXPECT_EQ(r.names.size(), 1u);
  EXPECT_EQ(r.incomplete, (nlohmann::json{{"read", 1}, {"omitted", 1}, {"reason", "more than 1 threads"}}));
}

TEST_F(ThreadNamesOfSelf, ThePassedBudgetReadsNothing) {
  const auto r = read_thread_names(*proc_, tids_, 10, std::chrono::steady_clock::now());
  EXPECT_TRUE(r.names.empty());
  EXPECT_EQ(r.incomplete.value("omitted", 0), 2);
  EXPECT_EQ(r.incomplete.value("reason", ""), "time budget: stopped after 0 names");
}

TEST_F(ThreadNamesOfSelf, ATruncatedListCountsTheUnlisted) {
  const auto r = read_thread_names(*proc_, tids_, 10, later(), 9000);
  EXPECT_EQ(r.names.size(), 2u);
  EXPECT_EQ(r.incomplete, (nlohmann::json{{"read", 2}, {"omitted", 8998}, {"reason", "more than 2 threads listed"}}));
}

TEST(StatusThreads, ParsesTheThreadsLine) {
  EXPECT_EQ(parse_status_threads("Name:\tx\nThreads:\t2000\nX: 1\n"), 2000u);
  EXPECT_FALSE(parse_status_threads("Name:\tx\n").has_value());
  EXPECT_FALSE(parse_status_threads("Name:\tx\nThreads:\tmany\n").has_value());
}

}  // namespace
