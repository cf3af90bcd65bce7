// Integration tests: every thread's name captured before the ack (extra.thread_names), driven by the
// fake kernel. The peer is this test process, so its threads, named with pthread_setname_np, are
// the crashing task's; it is in the daemon's pid namespace, so TIDs are gettid()'s.
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <condition_variable>
#include <future>
#include <mutex>

#include "store/dump_record.h"
#include "tests/integration/fake_kernel_daemon_fixture.h"

using namespace coredumpd;
using namespace coredumpd::test;

namespace {

// Threads that name themselves, report their TID and wait until released (or destroyed).
class NamedThreads {
 public:
  NamedThreads() = default;
  NamedThreads(const NamedThreads&) = delete;
  NamedThreads& operator=(const NamedThreads&) = delete;
  ~NamedThreads() {
    {
      std::lock_guard lock(mu_);
      for (auto& s : slots_) s->released = true;
    }
    cv_.notify_all();
    for (auto& s : slots_)
      if (!s->joined) ::pthread_join(s->thread, nullptr);
  }

  // Starts a thread named `name` (at most 15 bytes, any but NUL) with `stack` bytes of stack
  // (0: the default) and returns its TID once it has named itself. Its index is the order of start().
  pid_t start(const std::string& name, std::size_t stack = 0) {
    slots_.push_back(std::make_unique<Slot>());
    Slot* s = slots_.back().get();
    s->owner = this;
    s->name = name;
    auto tid = s->tid.get_future();
    pthread_attr_t attr;
    ::pthread_attr_init(&attr);
    if (stack != 0) ::pthread_attr_setstacksize(&attr, stack);
    const int rc = ::pthread_create(&s->thread, &attr, &NamedThreads::run, s);
    ::pthread_attr_destroy(&attr);
    if (rc != 0) {
      slots_.pop_back();
      throw std::runtime_error("pthread_create: " + std::string(std::strerror(rc)));
    }
    return tid.get();
  }

  // Lets thread `index` return, and joins it.
  void release(std::size_t index) {
    Slot& s = *slots_.at(index);
    {
      std::lock_guard lock(mu_);
      s.released = true;
    }
    cv_.notify_all();
    ::pthread_join(s.thread, nullptr);
    s.joined = true;
  }

 private:
  struct Slot {
    NamedThreads* owner = nullptr;
    std::string name;
    std::promise<pid_t> tid;
    pthread_t thread{};
    bool released = false;  // under owner->mu_
    bool joined = false;
  };

