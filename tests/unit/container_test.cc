// Container identification as a whole (container.h, container_info.h): hostile input, namespaces,
// ids from status and the maps, the key and the record's JSON.
#include <random>

#include <gtest/gtest.h>

#include "tests/unit/container_test_util.h"

using namespace coredumpd;
using namespace coredumpd::container_test;

// ---------------------------------------------------------------------------------------------
// malformed and hostile input

TEST(Malformed, NothingCrashesAndTheResultIsTheHost) {
  const std::string inputs[] = {
      "",
      "\n\n\n",
      ":::::",
      "0::",
      "0::\n",
      "0::relative/docker/" + kId,
      "abc:def:/docker/" + kId,
      std::string("0::/docker/\0", 12) + kId,
      "0::/" + std::string(100000, 'a'),
      "0::" + std::string(5000, '/'),
      "0::/docker/../docker/..",
      "0::/kubepods/pod/" + kId,
      "0::/kubepods/burstable/pod%%%/" + kId,
      "0::/kubepods.slice/kubepods-pod.slice/x",
      "0::/machine.slice/machine-.scope",
      "0::/machine.slice/machine-.scope/..",
      "0::/a:b:c/" + std::string(":", 1) + kId,
      "0::/x.slice:docker:" + kId.substr(0, 10),
      "\xff\xfe:\x01:/\x80",
  };
  for (const auto& text : inputs) {
    ContainerInputs in;
    in.cgroup = text;
    in.namespaces = host_ns();
    in.host_namespaces = host_ns();
    in.status = text;
    in.uid_map = text;
    in.gid_map = text;
    in.hostname = text;
    ContainerInfo c;
    ASSERT_NO_THROW(c = identify_container(in));
    EXPECT_FALSE(c.in_container) << text.substr(0, 80);
    EXPECT_TRUE(c.runtime == Runtime::None || c.runtime == Runtime::Systemd) << text.substr(0, 80);
    EXPECT_NO_THROW((void)to_json(c).dump());
    EXPECT_NO_THROW((void)container_key(c));
  }
  // A machine name that unescapes to bytes that are not UTF-8 still serialises.
  const auto odd = ident(unified("/machine.slice/machine-\\xff\\xfe.scope"));
  EXPECT_EQ(odd.name, "\xff\xfe");
  EXPECT_TRUE(to_json(odd)["name"].is_array());
}

