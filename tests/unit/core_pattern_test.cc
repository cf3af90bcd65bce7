// socket_path_problem(): the socket paths the kernel cannot use in core_pattern "@@<path>".
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "daemon/handshake/core_pattern.h"

namespace coredumpd {
namespace {

// A fresh directory for the symlink cases, removed at the end.
class SocketPath : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/cp-test-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
};

TEST_F(SocketPath, AnOrdinaryPathIsFineEvenIfItDoesNotExistYet) {
  EXPECT_EQ(socket_path_problem("/run/coredumpd/coredump.socket"), std::nullopt);
  EXPECT_EQ(socket_path_problem(dir_ + "/sub/coredump.socket"), std::nullopt);
  EXPECT_EQ(socket_path_problem(dir_ + "/coredump.socket"), std::nullopt);
}

TEST_F(SocketPath, ASymlinkInAnyComponentIsRefusedNamingIt) {
  std::filesystem::create_directory(dir_ + "/real");
  std::filesystem::create_directory_symlink(dir_ + "/real", dir_ + "/link");
  const auto why = socket_path_problem(dir_ + "/link/coredump.socket");
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find(dir_ + "/link is a symlink (to " + dir_ + "/real)"), std::string::npos) << *why;
  EXPECT_NE(why->find("follows no symlink"), std::string::npos) << *why;

  // The last component too: a symlinked socket.
  std::filesystem::create_symlink(dir_ + "/real/s", dir_ + "/real/sock");
  ASSERT_TRUE(socket_path_problem(dir_ + "/real/sock").has_value());
  // The same directory reached without the link is fine.
  EXPECT_EQ(socket_path_problem(dir_ + "/real/coredump.socket"), std::nullopt);
}

TEST_F(SocketPath, ASpaceIsRefusedWithWhere) {
  const auto why = socket_path_problem("/run/core dumpd/s");
  ASSERT_TRUE(why.has_value());
  EXPECT_EQ(*why, "it has a space at byte 9, where the kernel ends the pattern");
}

TEST_F(SocketPath, LengthLimitsOfSunPathAndCorePattern) {
  // 107 bytes fit sun_path; "@@" + 107 also fits the 127 bytes core_pattern keeps.
  const std::string at_limit = "/" + std::string(kMaxSocketPathBytes - 1, 'a');
  ASSERT_EQ(at_limit.size(), 107u);
  EXPECT_EQ(socket_path_problem(at_limit), std::nullopt);
  const auto why = socket_path_problem(at_limit + "b");
  ASSERT_TRUE(why.has_value());
  EXPECT_EQ(*why, "108 bytes, over the 107 bytes sockaddr_un's sun_path holds");
  const auto long_one = socket_path_problem("/" + std::string(119, 'x'));
  ASSERT_TRUE(long_one.has_value());
  EXPECT_NE(long_one->find("sun_path"), std::string::npos) << *long_one;
}

TEST_F(SocketPath, RelativeAndDotDotPathsAreRefused) {
  EXPECT_TRUE(socket_path_problem("").has_value());
  EXPECT_TRUE(socket_path_problem("run/s").has_value());
  const auto why = socket_path_problem("/run/../run/s");
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("\"..\""), std::string::npos) << *why;
  EXPECT_EQ(socket_path_problem("/run/a..b/s"), std::nullopt) << "only a whole .. component is refused";
}

TEST_F(SocketPath, RequireThrowsWithThePathAndTheReason) {
  try {
    require_usable_socket_path("/run/a b");
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()),
              "socket path /run/a b cannot be used by the kernel: it has a space at byte 6, where the kernel ends the pattern");
  }
  EXPECT_NO_THROW(require_usable_socket_path("/run/coredumpd/coredump.socket"));
}


// socket_mode_unsupported(): the release must be 6.17+, and core_modes (where it exists) must list
// "socket". Simulated kernels: a file for core_modes, a string for the release.
TEST_F(SocketPath, SocketModeSupportFollowsCoreModesAndTheRelease) {
  const auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir_ + "/" + name) << text;
    return dir_ + "/" + name;
  };
  const std::string with = write("with", "file\npipe\nsocket\n"), without = write("without", "file pipe\n");
  const std::string missing = dir_ + "/missing";
  EXPECT_EQ(socket_mode_unsupported({with, "6.18.44-fc-v1272"}), std::nullopt);
  EXPECT_EQ(socket_mode_unsupported({missing, "6.17.0"}), std::nullopt);  // no list: the release decides
  EXPECT_EQ(socket_mode_unsupported({with, "7.3.4"}), std::nullopt);
  const auto no_mode = socket_mode_unsupported({without, "6.18.1"});
  ASSERT_TRUE(no_mode.has_value());
  EXPECT_NE(no_mode->find("no socket core_pattern mode"), std::string::npos) << *no_mode;
  EXPECT_NE(no_mode->find("file pipe"), std::string::npos) << *no_mode;
  for (const char* old : {"6.1.0-18-amd64", "6.16.3", "5.10.0"}) {
    const auto why = socket_mode_unsupported({missing, old});
    ASSERT_TRUE(why.has_value()) << old;
    EXPECT_NE(why->find(old), std::string::npos) << *why;
    EXPECT_NE(why->find("6.17"), std::string::npos) << *why;
  }
  // 6.16 listed "socket" for the one-"@" mode; "@@" still needs 6.17.
  EXPECT_TRUE(socket_mode_unsupported({with, "6.16.0"}).has_value());
  EXPECT_TRUE(socket_mode_unsupported({missing, "garbage"}).has_value());
}

// --pattern=install refuses an unusable path before looking at the kernel, and without a socket
// at the path, or on an unsupported kernel, changes nothing (the real pattern is only read).
TEST_F(SocketPath, InstallLeavesThePatternAloneWithoutASocketOrSupport) {
  EXPECT_THROW(install_core_pattern("relative.sock", dir_ + "/saved"), std::invalid_argument);
  const auto no_socket = install_core_pattern(dir_ + "/none.sock", dir_ + "/saved", {dir_ + "/missing", "6.18.0"});
  EXPECT_FALSE(no_socket.changed);
  EXPECT_NE(no_socket.message.find("no socket at"), std::string::npos) << no_socket.message;
  const auto old = install_core_pattern(dir_ + "/none.sock", dir_ + "/saved", {dir_ + "/missing", "6.1.0"});
  EXPECT_FALSE(old.changed);
  EXPECT_NE(old.message.find("6.17"), std::string::npos) << old.message;
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/saved"));
}

}  // namespace
}  // namespace coredumpd
