// socket_path_problem(): the socket paths the kernel cannot use in core_pattern "@@<path>".
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
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

}  // namespace
}  // namespace coredumpd