  static void* run(void* arg) {
    auto* s = static_cast<Slot*>(arg);
    ::pthread_setname_np(::pthread_self(), s->name.c_str());
    s->tid.set_value(static_cast<pid_t>(::syscall(SYS_gettid)));
    std::unique_lock lock(s->owner->mu_);
    s->owner->cv_.wait(lock, [s] { return s->released; });
    return nullptr;
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::unique_ptr<Slot>> slots_;
};

// The name the record holds for `tid`, as bytes; std::nullopt if it has none.
std::optional<std::string> recorded_name(const DumpRecord& r, pid_t tid) {
  const auto names = r.extra.value(extras::kThreadNames, nlohmann::json::object());
  const auto key = std::to_string(tid);
  if (!names.is_object() || !names.contains(key)) return std::nullopt;
  return bytes_from_json(names[key]);
}

// extra.collect_errors of `r` (an empty object if none).
nlohmann::json collect_errors(const DumpRecord& r) { return r.extra.value(extras::kCollectErrors, nlohmann::json::object()); }

// Named threads land in the record under their TIDs, with the main thread; a name that is not
// UTF-8 is kept byte for byte (bytes_to_json: an array of byte values).
TEST_F(FakeKernelDaemon, ThreadNamesAndTidsLandInTheRecord) {
  NamedThreads threads;
  const std::string binary_name("tn-\xff\xfe\x80-bin", 10);
  const pid_t a = threads.start("tn-alpha");
  const pid_t b = threads.start("tn-beta");
  const pid_t c = threads.start(binary_name);
  const auto res = fk::run(options());
  ASSERT_TRUE(fk::task_released(res));
  const auto r = only_record();
  ASSERT_TRUE(r);
  SCOPED_TRACE(r->extra.dump());
  EXPECT_EQ(recorded_name(*r, a), "tn-alpha");
  EXPECT_EQ(recorded_name(*r, b), "tn-beta");
  EXPECT_EQ(recorded_name(*r, c), binary_name);
  EXPECT_TRUE(r->extra.at(extras::kThreadNames).at(std::to_string(c)).is_array()) << "not UTF-8: kept as bytes";
  EXPECT_EQ(recorded_name(*r, ::getpid()), r->comm) << "the main thread, under the pid";
  EXPECT_FALSE(r->extra.contains(extras::kThreadNamesIncomplete));
  EXPECT_FALSE(collect_errors(*r).contains("thread_names"));
  EXPECT_TRUE(r->extra.at(extras::kCollectTimingsUs).contains("thread_names"));
}

// The policy switch: capture_thread_names false stores none (the collector still ran).
TEST_F(FakeKernelDaemon, CaptureThreadNamesOffStoresNone) {
  start(R"({"defaults": {"capture_thread_names": false}})");
  NamedThreads threads;
  threads.start("tn-off");
  ASSERT_TRUE(fk::task_released(fk::run(options())));
  const auto r = only_record();
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->extra.contains(extras::kThreadNames)) << r->extra.dump();
}

// A thread that exits after the threads collector listed it and before its name is read (the test
// hook stalls the thread_names collector meanwhile) is skipped: no error, not counted as omitted.
TEST_F(FakeKernelDaemon, AThreadExitingMidReadIsSkipped) {
  start(R"({"handshake_timeout_ms": 10000, "collector_budget_ms": 5000,
            "testing": {"collector_delay_ms": 1500, "collector_delay_in": "thread_names"}})",
        {"--enable-test-hooks"});
  NamedThreads threads;
  const pid_t doomed = threads.start("tn-doomed");
  const pid_t stays = threads.start("tn-stays");
  auto crash = std::async(std::launch::async, [&] { return fk::run(options()); });
  // The hook logs as it starts sleeping, after the threads collector has listed every thread.
  ASSERT_TRUE(wait_until([&] { return daemon_->log().find("test hook: a collector sleeps") != std::string::npos; }, 15s))
      << daemon_->log();
  threads.release(0);
  const std::string task = "/proc/self/task/" + std::to_string(doomed);
  ASSERT_TRUE(wait_until([&] { return ::access(task.c_str(), F_OK) != 0; }, 5s)) << "the thread did not go";
  ASSERT_TRUE(fk::task_released(crash.get()));
  const auto r = only_record();
  ASSERT_TRUE(r);
  SCOPED_TRACE(r->extra.dump());
  EXPECT_FALSE(recorded_name(*r, doomed)) << "a thread gone has no name";
  EXPECT_EQ(recorded_name(*r, stays), "tn-stays");
  EXPECT_FALSE(collect_errors(*r).contains("thread_names"));
  EXPECT_FALSE(r->extra.contains(extras::kThreadNamesIncomplete));
}

// More threads than the cap (4096): exactly the cap is read, the rest counted as omitted.
TEST_F(FakeKernelDaemon, ThreadNamesBeyondTheCapAreCountedOmitted) {
  // Budgets far above the read's cost (bench/README.md "Thread names"), so the cap, not the
  // clock, stops it even on a loaded machine.
  start(R"({"handshake_timeout_ms": 30000, "collector_budget_ms": 20000})");
  constexpr int kExtra = 150;
  constexpr int kThreads = 4096 + kExtra;
  NamedThreads threads;
  for (int i = 0; i < kThreads; ++i) threads.start("tn-" + std::to_string(i), 64 * 1024);
  auto o = options();
  o.timeout = std::chrono::milliseconds(60'000);
  ASSERT_TRUE(fk::task_released(fk::run(o)));
  const auto r = only_record();
  ASSERT_TRUE(r);
  const auto inc = r->extra.value(extras::kThreadNamesIncomplete, nlohmann::json());
  ASSERT_TRUE(inc.is_object()) << collect_errors(*r).dump();
  EXPECT_EQ(inc["read"], 4096);
  EXPECT_EQ(r->extra.at(extras::kThreadNames).size(), 4096u);
  // Ours, the main thread and whatever else this process runs (gtest, the fake kernel): at least
  // kExtra + 1 not read, and not many more.
  EXPECT_GE(inc["omitted"].get<int>(), kExtra + 1) << inc.dump();
  EXPECT_LE(inc["omitted"].get<int>(), kExtra + 16) << inc.dump();
  EXPECT_EQ(inc["reason"], "more than 4096 threads") << inc.dump();
}

}  // namespace
