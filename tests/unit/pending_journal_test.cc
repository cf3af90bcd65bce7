// The pending journal (store/pending_journal.h): records the index could not take, appended as
// JSON lines, bounded in size, read back losslessly, and moved into an index with a mark.
#include "store/pending_journal.h"

#include <gtest/gtest.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "store/index.h"
#include "store/record_extras.h"

namespace coredumpd {
namespace {

namespace fs = std::filesystem;
using namespace std::string_literals;

class PendingJournalTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "pending_journal_test.XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    root_ = tmpl;
    store_ = root_ + "/store";
    journal_dir_ = root_ + "/run/pending";  // created by the first append
    fs::create_directories(store_);
  }
  void TearDown() override { fs::remove_all(root_); }

  std::string root_, store_, journal_dir_;
};

DumpRecord make_record(int n, DumpState state = DumpState::Rejected) {
  DumpRecord r;
  char id[33];
  std::snprintf(id, sizeof id, "%032x", n);
  r.id = id;
  r.state = state;
  r.reason = "store filesystem is read-only";
  r.timestamp_us = 1'700'000'000'000'000 + n;
  r.pid = 1000 + n;
  r.uid = 1000;
  r.comm = "crash\xff";  // not UTF-8: must come back byte for byte
  r.exe = "/usr/bin/crash me";
  r.argv = {"crash", "", "a\nb"};
  r.signal = 11;
  r.rule = "rule-a";
  r.container_key = "docker:abc";
  r.extra["proc"] = {{"status", "x"}};
  return r;
}

TEST_F(PendingJournalTest, AppendedRecordsReadBackLosslessly) {
  PendingJournal journal(journal_dir_);
  EXPECT_FALSE(journal.has_entries());
  const DumpRecord r = make_record(1);
  ASSERT_EQ(journal.append(r, "index: attempt to write a readonly database"), "");
  EXPECT_TRUE(journal.has_entries());
  EXPECT_EQ(fs::status(journal_dir_).permissions() & fs::perms::all,
            fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec);

  const auto contents = read_pending_journal(journal_dir_);
  ASSERT_EQ(contents.entries.size(), 1u);
  EXPECT_TRUE(contents.skipped.empty());
  const auto& e = contents.entries[0];
  EXPECT_EQ(e.why, "index: attempt to write a readonly database");
  EXPECT_GT(e.journaled_us, 0);
  EXPECT_EQ(e.record.id, r.id);
  EXPECT_EQ(e.record.state, DumpState::Rejected);
  EXPECT_EQ(e.record.comm, r.comm);
  EXPECT_EQ(e.record.exe, r.exe);
  EXPECT_EQ(e.record.argv, r.argv);
  EXPECT_EQ(e.record.signal, 11);
  EXPECT_EQ(e.record.rule, "rule-a");
  EXPECT_EQ(e.record.container_key, "docker:abc");
  EXPECT_EQ(e.record.extra["proc"]["status"], "x");
}

TEST_F(PendingJournalTest, LaterLineOfTheSameDumpSupersedes) {
  PendingJournal journal(journal_dir_);
  DumpRecord r = make_record(2, DumpState::InProgress);
  ASSERT_EQ(journal.append(r, "full"), "");
  ASSERT_EQ(journal.append(make_record(3), "full"), "");
  r.state = DumpState::Complete;
  r.core_size = 4096;
  ASSERT_EQ(journal.append(r, "full"), "");
  const auto contents = read_pending_journal(journal_dir_);
  ASSERT_EQ(contents.entries.size(), 2u);
  EXPECT_EQ(contents.entries[0].record.id, r.id);  // in the order of first appearance
  EXPECT_EQ(contents.entries[0].record.state, DumpState::Complete);
  EXPECT_EQ(contents.entries[0].record.core_size, 4096u);
}

TEST_F(PendingJournalTest, BoundedInSize) {
  PendingJournal journal(journal_dir_, 4096);
  int appended = 0;
  std::string refusal;
  for (int i = 0; i < 100 && refusal.empty(); ++i) {
    refusal = journal.append(make_record(i), "full");
    if (refusal.empty()) ++appended;
  }
  EXPECT_GT(appended, 0);
  EXPECT_LT(appended, 100);
  EXPECT_NE(refusal.find("is full"), std::string::npos) << refusal;
  EXPECT_LE(fs::file_size(pending_journal_path(journal_dir_)), 4096u);
  EXPECT_EQ(read_pending_journal(journal_dir_).entries.size(), static_cast<std::size_t>(appended));
}

TEST_F(PendingJournalTest, CorruptLinesAreSkippedWithAReason) {
  PendingJournal journal(journal_dir_);
  ASSERT_EQ(journal.append(make_record(4), "full"), "");
  {
    std::ofstream out(pending_journal_path(journal_dir_), std::ios::app);
    out << "{\"record\": {\"id\": 5}}\n";  // the wrong type
    out << "{\"journaled_us\": 1, \"why\": \"x\", \"rec";  // a torn last line
  }
  const auto contents = read_pending_journal(journal_dir_);
  ASSERT_EQ(contents.entries.size(), 1u);
  ASSERT_EQ(contents.skipped.size(), 2u);
  EXPECT_EQ(contents.skipped[0].rfind("line 2: ", 0), 0u) << contents.skipped[0];
  EXPECT_EQ(contents.skipped[1].rfind("line 3: not a JSON object", 0), 0u) << contents.skipped[1];
}

