// store/sqlite_vfs.h: the index opens through a VFS whose randomness never waits for the kernel's
// random pool, and opening an index reads nothing from /dev/urandom (checked with strace).
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "store/index.h"
#include "store/sqlite_vfs.h"
#include "tests/unit/scratch_dir.h"

namespace coredumpd {
namespace {

constexpr const char* kChildDirEnv = "COREDUMPD_VFS_TEST_DIR";

TEST(SqliteVfs, OpeningAnIndexMakesTheWrapperTheDefault) {
  test::ScratchDir dir("vfs-default");
  Index index(dir.path(), true);
  sqlite3_vfs* dflt = sqlite3_vfs_find(nullptr);
  ASSERT_NE(dflt, nullptr);
  EXPECT_STREQ(dflt->zName, kSqliteVfsName);
  sqlite3_vfs* unix_vfs = sqlite3_vfs_find("unix");
  ASSERT_NE(unix_vfs, nullptr);
  EXPECT_NE(dflt->xRandomness, unix_vfs->xRandomness);
  EXPECT_EQ(dflt->xOpen, unix_vfs->xOpen);  // everything else is the "unix" VFS's own
  use_nonblocking_random_vfs();             // again: registers nothing twice
  EXPECT_EQ(sqlite3_vfs_find(nullptr), dflt);
}

TEST(SqliteVfs, RandomnessFillsTheBufferWithFreshBytes) {
  use_nonblocking_random_vfs();
  sqlite3_vfs* vfs = sqlite3_vfs_find(kSqliteVfsName);
  ASSERT_NE(vfs, nullptr);
  std::array<char, 256> a{}, b{};
  ASSERT_EQ(vfs->xRandomness(vfs, static_cast<int>(a.size()), a.data()), static_cast<int>(a.size()));
  ASSERT_EQ(vfs->xRandomness(vfs, static_cast<int>(b.size()), b.data()), static_cast<int>(b.size()));
  EXPECT_NE(a, (std::array<char, 256>{}));
  EXPECT_NE(a, b);
}

// Run only as a child of the strace tests below (DISABLED_: ctest never runs them on their own).
TEST(SqliteVfsChild, DISABLED_OpenIndex) {
  const char* dir = std::getenv(kChildDirEnv);
  ASSERT_NE(dir, nullptr);
  Index index(dir, true);
}
// The control: a plain SQLite database written through "unix", with no Index (so no wrapper).
TEST(SqliteVfsChild, DISABLED_PlainSqlite) {
  const char* dir = std::getenv(kChildDirEnv);
  ASSERT_NE(dir, nullptr);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2((std::string(dir) + "/plain.sqlite").c_str(), &db,
                            SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, "unix"), SQLITE_OK);
  EXPECT_EQ(sqlite3_exec(db, "CREATE TABLE t(a); INSERT INTO t VALUES(1);", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
}

// Runs this binary's child test `name` under `strace -f -e trace=openat`; returns the trace.
std::string openat_trace(const std::string& name, const std::string& dir) {
  const std::string self = std::filesystem::read_symlink("/proc/self/exe");
  const std::string log = dir + "/strace.log";
  // LeakSanitizer cannot run under ptrace and fails the child at exit (ASan builds); leaks are
  // the parent's business here.
  const char* asan = std::getenv("ASAN_OPTIONS");
  const std::string asan_options = std::string(asan != nullptr ? asan : "") + (asan != nullptr ? ":" : "") + "detect_leaks=0";
  const std::string cmd = "env ASAN_OPTIONS='" + asan_options + "' " + std::string(kChildDirEnv) + "='" + dir + "' strace -f -qq -e trace=openat -o '" + log +
                          "' '" + self + "' --gtest_also_run_disabled_tests --gtest_filter=SqliteVfsChild." + name +
                          " >'" + dir + "/child.out' 2>&1";
  const int rc = std::system(cmd.c_str());
  std::ifstream out(dir + "/child.out");
  std::stringstream child;
  child << out.rdbuf();
  EXPECT_TRUE(WIFEXITED(rc) && WEXITSTATUS(rc) == 0) << cmd << "\n" << child.str();
  std::ifstream in(log);
  std::stringstream trace;
  trace << in.rdbuf();
  return trace.str();
}

bool have_strace() { return std::system("strace -V >/dev/null 2>&1") == 0; }

TEST(SqliteVfs, OpeningAFreshIndexReadsNoUrandom) {
  if (!have_strace()) GTEST_SKIP() << "strace is not installed (scripts/install-deps.sh)";
  test::ScratchDir dir("vfs-strace");
  const std::string trace = openat_trace("DISABLED_OpenIndex", dir.path());
  ASSERT_NE(trace.find(Index::db_path(dir.path())), std::string::npos) << "strace did not see the index open:\n" << trace;
  EXPECT_EQ(trace.find("/dev/urandom"), std::string::npos) << trace;
}

// Proof that the check above can fail: SQLite's own "unix" VFS does read /dev/urandom here.
TEST(SqliteVfs, WithoutTheWrapperSqliteReadsUrandom) {
  if (!have_strace()) GTEST_SKIP() << "strace is not installed (scripts/install-deps.sh)";
  test::ScratchDir dir("vfs-strace");
  const std::string trace = openat_trace("DISABLED_PlainSqlite", dir.path());
  EXPECT_NE(trace.find("/dev/urandom"), std::string::npos) << trace;
}

}  // namespace
}  // namespace coredumpd
