// A store that is read-only or full: the daemon starts and serves, refuses cores with the reason,
// keeps every crash's record (in the pending journal when the index cannot take it) and moves
// those records into the index once the store is usable again; keep_free holds while a core is
// written. Driven by the fake kernel. Needs root (mounts); skips without it.
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>

#include <nlohmann/json.hpp>

#include "store/index.h"
#include "store/pending_journal.h"
#include "store/record_extras.h"
#include "tests/fake_kernel/expect_released.h"
#include "tests/fake_kernel/fake_kernel.h"
#include "tests/support/test_support.h"

using namespace coredumpd;
using namespace coredumpd::test;
namespace fk = coredumpd::fake_kernel;

namespace {

constexpr std::uint64_t kMebi = 1 << 20;

class UnusableStore : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root: mounts a tmpfs and remounts it read-only";
    dir_ = std::make_unique<TempDir>();
    fs_ = *dir_ / "fs";
    std::filesystem::create_directories(fs_);
    ASSERT_EQ(::mount("tmpfs", fs_.c_str(), "tmpfs", 0, "size=64m,mode=0750"), 0) << std::strerror(errno);
    mounted_ = true;
    socket_ = *dir_ / "s";
    store_ = fs_ + "/store";
    pending_ = *dir_ / "pending";
  }
  void TearDown() override {
    if (HasFailure() && daemon_) std::fprintf(stderr, "coredumpd log:\n%s\n", daemon_->log().c_str());
    daemon_.reset();  // before the tmpfs goes
    if (mounted_) ::umount2(fs_.c_str(), MNT_DETACH);
  }

  void start(const std::string& extra_config = "") {
    // No fallback (on by default): these tests are about the records of refused cores
    // (tests/e2e/early_boot_store_e2e_test.cc has the fallback).
    std::ofstream(*dir_ / "config.json") << "{\"pending_dir\": \"" << pending_ << "\", \"fallback_max_bytes\": 0"
                                         << extra_config << "}";
    daemon_ = std::make_unique<Daemon>(COREDUMPD_BIN, socket_, store_, *dir_ / "log",
                                       std::vector<std::string>{"--allow-unverified-peers", "--config", *dir_ / "config.json"});
  }
  void remount(bool read_only) {
    ASSERT_EQ(::mount(nullptr, fs_.c_str(), nullptr, MS_REMOUNT | (read_only ? MS_RDONLY : 0), "size=64m"), 0)
        << std::strerror(errno);
  }
  fk::Result crash(std::uint64_t size = 256 * 1024) {
    fk::Options o;
    o.socket_path = socket_;
    o.core = fk::CoreSource::pattern(size, 3, 4096, 7, true);
    o.timeout = std::chrono::milliseconds(15'000);
    return fk::run(o);
  }
  std::vector<DumpRecord> records() {
    try {
      return Index(store_, false).list();
    } catch (const IndexError&) {
      return {};
    }
  }
  // Takes all free space of the tmpfs but `leave` bytes.
  void fill(std::uint64_t leave) {
    struct statvfs sv{};
    ASSERT_EQ(::statvfs(fs_.c_str(), &sv), 0);
    const std::uint64_t free_bytes = static_cast<std::uint64_t>(sv.f_bavail) * sv.f_frsize;
    ASSERT_GT(free_bytes, leave);
    const int fd = ::open((fs_ + "/filler").c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
    ASSERT_GE(fd, 0);
    const int rc = ::fallocate(fd, 0, 0, static_cast<off_t>(free_bytes - leave));
    ::close(fd);
    ASSERT_EQ(rc, 0) << std::strerror(errno);
  }

  void start_on_full_store();
  // After one record and the journaled `id`, the next crash is stored and the record of `id` moved
  // from the journal into the index, marked, the journal gone.
  void expect_moved_by_next_crash(const std::string& id) {
    EXPECT_TRUE(fk::task_released(crash()));
    std::vector<DumpRecord> all;
    ASSERT_TRUE(wait_until([&] {
      all = records();
      return all.size() == 3 && all[2].state == DumpState::Complete;
    }, 15s)) << all.size() << "\n" << daemon_->log();
    const auto moved = Index(store_, false).get(id);
    ASSERT_TRUE(moved);
    EXPECT_EQ(moved->state, DumpState::Rejected);
    EXPECT_TRUE(moved->extra.contains(extras::kJournaled)) << moved->extra.dump();
    EXPECT_TRUE(read_pending_journal(pending_).entries.empty());
    EXPECT_FALSE(std::filesystem::exists(pending_journal_path(pending_)));
  }

  std::unique_ptr<TempDir> dir_;
  std::string fs_, socket_, store_, pending_;
  PendingContents pending_records_;
  ScopedCoreLimit core_limit_{~0ULL};  // the peer is this process: its RLIMIT_CORE is policy input
  bool mounted_ = false;
  std::unique_ptr<Daemon> daemon_;
};

TEST_F(UnusableStore, ReadOnlyStoreServesKeepsRecordsAndMovesThemBack) {
  start();
  ASSERT_TRUE(fk::task_released(crash()));
  ASSERT_TRUE(wait_until([&] { auto r = records(); return r.size() == 1 && r[0].state == DumpState::Complete; }, 15s));
  daemon_->stop();
  daemon_.reset();

  remount(true);
  start();  // on a read-only store: starts, and says so
  EXPECT_TRUE(wait_until([&] { return daemon_->log().find("read-only") != std::string::npos; }, 5s)) << daemon_->log();
  EXPECT_EQ(crash().outcome, fk::Outcome::Rejected);
  PendingContents pending;
  ASSERT_TRUE(wait_until([&] { return (pending = read_pending_journal(pending_)).entries.size() == 1; }, 15s));
  const DumpRecord& kept = pending.entries[0].record;
  EXPECT_EQ(kept.state, DumpState::Rejected);
  EXPECT_NE(kept.reason.find("read-only"), std::string::npos) << kept.reason;
  EXPECT_NE(pending.entries[0].why.find("readonly"), std::string::npos) << pending.entries[0].why;
  // The log names the crash's executable, not only its pid.
  EXPECT_NE(daemon_->log().find("rejecting the core: store filesystem is read-only"), std::string::npos) << daemon_->log();

  // dumpctl reads the read-only store (its index has no -shm file and cannot make one).
  const auto [st, out] = run_capture({DUMPCTL_BIN, "--store", store_, "list"});
  EXPECT_EQ(st.exit_code(), 0) << out;
  EXPECT_EQ(records().size(), 1u);
  // ... and shows the pending record beside the indexed one.
  const auto [jst, json_text] = run_capture({DUMPCTL_BIN, "--store", store_, "--pending-dir", pending_, "list", "--json=pretty"});
  ASSERT_EQ(jst.exit_code(), 0) << json_text;
  const auto listed = nlohmann::json::parse(json_text);
  ASSERT_EQ(listed.size(), 2u) << json_text;
  EXPECT_FALSE(listed[0].contains("pending"));
  EXPECT_EQ(listed[1]["id"], kept.id);
  EXPECT_TRUE(listed[1].contains("pending")) << json_text;
  const auto [tst, table] = run_capture({DUMPCTL_BIN, "--store", store_, "--pending-dir", pending_, "list"});
  EXPECT_NE(table.find(" pending "), std::string::npos) << table;

  remount(false);  // usable again: the next crash's record goes in, and the journal's before it
  expect_moved_by_next_crash(kept.id);
}

// A store filled to the last byte while the daemon is down (so the index's WAL, removed at the
// clean stop, cannot be made again): the daemon starts, says the store is full, refuses the core
// and keeps the record in the journal.
void UnusableStore::start_on_full_store() {
  start();
  ASSERT_TRUE(fk::task_released(crash()));
  ASSERT_TRUE(wait_until([&] { auto r = records(); return r.size() == 1 && r[0].state == DumpState::Complete; }, 15s));
  daemon_->stop();
  daemon_.reset();
  fill(0);
  start();
  EXPECT_TRUE(wait_until([&] { return daemon_->log().find("store filesystem is full") != std::string::npos; }, 5s))
      << daemon_->log();
  EXPECT_EQ(crash().outcome, fk::Outcome::Rejected);
  ASSERT_TRUE(wait_until([&] { return (pending_records_ = read_pending_journal(pending_)).entries.size() == 1; }, 15s))
      << daemon_->log();
  EXPECT_NE(pending_records_.entries[0].record.reason.find("store filesystem is full"), std::string::npos)
      << pending_records_.entries[0].record.reason;
}

TEST_F(UnusableStore, FullStoreRefusesTheCoreKeepsTheRecordAndMovesItWhenSpaceReturns) {
  ASSERT_NO_FATAL_FAILURE(start_on_full_store());
  std::filesystem::remove(fs_ + "/filler");
  expect_moved_by_next_crash(pending_records_.entries[0].record.id);
}

TEST_F(UnusableStore, DaemonRestartedWithPendingRecordsMovesThemAtStart) {
  ASSERT_NO_FATAL_FAILURE(start_on_full_store());
  daemon_->stop();
  daemon_.reset();
  std::filesystem::remove(fs_ + "/filler");
  start();
  const auto all = records();
  ASSERT_EQ(all.size(), 2u);  // moved before the daemon listens
  EXPECT_TRUE(all[1].extra.contains(extras::kJournaled)) << all[1].extra.dump();
  EXPECT_TRUE(read_pending_journal(pending_).entries.empty());
}

// keep_free holds during the write: a core larger than the free space above keep_free is cut
// where the free space would fall below it, recorded truncated with the reason, and the prefix kept.
TEST_F(UnusableStore, KeepFreeHoldsWhileACoreIsWritten) {
  start(", \"retention\": {\"keep_free\": \"24M\"}");
  std::vector<std::byte> core(48 * kMebi);
  std::mt19937_64 gen(7);
  for (std::size_t i = 0; i < core.size(); i += 8) {
    const auto w = gen();
    std::memcpy(core.data() + i, &w, 8);
  }
  fk::Options o;
  o.socket_path = socket_;
  o.core = fk::CoreSource::from_buffer(core);
  o.timeout = std::chrono::milliseconds(60'000);
  ASSERT_TRUE(fk::task_released(fk::run(o)));
  std::vector<DumpRecord> all;
  ASSERT_TRUE(wait_until([&] {
    all = records();
    return all.size() == 1 && all[0].state != DumpState::InProgress;
  }, 30s));
  const DumpRecord& r = all[0];
  ASSERT_EQ(r.state, DumpState::Truncated) << r.reason;
  EXPECT_EQ(r.reason.rfind("keep_free reached: ", 0), 0u) << r.reason;
  EXPECT_EQ(r.core_size, core.size());
  const auto kept = r.extra.value(extras::kStoredCoreBytes, std::uint64_t{0});
  EXPECT_GT(kept, 0u);
  EXPECT_LT(kept, core.size());
  EXPECT_TRUE(std::filesystem::exists(store_ + "/" + r.path)) << "a truncated core keeps what came";
  struct statvfs sv{};
  ASSERT_EQ(::statvfs(fs_.c_str(), &sv), 0);
  EXPECT_GE(static_cast<std::uint64_t>(sv.f_bavail) * sv.f_frsize, 24 * kMebi);
}

}  // namespace
