// util/: directory listing, polling with a deadline, UniqueFd::close, enum name tables, time.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "util/dir.h"
#include "util/enum_names.h"
#include "util/poll.h"
#include "util/time.h"
#include "util/unique_fd.h"

namespace coredumpd {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

class DirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("util_test-" + std::to_string(::getpid()));
    fs::create_directories(dir_ / "sub");
    std::ofstream(dir_ / "a");
    std::ofstream(dir_ / ".partial-1");
    fd_.reset(::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    ASSERT_TRUE(fd_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path dir_;
  UniqueFd fd_;
};

TEST_F(DirTest, ListsEveryEntryButDotAndDotDot) {
  std::vector<std::string> names;
  const auto failed = for_each_dir_entry(fd_.get(), ".", [&](std::string_view n) {
    names.emplace_back(n);
    return true;
  });
  EXPECT_FALSE(failed.has_value());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{".partial-1", "a", "sub"}));
}

TEST_F(DirTest, StopsWhenAskedAndMayRemoveEntries) {
  int seen = 0;
  EXPECT_FALSE(for_each_dir_entry(fd_.get(), ".", [&](std::string_view) { return ++seen < 2; }).has_value());
  EXPECT_EQ(seen, 2);
  const int fd = fd_.get();
  EXPECT_FALSE(for_each_dir_entry(fd, ".", [fd](std::string_view n) {
                 if (n != "sub") {
                   EXPECT_EQ(::unlinkat(fd, n.data(), 0), 0);
                 }
                 return true;
               }).has_value());
  EXPECT_FALSE(fs::exists(dir_ / "a"));
  EXPECT_TRUE(fs::exists(dir_ / "sub"));
}

TEST_F(DirTest, ReportsWhatCouldNotBeOpened) {
  const auto missing = for_each_dir_entry(fd_.get(), "missing", [](std::string_view) { return true; });
  ASSERT_TRUE(missing.has_value());
  EXPECT_EQ(missing->step, DirError::Step::Open);
  EXPECT_EQ(missing->error, ENOENT);
  const auto file = for_each_dir_entry(fd_.get(), "a", [](std::string_view) { return true; });
  ASSERT_TRUE(file.has_value());
  EXPECT_EQ(file->error, ENOTDIR);
}

TEST(Poll, ReadyTimeoutAndHangUp) {
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  UniqueFd a(sv[0]), b(sv[1]);

  const auto start = std::chrono::steady_clock::now();
  const PollResult idle = poll_for(a.get(), POLLIN, 30ms);
  EXPECT_EQ(idle.status, PollStatus::Timeout);
  EXPECT_GE(std::chrono::steady_clock::now() - start, 30ms);  // never gives up before the deadline

  EXPECT_EQ(poll_for(a.get(), POLLOUT, 0ms).status, PollStatus::Ready);
  ASSERT_EQ(::write(b.get(), "x", 1), 1);
  const PollResult data = poll_until(a.get(), POLLIN, std::chrono::steady_clock::time_point::max());
  EXPECT_EQ(data.status, PollStatus::Ready);
  EXPECT_TRUE(data.revents & POLLIN);

  b.reset();
  const PollResult hup = poll_for(a.get(), POLLIN, 1s);
  EXPECT_EQ(hup.status, PollStatus::Ready);
  EXPECT_TRUE(hup.revents & POLLHUP);
}

TEST(UniqueFdClose, ReturnsTheResultAndOwnsNothingAfter) {
  UniqueFd fd(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  ASSERT_TRUE(fd);
  EXPECT_EQ(fd.close(), 0);
  EXPECT_FALSE(fd);
  EXPECT_EQ(fd.close(), 0);  // nothing owned: nothing to report
}

enum class Colour { Red, Green, Blue };
constexpr std::array<EnumName<Colour>, 2> kColourNames{{{Colour::Red, "red"}, {Colour::Green, "green"}}};

TEST(EnumNames, BothWays) {
  EXPECT_EQ(name_of(kColourNames, Colour::Green), "green");
  EXPECT_FALSE(name_of(kColourNames, Colour::Blue).has_value());
  EXPECT_EQ(value_of(kColourNames, "red"), Colour::Red);
  EXPECT_FALSE(value_of(kColourNames, "Red").has_value());
}

TEST(Time, EpochAndElapsedMicroseconds) {
  EXPECT_EQ(to_epoch_us(std::chrono::system_clock::time_point(1234567us)), 1234567);
  const std::int64_t before = now_epoch_us();
  EXPECT_GT(before, 1'600'000'000'000'000);  // after 2020
  EXPECT_GE(us_since(std::chrono::steady_clock::now() - 5ms), 5000);
}

}  // namespace
}  // namespace coredumpd