TEST_F(PendingJournalTest, MissingJournalIsEmpty) {
  const auto contents = read_pending_journal(root_ + "/nothing/here");
  EXPECT_TRUE(contents.entries.empty());
  EXPECT_TRUE(contents.skipped.empty());
}

TEST_F(PendingJournalTest, ReplayMovesRecordsIntoTheIndexMarked) {
  PendingJournal journal(journal_dir_);
  ASSERT_EQ(journal.append(make_record(6), "read-only"), "");
  ASSERT_EQ(journal.append(make_record(7, DumpState::InProgress), "read-only"), "");
  {
    std::ofstream out(pending_journal_path(journal_dir_), std::ios::app);
    out << "garbage\n";
  }
  Index index(store_, true);
  DumpRecord existing = make_record(7, DumpState::InProgress);
  index.insert(existing);  // a row the index already has is updated, not duplicated
  const auto result = journal.replay_into(index, 42, "coredumpd stopped");
  EXPECT_EQ(result.moved, 2);
  EXPECT_EQ(result.left, 0);
  ASSERT_EQ(result.skipped.size(), 1u);
  EXPECT_FALSE(journal.has_entries());
  EXPECT_FALSE(fs::exists(pending_journal_path(journal_dir_)));

  const auto rows = index.list();
  ASSERT_EQ(rows.size(), 2u);
  const auto six = index.get(make_record(6).id);
  ASSERT_TRUE(six);
  EXPECT_EQ(six->state, DumpState::Rejected);
  EXPECT_EQ(six->comm, make_record(6).comm);
  EXPECT_EQ(six->rule, "rule-a");
  EXPECT_EQ(six->extra[extras::kJournaled]["reason"], "read-only");
  EXPECT_EQ(six->extra[extras::kJournaled]["moved_us"], 42);
  const auto seven = index.get(make_record(7).id);
  ASSERT_TRUE(seven);
  EXPECT_EQ(seven->state, DumpState::Interrupted);  // replayed at start: its dump was cut by a stop
  EXPECT_EQ(seven->reason, "coredumpd stopped");
}

TEST_F(PendingJournalTest, ReplayKeepsWhatTheIndexRefuses) {
  PendingJournal journal(journal_dir_);
  ASSERT_EQ(journal.append(make_record(8), "full"), "");
  DumpRecord bad = make_record(9);
  bad.path = "../escape";  // Index refuses a path that is not a file name
  ASSERT_EQ(journal.append(bad, "full"), "");
  Index index(store_, true);
  const auto result = journal.replay_into(index, 1);
  EXPECT_EQ(result.moved, 1);
  EXPECT_EQ(result.left, 1);
  ASSERT_EQ(result.errors.size(), 1u);
  EXPECT_EQ(result.errors[0].rfind(bad.id, 0), 0u);
  const auto left = read_pending_journal(journal_dir_);
  ASSERT_EQ(left.entries.size(), 1u);
  EXPECT_EQ(left.entries[0].record.id, bad.id);
  EXPECT_FALSE(left.entries[0].record.extra.contains(extras::kJournaled));
  EXPECT_TRUE(journal.has_entries());
}

// Index on a read-only filesystem: the daemon and dumpctl can still read it, and the daemon's open
// says why it is not writable. Needs root (a read-only bind mount).
TEST_F(PendingJournalTest, IndexOnReadOnlyFilesystemOpensReadOnly) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root for a read-only bind mount";
  {
    Index index(store_, true);
    index.insert(make_record(10));
  }  // closed: the -wal and -shm files are gone, and cannot be made on a read-only mount
  ASSERT_FALSE(fs::exists(Index::db_path(store_) + "-shm"));
  const std::string ro = root_ + "/ro";
  fs::create_directories(ro);
  ASSERT_EQ(::mount(store_.c_str(), ro.c_str(), nullptr, MS_BIND, nullptr), 0) << std::strerror(errno);
  ASSERT_EQ(::mount(nullptr, ro.c_str(), nullptr, MS_BIND | MS_REMOUNT | MS_RDONLY, nullptr), 0) << std::strerror(errno);
  struct Unmount {
    std::string path;
    ~Unmount() { ::umount2(path.c_str(), MNT_DETACH); }
  } unmount{ro};

  EXPECT_THROW(Index(ro, true), IndexError);
  Index read_only(ro, false);
  ASSERT_EQ(read_only.list().size(), 1u);
  std::string note;
  auto best = Index::open_best(ro, note);
  EXPECT_FALSE(best->writable());
  EXPECT_NE(note.find("Read-only file system"), std::string::npos) << note;
  EXPECT_EQ(best->list().size(), 1u);
  EXPECT_THROW(best->insert(make_record(11)), IndexError);
  EXPECT_THROW(best->reopen_writable(), IndexError);
  EXPECT_EQ(best->list().size(), 1u);  // still readable after the failed reopen
}

}  // namespace
}  // namespace coredumpd
