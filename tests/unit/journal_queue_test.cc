// Unit tests of the journal queue (daemon/journal/journal_queue.h): one entry per final record, a
// stored core's entry after its analysis (with the stack trace), none for what gets none, a stop
// that loses nothing, a full queue and a refusing journal counted. The sink records what it is
// given; it stands for journald's socket only, whose own behaviour the nspawn check covers.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "analysis/crash_report.h"
#include "daemon/journal/journal_fields.h"
#include "daemon/journal/journal_queue.h"

namespace coredumpd::journal {
namespace {

using namespace std::chrono_literals;

class RecordingSink : public EntrySink {
 public:
  SendResult send(const std::vector<std::string>& fields, std::string& error) override {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return !held_; });  // a test may hold the worker to fill the queue
    entries_.push_back(fields);
    cv_.notify_all();
    if (result_ == SendResult::Failed) error = "Resource temporarily unavailable";
    return result_;
  }
  std::vector<std::vector<std::string>> entries() {
    std::lock_guard lock(mu_);
    return entries_;
  }
  /// Waits (bounded) for `n` entries.
  bool wait_for(std::size_t n) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, 10s, [&] { return entries_.size() >= n; });
  }
  void hold(bool h) {
    std::lock_guard lock(mu_);
    held_ = h;
    cv_.notify_all();
  }
  void answer(SendResult r) {
    std::lock_guard lock(mu_);
    result_ = r;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::vector<std::string>> entries_;
  bool held_ = false;
  SendResult result_ = SendResult::Written;
};

class JournalQueueTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("journal_queue_test." + std::to_string(::getpid()) + "." +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
    dirfd_ = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    ASSERT_GE(dirfd_, 0);
  }
  void TearDown() override {
    queue_.reset();
    ::close(dirfd_);
    std::filesystem::remove_all(dir_);
  }
  JournalQueue& start() {
    queue_ = std::make_unique<JournalQueue>(sink_, stats_, dir_.string(), dirfd_, [this] {
      std::lock_guard lock(settings_mu_);
      return settings_;
    });
    return *queue_;
  }
  DumpRecord stored(const std::string& id) {
    DumpRecord r = record(id, DumpState::Complete);
    r.compression = "zstd";
    r.path = id + ".zst";
    std::ofstream(dir_ / r.path) << "core";
    return r;
  }
  static DumpRecord record(const std::string& id, DumpState s) {
    DumpRecord r;
    r.id = id;
    r.state = s;
    r.pid = 77;
    r.uid = 1000;
    r.comm = "prog";
    return r;
  }

  std::filesystem::path dir_;
  int dirfd_ = -1;
  RecordingSink sink_;
  Stats stats_;
  std::mutex settings_mu_;
  JournalSettings settings_;
  std::unique_ptr<JournalQueue> queue_;
};

analysis::CrashReport report_with_frame() {
  analysis::CrashReport rep;
  rep.state = "ok";
  rep.signature = "0123456789abcdef0123456789abcdef";
  rep.signature_text = "SIGSEGV: f";
  analysis::Thread t;
  t.tid = 77;
  analysis::Frame f;
  f.function = "f";
  t.frames = {f};
  t.crashed = true;
  rep.threads = {t};
  rep.threads_total = 1;
  return rep;
}

TEST_F(JournalQueueTest, AFinalRecordGetsExactlyOneEntry) {
  auto& q = start();
  auto r = record("aa", DumpState::MetadataOnly);
  r.reason = "overloaded";
  q.submit(r);
  ASSERT_TRUE(sink_.wait_for(1));
  q.stop();
  const auto entries = sink_.entries();
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(field_value(entries[0], "COREDUMPD_ID"), "aa");
  EXPECT_EQ(field_value(entries[0], "MESSAGE_ID"), kCoredumpMessageId);
  EXPECT_EQ(stats_.get(Outcome::JournalWritten), 1u);
  EXPECT_EQ(stats_.get(Outcome::JournalFailed), 0u);
}