TEST(Malformed, RandomTokenSoupNeverCrashes) {
  const std::vector<std::string> tokens = {
      "/", ":", "\n", "0", "1", "12", "name=systemd", "cpu,cpuacct", "docker", kId, "docker-", ".scope", ".slice",
      "kubepods", "-", "_", "pod", kPodUid, "burstable", "lxc", "lxc.payload.", "lxc.monitor", "machine-", "\\x2d",
      "\\x", "libpod-conmon-", "libpod_pod_", "crio-", "cri-containerd-", "user@1000.service", "session-1.scope",
      "user-1000.slice", " (deleted)", std::string("\0", 1), "\xff", "supervisor", "qemu-1-", "default", " ", "\t"};
  std::mt19937 rng(12345);
  const auto host = host_ns();
  for (int iter = 0; iter < 3000; ++iter) {
    std::string text;
    const auto n = rng() % 40;
    for (unsigned i = 0; i < n; ++i) text += tokens[rng() % tokens.size()];
    ContainerInputs in;
    in.cgroup = text;
    in.status = text;
    in.uid_map = text;
    in.namespaces = iter % 2 ? host : nlohmann::json(text.size());
    in.host_namespaces = host;
    const auto c = identify_container(in);
    ASSERT_NO_THROW((void)to_json(c).dump()) << text;
    if (!c.id.empty()) {
      EXPECT_EQ(c.id.size(), 64u);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// namespaces, pids, ids

TEST(Namespaces, SameDifferentAndUnknown) {
  ContainerInputs in;
  in.host_namespaces = host_ns();
  in.namespaces = host_ns();
  auto c = identify_container(in);
  EXPECT_EQ(c.namespaces_differ.pid, false);
  EXPECT_EQ(c.namespaces_differ.uts, false);
  EXPECT_FALSE(c.in_container);
  EXPECT_EQ(c.pidns, 4026531836u);

  // A docker container without userns: all but user and time differ.
  in.namespaces = {{"cgroup", 4026532400u}, {"ipc", 4026532398u}, {"mnt", 4026532396u}, {"net", 4026532401u},
                   {"pid", 4026532399u},    {"time", 4026531834u}, {"user", 4026531837u}, {"uts", 4026532397u}};
  c = identify_container(in);
  EXPECT_EQ(c.namespaces_differ.pid, true);
  EXPECT_EQ(c.namespaces_differ.mnt, true);
  EXPECT_EQ(c.namespaces_differ.net, true);
  EXPECT_EQ(c.namespaces_differ.ipc, true);
  EXPECT_EQ(c.namespaces_differ.uts, true);
  EXPECT_EQ(c.namespaces_differ.cgroup, true);
  EXPECT_EQ(c.namespaces_differ.user, false);
  EXPECT_EQ(c.namespaces_differ.time, false);
  EXPECT_TRUE(c.in_container);  // unrecognised cgroup, but isolated
  EXPECT_EQ(c.runtime, Runtime::None);
  EXPECT_EQ(container_key(c), "pidns:4026532399");

  // PrivateTmp= gives a service its own mount namespace only: not a container.
  in.namespaces = host_ns();
  in.namespaces["mnt"] = 4026532500u;
  c = identify_container(in);
  EXPECT_EQ(c.namespaces_differ.mnt, true);
  EXPECT_FALSE(c.in_container);

  // Missing or non-numeric inodes are unknown, not "same".
  in.namespaces = {{"pid", "4026531836"}, {"mnt", -1}};
  c = identify_container(in);
  EXPECT_FALSE(c.namespaces_differ.pid.has_value());
  EXPECT_FALSE(c.namespaces_differ.mnt.has_value());
  EXPECT_FALSE(c.namespaces_differ.uts.has_value());
  EXPECT_FALSE(c.in_container);
  in.namespaces = nullptr;
  in.host_namespaces = "garbage";
  EXPECT_FALSE(identify_container(in).namespaces_differ.net.has_value());
}

TEST(Namespaces, RecognisedRuntimeIsAContainerEvenWithoutInodes) {
  EXPECT_TRUE(ident(unified("/docker/" + kId)).in_container);
  EXPECT_FALSE(ident(unified("/system.slice/sshd.service")).in_container);
}

TEST(Status, NsPidFromNStgidThenNSpidThenTgid) {
  ContainerInputs in;
  in.status = "Name:\tx\nTgid:\t9055\nNgid:\t0\nPid:\t9056\nNStgid:\t9055\t40\t1\nNSpid:\t9056\t41\t2\n";
  EXPECT_EQ(identify_container(in).ns_pid, 1);
  in.status = "Name:\tx\nTgid:\t9055\nNSpid:\t9055\t7\n";
  EXPECT_EQ(identify_container(in).ns_pid, 7);
  // No NS lines (kernel < 4.1): Tgid only when the pid namespace is known to be the host's.
  in.status = "Name:\tx\nTgid:\t9055\n";
  EXPECT_FALSE(identify_container(in).ns_pid.has_value());
  in.namespaces = host_ns();
  in.host_namespaces = host_ns();
  EXPECT_EQ(identify_container(in).ns_pid, 9055);
  in.status = "NStgid:\tnot a number\n";
  EXPECT_FALSE(identify_container(in).ns_pid.has_value());
  in.status = "XNStgid:\t5\n";
  EXPECT_FALSE(identify_container(in).ns_pid.has_value());
}

TEST(Status, NsUidAndGidThroughTheMaps) {
  ContainerInputs in;
  in.status = "Name:\tnginx\nUid:\t100000\t100000\t100000\t100000\nGid:\t100033\t100033\t100033\t100033\n";
  in.uid_map = "         0     100000      65536\n";
  in.gid_map = "         0     100000      65536\n";
  auto c = identify_container(in);
  EXPECT_EQ(c.ns_uid, 0);
  EXPECT_EQ(c.ns_gid, 33);

  // Host user namespace: identity map, or no map but the same namespace.
  in.status = "Uid:\t1000\t1000\t1000\t1000\nGid:\t1000\t1000\t1000\t1000\n";
  in.uid_map = in.gid_map = "         0          0 4294967295\n";
  EXPECT_EQ(identify_container(in).ns_uid, 1000);
  in.uid_map = in.gid_map = "";
  EXPECT_FALSE(identify_container(in).ns_uid.has_value());  // unknown namespace, no map
  in.namespaces = host_ns();
  in.host_namespaces = host_ns();
  EXPECT_EQ(identify_container(in).ns_uid, 1000);
  EXPECT_EQ(identify_container(in).ns_gid, 1000);

  // Unmapped, hostile map, missing line.
  in.uid_map = "0 100000 65536\n";
  EXPECT_FALSE(identify_container(in).ns_uid.has_value());
  in.uid_map = "0 0 4294967296\n";
  EXPECT_FALSE(identify_container(in).ns_uid.has_value());
  in.status = "Name:\tx\n";
  in.uid_map = "0 0 4294967295";
  EXPECT_FALSE(identify_container(in).ns_uid.has_value());
}

// ---------------------------------------------------------------------------------------------
// keys and JSON

TEST(Key, OnePerKind) {
  EXPECT_EQ(container_key(ident(unified("/system.slice/crio-" + kId + ".scope"))), "cri-o:" + kId);
  EXPECT_EQ(container_key(ident(unified("/lxc.payload.a"))), "lxc:a");
  ContainerInfo unknown;
  unknown.in_container = true;
  unknown.cgroup_path = "/weird";
  EXPECT_EQ(container_key(unknown), "cgroup:/weird");
  EXPECT_EQ(container_key(ContainerInfo{}), "host");
}

TEST(Json, AllFieldsWithNullsForUnknowns) {
  ContainerInputs in;
  const auto text = unified("/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + kPodUidUnderscored +
                            ".slice/cri-containerd-" + kId + ".scope");
  in.cgroup = text;
  in.host_namespaces = host_ns();
  in.namespaces = host_ns();
  in.namespaces["pid"] = 4026532999u;
  in.status = "NStgid:\t4242\t1\nUid:\t0\t0\t0\t0\n";
  in.hostname = "web-7f9c";
  const auto j = to_json(identify_container(in));
  EXPECT_EQ(j["runtime"], "kubernetes");
  EXPECT_EQ(j["engine"], "containerd");
  EXPECT_EQ(j["id"], kId);
  EXPECT_EQ(j["pod_uid"], kPodUid);
  EXPECT_EQ(j["name"], kPodUid);
  EXPECT_EQ(j["monitor"], false);
  EXPECT_EQ(j["unit"], "cri-containerd-" + kId + ".scope");
  EXPECT_EQ(j["slice"], "kubepods-besteffort-pod" + kPodUidUnderscored + ".slice");
  EXPECT_EQ(j["cgroup_path"], text.substr(3, text.size() - 4));
  EXPECT_EQ(j["namespaces_differ"]["pid"], true);
  EXPECT_EQ(j["namespaces_differ"]["mnt"], false);
  EXPECT_EQ(j["pidns"], 4026532999u);
  EXPECT_EQ(j["in_container"], true);
  EXPECT_EQ(j["ns_pid"], 1);
  EXPECT_EQ(j["ns_uid"], 0);            // same user namespace and no map: the host uid
  EXPECT_TRUE(j["ns_gid"].is_null());   // no Gid: line
  EXPECT_TRUE(j["owner_uid"].is_null());
  EXPECT_EQ(j["hostname"], "web-7f9c");
  EXPECT_EQ(j["key"], "kubernetes:" + kPodUid);
  EXPECT_EQ(j.size(), 20u);
  // Not UTF-8: an array of bytes, never a throwing dump().
  in.hostname = "\xc3\x28";
  const auto bad = to_json(identify_container(in));
  EXPECT_TRUE(bad["hostname"].is_array());
  EXPECT_NO_THROW((void)bad.dump());
}
