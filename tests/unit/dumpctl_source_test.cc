// dumpctl's choice between the store and the query service, its messages for the service's
// refusals, and what `dumpctl status` reads about the machine (kernel support, core_pattern, a
// listening socket seen in /proc/net/unix without connecting).
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "cli/dump_source.h"
#include "cli/query_client.h"
#include "cli/status_probe.h"
#include "util/unique_fd.h"

using namespace coredumpd;
using namespace coredumpd::cli;

namespace {

TEST(ChooseSource, RootReadsTheStoreUsersAskTheService) {
  GlobalOptions g;
  EXPECT_EQ(choose_source(g, 0), SourceKind::Store);
  EXPECT_EQ(choose_source(g, 1000), SourceKind::Service);
}

TEST(ChooseSource, QuerySocketGivenMeansTheServiceEvenForRoot) {
  GlobalOptions g;
  g.query_socket_given = true;
  g.store_given = true;  // both: the explicit service wins
  EXPECT_EQ(choose_source(g, 0), SourceKind::Service);
  EXPECT_EQ(choose_source(g, 1000), SourceKind::Service);
}

TEST(ChooseSource, StoreGivenIsReadDirectlyByAnyone) {
  GlobalOptions g;
  g.store_given = true;
  EXPECT_EQ(choose_source(g, 0), SourceKind::Store);
  EXPECT_EQ(choose_source(g, 1000), SourceKind::Store) << "a user reading a store they own";
}

TEST(QueryClient, NothingListeningSaysTheDaemonIsNotRunningAndWhere) {
  const std::string dir = testing::TempDir() + "/dq-none-" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  const std::string missing = dir + "/query.socket";
  try {
    QueryClient c(missing);
    FAIL() << "connected to nothing";
  } catch (const QueryUnreachable& e) {
    EXPECT_EQ(e.error, ENOENT);
    const std::string w = e.what();
    EXPECT_NE(w.find("coredumpd is not running"), std::string::npos) << w;
    EXPECT_NE(w.find(missing), std::string::npos) << w;
    EXPECT_NE(w.find("root can read the store directly"), std::string::npos) << w;
    EXPECT_EQ(w.find('\n'), std::string::npos) << "one line";
  }
  // A socket file nobody listens on any more (a daemon that died): ECONNREFUSED, the same message.
  {
    const UniqueFd s(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    missing.copy(a.sun_path, sizeof a.sun_path - 1);
    ASSERT_EQ(::bind(s.get(), reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  }
  try {
    QueryClient c(missing);
    FAIL() << "connected to a dead socket";
  } catch (const QueryUnreachable& e) {
    EXPECT_EQ(e.error, ECONNREFUSED);
    EXPECT_NE(std::string(e.what()).find("coredumpd is not running"), std::string::npos);
  }
  std::filesystem::remove_all(dir);
}

TEST(QueryClient, RefusalsReadAsWhatTheUserCanDo) {
  EXPECT_NE(query_refusal_message(QueryErrorCode::Busy, "too many").find("try again later"), std::string::npos);
  EXPECT_NE(query_refusal_message(QueryErrorCode::NotFound, "x").find("among those you may see"), std::string::npos);
  EXPECT_NE(query_refusal_message(QueryErrorCode::Internal, "disk").find("could not read its store: disk"),
            std::string::npos);
  EXPECT_NE(query_refusal_message(QueryErrorCode::BadRequest, "?").find("same version"), std::string::npos);
  EXPECT_EQ(query_refusal_message(QueryErrorCode::NoCore, "coredump X has no stored core (failed)"),
            "coredump X has no stored core (failed)");
  EXPECT_NE(query_refusal_message(QueryErrorCode::Busy, "a\x1b[2Jb").find("a\\x1b[2Jb"), std::string::npos)
      << "the daemon's text is escaped";
}

TEST(StatusProbe, ReleaseComparison) {
  EXPECT_TRUE(release_at_least("6.17.0", 6, 17));
  EXPECT_TRUE(release_at_least("6.18.44-fc-v1272", 6, 17));
  EXPECT_TRUE(release_at_least("7.0-rc1", 6, 17));
  EXPECT_FALSE(release_at_least("6.16.9", 6, 17));
  EXPECT_FALSE(release_at_least("6.1.0-28-amd64", 6, 17)) << "Debian 12's kernel";
  EXPECT_FALSE(release_at_least("garbage", 6, 17));
  EXPECT_FALSE(release_at_least("6", 6, 17));
}

TEST(StatusProbe, PatternSocket) {
  EXPECT_EQ(pattern_socket("@@/run/coredumpd/coredump.socket\n"), "/run/coredumpd/coredump.socket");
  EXPECT_EQ(pattern_socket("@/run/x.socket"), std::nullopt) << "the older mode is not ours";
  EXPECT_EQ(pattern_socket("|/usr/lib/systemd/systemd-coredump %P"), std::nullopt);
  EXPECT_EQ(pattern_socket("core"), std::nullopt);
  EXPECT_EQ(pattern_socket("@@"), std::nullopt);
}

TEST(StatusProbe, KernelSupportFromCoreModes) {
  const std::string f = testing::TempDir() + "/dq-core-modes-" + std::to_string(::getpid());
  std::ofstream(f) << "file\npipe\nsocket\n";
  const KernelSupport yes = probe_kernel_support(f);
  EXPECT_EQ(yes.core_modes, "file pipe socket");
  EXPECT_EQ(yes.socket_mode, release_at_least(yes.release, 6, 17)) << yes.why;
  std::ofstream(f) << "file\npipe\n";
  const KernelSupport no = probe_kernel_support(f);
  EXPECT_FALSE(no.socket_mode);
  EXPECT_NE(no.why.find("does not list"), std::string::npos) << no.why;
  std::filesystem::remove(f);
  const KernelSupport by_release = probe_kernel_support(f);  // no such file: the release decides
  EXPECT_FALSE(by_release.core_modes.has_value());
  EXPECT_EQ(by_release.socket_mode, release_at_least(by_release.release, 6, 17));
}

TEST(StatusProbe, ListeningSocketSeenInProcNetUnixWithoutConnecting) {
  const std::string dir = testing::TempDir() + "/dq-listen-" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/kernel socket";  // a space: the path is the rest of the line
  const UniqueFd s(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  path.copy(a.sun_path, sizeof a.sun_path - 1);
  ASSERT_EQ(::bind(s.get(), reinterpret_cast<sockaddr*>(&a), sizeof a), 0);

  SocketState bound = probe_socket(path);
  EXPECT_TRUE(bound.exists);
  EXPECT_TRUE(bound.is_socket);
  EXPECT_EQ(bound.listening, false) << "bound, not yet listening";
  ASSERT_EQ(::listen(s.get(), 1), 0);
  const SocketState listening = probe_socket(path);
  EXPECT_EQ(listening.listening, true);

  const SocketState missing = probe_socket(dir + "/none");
  EXPECT_FALSE(missing.exists);
  EXPECT_EQ(missing.listening, false);
  EXPECT_FALSE(missing.error.has_value());

  EXPECT_TRUE(unix_socket_listening("Num RefCount Protocol Flags Type St Inode Path\n"
                                    "0000000000000000: 00000002 00000000 00010000 0001 01 12345 /run/x.socket\n",
                                    "/run/x.socket"));
  EXPECT_FALSE(unix_socket_listening("0000000000000000: 00000002 00000000 00000000 0001 01 12345 /run/x.socket\n",
                                     "/run/x.socket"));
  EXPECT_FALSE(unix_socket_listening("0000000000000000: 00000002 00000000 00010000 0001 01 12345 /run/x.socket2\n",
                                     "/run/x.socket"));
  std::filesystem::remove_all(dir);
}

}  // namespace