TEST_F(JournalQueueTest, AStoredCoreWaitsForItsAnalysisThenCarriesTheStackTrace) {
  auto& q = start();
  const auto r = stored("bb");
  q.await_analysis(r);
  std::this_thread::sleep_for(100ms);  // nothing may be sent before the analysis ends
  EXPECT_TRUE(sink_.entries().empty());
  EXPECT_EQ(q.awaiting(), 1u);
  const auto rep = report_with_frame();
  q.analysis_done("bb", &rep);
  ASSERT_TRUE(sink_.wait_for(1));
  q.analysis_done("bb", &rep);  // a second completion (an earlier run's dump) sends nothing more
  q.stop();
  const auto entries = sink_.entries();
  ASSERT_EQ(entries.size(), 1u);
  const std::string message = field_value(entries[0], "MESSAGE");
  EXPECT_EQ(message.substr(0, message.find('\n')), "Process 77 (prog) of user 1000 dumped core.");
  EXPECT_NE(message.find("Stack trace of thread 77:"), std::string::npos) << message;
  EXPECT_EQ(field_value(entries[0], "COREDUMPD_SIGNATURE"), rep.signature);
  EXPECT_EQ(field_value(entries[0], "COREDUMP_FILENAME"), (dir_ / "bb.zst").string());
}

TEST_F(JournalQueueTest, AnAnalysisThatFoundNothingStillSendsTheEntry) {
  auto& q = start();
  q.await_analysis(stored("cc"));
  q.analysis_done("cc", nullptr);  // analysis disabled, queue full, or the core gone
  ASSERT_TRUE(sink_.wait_for(1));
  EXPECT_EQ(field_value(sink_.entries()[0], "MESSAGE"), "Process 77 (prog) of user 1000 dumped core.");
}

TEST_F(JournalQueueTest, ACoreGoneBeforeTheEntryIsNotNamed) {
  auto& q = start();
  const auto r = stored("dd");
  std::filesystem::remove(dir_ / r.path);  // vacuumed meanwhile
  q.submit(r);
  ASSERT_TRUE(sink_.wait_for(1));
  EXPECT_EQ(field_value(sink_.entries()[0], "COREDUMP_FILENAME"), "");
}

TEST_F(JournalQueueTest, WithoutStackTraceTheEntryDoesNotWait) {
  settings_.stack_trace = false;
  auto& q = start();
  q.await_analysis(stored("ee"));
  ASSERT_TRUE(sink_.wait_for(1));
  EXPECT_EQ(q.awaiting(), 0u);
}

TEST_F(JournalQueueTest, ForwardedAndDisabledGetNone) {
  auto& q = start();
  q.submit(record("ff", DumpState::Forwarded));
  {
    std::lock_guard lock(settings_mu_);
    settings_.enabled = false;
  }
  q.submit(record("f1", DumpState::Failed));
  q.await_analysis(stored("f2"));
  q.stop();
  EXPECT_TRUE(sink_.entries().empty());
  EXPECT_EQ(stats_.get(Outcome::JournalWritten), 0u);
}

TEST_F(JournalQueueTest, AStopSendsWhatWaitsAndWhatIsQueued) {
  auto& q = start();
  q.await_analysis(stored("g1"));
  q.submit(record("g2", DumpState::Rejected));
  q.stop();
  EXPECT_EQ(sink_.entries().size(), 2u);
  q.submit(record("g3", DumpState::Failed));  // after the stop: nothing, and no crash
  EXPECT_EQ(sink_.entries().size(), 2u);
}

TEST_F(JournalQueueTest, AFullQueueAndARefusingJournalAreCounted) {
  settings_.queue = 2;
  auto& q = start();
  sink_.hold(true);
  q.submit(record("h0", DumpState::Failed));  // taken by the worker, held in send()
  for (int i = 0; i < 100 && q.queued() != 0; ++i) std::this_thread::sleep_for(10ms);
  q.submit(record("h1", DumpState::Failed));
  q.submit(record("h2", DumpState::Failed));
  q.submit(record("h3", DumpState::Failed));  // past the queue's 2
  EXPECT_EQ(stats_.get(Outcome::JournalFailed), 1u);
  sink_.answer(SendResult::Failed);
  sink_.hold(false);
  q.stop();
  EXPECT_EQ(sink_.entries().size(), 3u);
  EXPECT_EQ(stats_.get(Outcome::JournalFailed), 4u);  // the dropped one and three refused
}

TEST_F(JournalQueueTest, NoJournaldIsNeitherWrittenNorFailed) {
  sink_.answer(SendResult::NoJournal);
  auto& q = start();
  q.submit(record("i1", DumpState::Failed));
  q.submit(record("i2", DumpState::Failed));
  q.stop();
  EXPECT_EQ(sink_.entries().size(), 2u);
  EXPECT_EQ(stats_.get(Outcome::JournalWritten), 0u);
  EXPECT_EQ(stats_.get(Outcome::JournalFailed), 0u);
}

}  // namespace
}  // namespace coredumpd::journal
