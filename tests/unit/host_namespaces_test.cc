// choose_host_namespaces(): which reference a crashing process's namespaces are compared with.
#include <gtest/gtest.h>

#include "daemon/policy/host_namespaces.h"

namespace coredumpd {
namespace {

using nlohmann::json;

// The eight initial namespaces as a 6.18 kernel numbers them (uapi <linux/nsfs.h> init_ns_ino).
const json kInit = {{"cgroup", 0xEFFFFFFBu}, {"ipc", 0xEFFFFFFFu}, {"mnt", 0xEFFFFFF8u}, {"net", 0xEFFFFFF9u},
                    {"pid", 0xEFFFFFFCu},    {"time", 0xEFFFFFFAu}, {"user", 0xEFFFFFFDu}, {"uts", 0xEFFFFFFEu}};

TEST(HostNamespaces, PidOneIsTheReferenceWhereItCanBeRead) {
  const json pid1 = {{"cgroup", 1u}, {"ipc", 2u}, {"mnt", 3u}, {"net", 4u}, {"pid", 5u}, {"time", 6u}, {"user", 7u}, {"uts", 8u}};
  const auto h = choose_host_namespaces(pid1, "", json::object(), "6.1.0");
  EXPECT_EQ(h.inodes, pid1);
  EXPECT_TRUE(h.missing.empty());
  for (const auto& [ns, source] : h.sources.items()) EXPECT_EQ(source, "/proc/1/ns") << ns;
  EXPECT_EQ(h.describe(), "cgroup ipc mnt net pid time user uts from /proc/1/ns");
}

// This machine: /proc/1/ns gives EACCES even to root. A 6.18 kernel numbers all eight.
TEST(HostNamespaces, UnreadablePidOneOnSixEighteenUsesTheFixedInitialInodes) {
  // The daemon in namespaces of its own (PrivateTmp=, PrivateNetwork=): its inodes are not used.
  const json self = {{"mnt", 4026532400u}, {"net", 4026532500u}, {"pid", 0xEFFFFFFCu}};
  const auto h = choose_host_namespaces(json::object(), "/proc/1/ns/cgroup: Permission denied", self, "6.18.44-fc-v1147");
  EXPECT_EQ(h.inodes, kInit);
  EXPECT_TRUE(h.missing.empty());
  EXPECT_EQ(h.sources["mnt"], "init inode");
  EXPECT_NE(h.describe().find("(/proc/1/ns unreadable: /proc/1/ns/cgroup: Permission denied)"), std::string::npos)
      << h.describe();
}

TEST(HostNamespaces, BeforeSixEighteenNetAndMntHaveNoReferenceAndTheSummarySaysSo) {
  const json self = {{"mnt", 4026531840u}, {"net", 4026531992u}};
  const auto h = choose_host_namespaces(json::object(), "/proc/1/ns/cgroup: Permission denied", self, "6.17.0");
  EXPECT_EQ(h.missing, (std::vector<std::string>{"mnt", "net"}));
  EXPECT_FALSE(h.inodes.contains("mnt"));
  EXPECT_FALSE(h.inodes.contains("net"));
  EXPECT_EQ(h.inodes["pid"], 0xEFFFFFFCu);
  EXPECT_NE(h.describe().find("NO reference for mnt net"), std::string::npos) << h.describe();
  // Partly readable /proc/1/ns fills what it can.
  const auto partly = choose_host_namespaces(json{{"mnt", 4026531840u}}, "/proc/1/ns/net: Permission denied", self, "6.17.0");
  EXPECT_EQ(partly.inodes["mnt"], 4026531840u);
  EXPECT_EQ(partly.missing, (std::vector<std::string>{"net"}));
}

TEST(HostNamespaces, TheDaemonsOwnFixedInodeProvesTheKernelHasThem) {
  // A backport (or an unparsable release) with the fixed numbers: seen in the daemon's own mnt.
  const json self = {{"mnt", 0xEFFFFFF8u}, {"net", 4026532500u}};
  const auto h = choose_host_namespaces(json::object(), "denied", self, "vendor-kernel");
  EXPECT_TRUE(h.missing.empty());
  EXPECT_EQ(h.inodes["net"], 0xEFFFFFF9u) << "the fixed net inode, not the daemon's PrivateNetwork= one";
}

TEST(HostNamespaces, KernelReleaseParsing) {
  EXPECT_TRUE(kernel_has_fixed_net_mnt("6.18.0"));
  EXPECT_TRUE(kernel_has_fixed_net_mnt("7.3.1-arch1"));
  EXPECT_FALSE(kernel_has_fixed_net_mnt("6.17.9"));
  EXPECT_FALSE(kernel_has_fixed_net_mnt("5.19.0"));
  EXPECT_FALSE(kernel_has_fixed_net_mnt("garbage"));
  EXPECT_EQ(init_namespace_inode("mnt", false), std::nullopt);
  EXPECT_EQ(init_namespace_inode("user", false), 0xEFFFFFFDu);
  EXPECT_EQ(init_namespace_inode("bogus", true), std::nullopt);
}

// On the running kernel: whatever the reference, the test process's own namespaces (the init
// ones, for a test run on the host) are compared with something for every type on 6.18+.
TEST(HostNamespaces, ReadOnThisMachineCoversEveryTypeOnSixEighteen) {
  const auto h = read_host_namespaces();
  EXPECT_FALSE(h.describe().empty());
  if (h.pid1_error.empty()) {
    EXPECT_TRUE(h.missing.empty()) << h.describe();
  }
  EXPECT_EQ(h.to_json()["summary"], h.describe());
}

}  // namespace
}  // namespace coredumpd
