// Cores kept in the fallback (store/fallback_core.h): what a record says about one, moving its
// file into the store across an interrupted move, and the pending journal holding such a record
// back until its core has moved (docs/EARLY_BOOT.md).
#include "store/fallback_core.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <system_error>

#include "store/index.h"
#include "store/pending_journal.h"
#include "store/record_extras.h"
#include "util/unique_fd.h"

namespace coredumpd {
namespace {

namespace fs = std::filesystem;

class FallbackCoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "fallback_core_test.XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    root_ = tmpl;
    fs::create_directories(root_ + "/fallback");
    fs::create_directories(root_ + "/store");
    from_.reset(::open((root_ + "/fallback").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    to_.reset(::open((root_ + "/store").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  }
  void TearDown() override { fs::remove_all(root_); }
  static std::string slurp(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }

  std::string root_;
  UniqueFd from_, to_;
};

DumpRecord kept_record(DumpState state = DumpState::Complete) {
  DumpRecord r;
  r.id = std::string(31, '0') + "1";
  r.state = state;
  r.path = r.id + ".zst";
  r.timestamp_us = 1'700'000'000'000'000;
  r.pid = 42;
  r.extra[extras::kFallback] = {{"dir", "/run/coredumpd/fallback"}, {"reason", "store directory is missing"},
                                {"file", r.path}};
  return r;
}

TEST(FallbackRecord, ACoreIsInTheFallbackUntilMoved) {
  DumpRecord r = kept_record();
  EXPECT_TRUE(core_in_fallback(r));
  EXPECT_EQ(fallback_dir_of(r).value_or(""), "/run/coredumpd/fallback");
  r.extra[extras::kFallback]["moved_us"] = 1;
  EXPECT_FALSE(core_in_fallback(r));
  EXPECT_FALSE(fallback_dir_of(r));
  // A dump that kept no core (the fallback's bound reached) has nothing there.
  DumpRecord failed = kept_record(DumpState::Failed);
  failed.path.clear();
  EXPECT_FALSE(core_in_fallback(failed));
  DumpRecord plain;
  plain.state = DumpState::Complete;
  plain.path = "x.zst";
  EXPECT_FALSE(core_in_fallback(plain));
}

TEST_F(FallbackCoreTest, MovesBytesAndHolesThenRemovesTheSource) {
  const std::string src = root_ + "/fallback/core.raw";
  {
    const int fd = ::open(src.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::pwrite(fd, "head", 4, 0), 4);
    ASSERT_EQ(::pwrite(fd, "tail", 4, 64 << 20), 4);  // 64 MiB hole between
    ::close(fd);
  }
  const std::string bytes = slurp(src);
  EXPECT_EQ(move_core_file(from_.get(), to_.get(), "core.raw"), bytes.size());
  EXPECT_FALSE(fs::exists(src));
  EXPECT_EQ(slurp(root_ + "/store/core.raw"), bytes);
  struct stat st{};
  ASSERT_EQ(::stat((root_ + "/store/core.raw").c_str(), &st), 0);
  EXPECT_LT(st.st_blocks * 512, 8 << 20) << "the hole stayed a hole";
}

TEST_F(FallbackCoreTest, AMoveInterruptedAfterTheLinkIsFinished) {
  std::ofstream(root_ + "/fallback/c.zst") << "compressed core";
  std::ofstream(root_ + "/store/c.zst") << "compressed core";  // linked, the source not yet removed
  EXPECT_EQ(move_core_file(from_.get(), to_.get(), "c.zst"), 15u);
  EXPECT_FALSE(fs::exists(root_ + "/fallback/c.zst"));
  EXPECT_EQ(slurp(root_ + "/store/c.zst"), "compressed core");
}

TEST_F(FallbackCoreTest, AnotherFileUnderTheNameIsNotOverwritten) {
  std::ofstream(root_ + "/fallback/c.zst") << "compressed core";
  std::ofstream(root_ + "/store/c.zst") << "other";
  EXPECT_THROW(move_core_file(from_.get(), to_.get(), "c.zst"), std::system_error);
  EXPECT_TRUE(fs::exists(root_ + "/fallback/c.zst")) << "the source stays when the move fails";
  EXPECT_EQ(slurp(root_ + "/store/c.zst"), "other");
  EXPECT_THROW(move_core_file(from_.get(), to_.get(), "missing.zst"), std::system_error);
}

TEST_F(FallbackCoreTest, TheJournalHoldsARecordBackUntilItsCoreMoved) {
  PendingJournal journal(root_ + "/pending");
  DumpRecord r = kept_record();
  ASSERT_EQ(journal.append(r, "store directory is missing"), "");
  Index index(root_ + "/store", true);
  auto result = journal.replay_into(index, 7);
  EXPECT_EQ(result.moved, 0);
  EXPECT_EQ(result.left, 1);
  EXPECT_FALSE(index.get(r.id)) << "the index never names a core that is not in the store";

  r.extra[extras::kFallback]["moved_us"] = 5;
  ASSERT_EQ(journal.append(r, "store directory is missing"), "");  // its last line wins
  result = journal.replay_into(index, 8);
  EXPECT_EQ(result.moved, 1);
  EXPECT_EQ(result.left, 0);
  const auto row = index.get(r.id);
  ASSERT_TRUE(row);
  EXPECT_EQ(row->state, DumpState::Complete);
  EXPECT_EQ(row->extra[extras::kFallback]["moved_us"], 5);
  EXPECT_EQ(row->extra[extras::kJournaled]["moved_us"], 8);
  EXPECT_FALSE(journal.has_entries());
}

}  // namespace
}  // namespace coredumpd
