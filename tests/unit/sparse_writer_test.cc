// dumpctl's output files: SparseWriter leaves holes for zero blocks, and TempFile is removed when
// SIGINT, SIGTERM or SIGHUP kill dumpctl (issue 20 item 9).
#include "cli/sparse_writer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>
#include <random>
#include <string>

#include "cli/dumpctl.h"
#include "cli/temp_file.h"
#include "util/unique_fd.h"

namespace coredumpd::cli {
namespace {

namespace fs = std::filesystem;
constexpr std::size_t kMiB = 1 << 20;

class SparseFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "sparse_writer_test.XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }

  /// Writes `data` through a SparseWriter in chunks of `chunk` bytes; returns the file's stat.
  struct stat write_sparse(const std::string& data, std::size_t chunk) {
    const std::string path = dir_ + "/out";
    const UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
    EXPECT_TRUE(fd);
    SparseWriter w(fd.get(), path);
    for (std::size_t i = 0; i < data.size(); i += chunk) w.write(data.data() + i, std::min(chunk, data.size() - i));
    w.finish();
    EXPECT_EQ(w.size(), data.size());
    struct stat sb {};
    EXPECT_EQ(::fstat(fd.get(), &sb), 0);
    std::string back(data.size(), '\1');
    EXPECT_EQ(::pread(fd.get(), back.data(), back.size(), 0), static_cast<ssize_t>(back.size()));
    EXPECT_TRUE(back == data) << "content differs";
    return sb;
  }

  std::string dir_;
};

// 64 MiB of zeros with data in three places: the file has the full size but only the data's blocks.
TEST_F(SparseFiles, ZeroBlocksBecomeHolesWhateverTheChunking) {
  std::string data(64 * kMiB, '\0');
  std::mt19937 rng(7);
  for (std::size_t i = 0; i < 3 * 4096; ++i) data[i] = static_cast<char>(rng() | 1);   // head
  for (std::size_t i = 0; i < 100; ++i) data[20 * kMiB + 4000 + i] = 'x';             // straddles a block edge
  data[data.size() - 2 * kMiB] = 'y';                                                   // then a trailing hole
  for (const std::size_t chunk : {std::size_t{4096}, std::size_t{1000}, std::size_t{128 * 1024 + 7}, 64 * kMiB}) {
    const struct stat sb = write_sparse(data, chunk);
    EXPECT_EQ(static_cast<std::size_t>(sb.st_size), data.size());
    // 3 + 2 + 1 data blocks; allow the file system its own allocation granularity.
    EXPECT_LT(static_cast<std::uint64_t>(sb.st_blocks) * 512, 4 * kMiB) << "chunk " << chunk;
  }
}

TEST_F(SparseFiles, DataWithoutZeroBlocksIsWrittenInFull) {
  std::string data(8 * kMiB + 123, '\0');
  for (std::size_t i = 0; i < data.size(); i += 4096) data[i] = 'd';  // a byte in every block
  const struct stat sb = write_sparse(data, 65536);
  EXPECT_EQ(static_cast<std::size_t>(sb.st_size), data.size());
  EXPECT_GE(static_cast<std::uint64_t>(sb.st_blocks) * 512, 8 * kMiB);
}

TEST_F(SparseFiles, EmptyAndAllZeroAndUnalignedTails) {
  EXPECT_EQ(write_sparse("", 10).st_size, 0);
  const struct stat zeros = write_sparse(std::string(16 * kMiB + 5, '\0'), kMiB);
  EXPECT_EQ(static_cast<std::size_t>(zeros.st_size), 16 * kMiB + 5);
  EXPECT_LT(static_cast<std::uint64_t>(zeros.st_blocks) * 512, kMiB);
  std::string tail(10000, '\0');
  tail.back() = 'z';  // the last byte of a partial block
  EXPECT_EQ(write_sparse(tail, 3).st_size, 10000);
}

TEST(SparseWriter, AllZero) {
  EXPECT_TRUE(all_zero("", 0));
  EXPECT_TRUE(all_zero(std::string(13, '\0').data(), 13));
  std::string s(13, '\0');
  s[12] = 1;
  EXPECT_FALSE(all_zero(s.data(), 13));
  EXPECT_TRUE(all_zero(s.data(), 12));
}

// A child creates a TempFile and is killed by `sig`: the file is gone and the child's status
// says it died of `sig` (the handler re-raised it with the default action).
void expect_removed_when_killed(const std::string& dir, int sig) {
  int pipefd[2];
  ASSERT_EQ(::pipe(pipefd), 0);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::close(pipefd[0]);
    TempFile tmp(dir, "dumpctl-core-");
    [[maybe_unused]] const ssize_t w1 = ::write(tmp.fd(), "core", 4);
    [[maybe_unused]] const ssize_t w2 = ::write(pipefd[1], tmp.path().c_str(), tmp.path().size());
    ::close(pipefd[1]);
    for (;;) ::pause();
  }
  ::close(pipefd[1]);
  std::string path(4096, '\0');
  const ssize_t n = ::read(pipefd[0], path.data(), path.size());
  ::close(pipefd[0]);
  ASSERT_GT(n, 0);
  path.resize(static_cast<std::size_t>(n));
  EXPECT_TRUE(fs::exists(path));
  ::kill(pid, sig);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == sig) << "status " << status;
  EXPECT_FALSE(fs::exists(path)) << path << " left behind after signal " << sig;
}

TEST_F(SparseFiles, TempFileIsRemovedWhenKilledBySigintSigtermSighup) {
  for (const int sig : {SIGINT, SIGTERM, SIGHUP}) expect_removed_when_killed(dir_, sig);
  EXPECT_TRUE(fs::is_empty(dir_));
}

// After rename_to() the file is the user's: a signal no longer removes it.
TEST_F(SparseFiles, RenamedFileSurvivesASignal) {
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    TempFile tmp(dir_, ".dumpctl-");
    tmp.rename_to(dir_ + "/kept");
    ::raise(SIGTERM);
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
  EXPECT_TRUE(fs::exists(dir_ + "/kept"));
}

}  // namespace
}  // namespace coredumpd::cli
