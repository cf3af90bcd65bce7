// Unit tests of container identification: every cgroup naming convention on cgroup v1 (hybrid and
// pure) and v2, systemd unit/slice derivation, namespace comparison, id maps, keys and JSON; and a
// live child in new user+pid+mnt+uts namespaces placed in a docker-named cgroup.
#include <fcntl.h>
#include <grp.h>
#include <linux/magic.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "daemon/proc/collect.h"
#include "daemon/policy/container.h"
#include "daemon/proc/proc_dir.h"
#include "store/dump_record.h"

using namespace coredumpd;

namespace {

// Container ids are 64 lower-case hex digits (these are SHA-256 digests of "" and "test").
const std::string kId = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
const std::string kId2 = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
const std::string kPodUid = "0b8e2b6a-3c1d-4e5f-9a7b-1c2d3e4f5a6b";
const std::string kPodUidUnderscored = "0b8e2b6a_3c1d_4e5f_9a7b_1c2d3e4f5a6b";

// /proc/<pid>/cgroup on a cgroup v1 "hybrid" host (systemd's default before v2, e.g. Debian 10,
// Ubuntu 20.04): twelve controller hierarchies, the named systemd hierarchy and the v2 line.
std::string hybrid(const std::string& path, const std::string& unified) {
  return "13:misc:/\n"
         "12:rdma:/\n"
         "11:hugetlb:" + path + "\n"
         "10:pids:" + path + "\n"
         "9:devices:" + path + "\n"
         "8:blkio:" + path + "\n"
         "7:freezer:" + path + "\n"
         "6:cpu,cpuacct:" + path + "\n"
         "5:net_cls,net_prio:" + path + "\n"
         "4:memory:" + path + "\n"
         "3:cpuset:" + path + "\n"
         "2:perf_event:" + path + "\n"
         "1:name=systemd:" + path + "\n"
         "0::" + unified + "\n";
}
std::string hybrid(const std::string& path) { return hybrid(path, path); }

// A pure cgroup v1 host (CentOS 7, "legacy" mode): no v2 line at all.
std::string legacy(const std::string& path) {
  return "11:cpuset:" + path + "\n"
         "10:hugetlb:" + path + "\n"
         "9:perf_event:" + path + "\n"
         "8:net_prio,net_cls:" + path + "\n"
         "7:memory:" + path + "\n"
         "6:devices:" + path + "\n"
         "5:freezer:" + path + "\n"
         "4:pids:" + path + "\n"
         "3:cpuacct,cpu:" + path + "\n"
         "2:blkio:" + path + "\n"
         "1:name=systemd:" + path + "\n";
}

// A cgroup v2 host: one line.
std::string unified(const std::string& path) { return "0::" + path + "\n"; }

ContainerInfo ident(const std::string& cgroup) {
  ContainerInputs in;
  in.cgroup = cgroup;
  return identify_container(in);
}

// The same answer from each of the v1 hybrid, v1 legacy and v2 forms of one path.
std::vector<ContainerInfo> all_layouts(const std::string& path) {
  return {ident(hybrid(path)), ident(legacy(path)), ident(unified(path))};
}

// Realistic namespace inodes of the initial namespaces.
nlohmann::json host_ns() {
  return {{"cgroup", 4026531835u}, {"ipc", 4026531839u}, {"mnt", 4026531841u}, {"net", 4026531840u},
          {"pid", 4026531836u},    {"time", 4026531834u}, {"user", 4026531837u}, {"uts", 4026531838u}};
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// /proc/<pid>/cgroup parsing and path choice

TEST(CgroupFile, ParsesV1AndV2LinesKeepingColonsInPaths) {
  const auto lines = parse_cgroup_file("4:cpu,cpuacct:/a:b/c\n1:name=systemd:/x\n0::/y:z (deleted)\n");
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0].hierarchy, "4");
  EXPECT_EQ(lines[0].controllers, "cpu,cpuacct");
  EXPECT_EQ(lines[0].path, "/a:b/c");
  EXPECT_EQ(lines[1].controllers, "name=systemd");
  EXPECT_EQ(lines[2].hierarchy, "0");
  EXPECT_EQ(lines[2].controllers, "");
  EXPECT_EQ(lines[2].path, "/y:z");  // " (deleted)" dropped on the v2 line only
  EXPECT_EQ(parse_cgroup_file("2:cpu:/x (deleted)")[0].path, "/x (deleted)");
}

TEST(CgroupFile, MalformedLinesAreSkipped) {
  const auto lines = parse_cgroup_file("garbage\nx:cpu:/a\n3:cpu\n3:cpu:relative\n:cpu:/a\n\n5:pids:/ok\n-1::/neg\n");
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].path, "/ok");
}

TEST(CgroupPath, V2LinePreferredThenNameSystemdThenFirstController) {
  // v2 line meaningful: chosen.
  EXPECT_EQ(ident("1:name=systemd:/system.slice/a.service\n0::/system.slice/b.service\n").cgroup_path,
            "/system.slice/b.service");
  // v2 line "/" (hybrid): name=systemd.
  EXPECT_EQ(ident("3:memory:/m\n1:name=systemd:/system.slice/a.service\n0::/\n").cgroup_path, "/system.slice/a.service");
  // Neither: the first controller line that is not the root.
  EXPECT_EQ(ident("5:cpu:/\n4:memory:/process_api/123\n3:pids:/p\n1:name=systemd:/\n0::/\n").cgroup_path,
            "/process_api/123");
  // All at the root: "/"; nothing valid: "".
  EXPECT_EQ(ident(hybrid("/")).cgroup_path, "/");
  EXPECT_EQ(ident("").cgroup_path, "");
}

// ---------------------------------------------------------------------------------------------
// docker

TEST(Docker, CgroupfsDriverOnHybridHostWhereV2LineIsContainerdService) {
  // runc's cgroupfs driver on a hybrid host moves the task in every v1 hierarchy; the v2 line
  // keeps the shim's cgroup. The container wins over the plain unit.
  const auto c = ident(hybrid("/docker/" + kId, "/system.slice/containerd.service"));
  EXPECT_EQ(c.runtime, "docker");
  EXPECT_EQ(c.id, kId);
  EXPECT_EQ(c.cgroup_path, "/docker/" + kId);
  EXPECT_EQ(c.unit, "");
  EXPECT_EQ(c.slice, "");
  EXPECT_TRUE(c.in_container);
  EXPECT_EQ(container_key(c), "docker:" + kId);
}

TEST(Docker, CgroupfsDriverEveryLayout) {
  for (const auto& c : all_layouts("/docker/" + kId)) {
    EXPECT_EQ(c.runtime, "docker");
    EXPECT_EQ(c.id, kId);
    EXPECT_EQ(c.engine, "");
    EXPECT_FALSE(c.monitor);
  }
}

TEST(Docker, SystemdDriverEveryLayout) {
  for (const auto& c : all_layouts("/system.slice/docker-" + kId + ".scope")) {
    EXPECT_EQ(c.runtime, "docker");
    EXPECT_EQ(c.id, kId);
    EXPECT_EQ(c.unit, "docker-" + kId + ".scope");
    EXPECT_EQ(c.slice, "system.slice");
    EXPECT_EQ(c.cgroup_path, "/system.slice/docker-" + kId + ".scope");
  }
}

TEST(Docker, RootlessUnderUserManager) {
  const auto c = ident(unified("/user.slice/user-1000.slice/user@1000.service/user.slice/docker-" + kId + ".scope"));
  EXPECT_EQ(c.runtime, "docker");
  EXPECT_EQ(c.id, kId);
  EXPECT_EQ(c.unit, "user@1000.service");
  EXPECT_EQ(c.slice, "user-1000.slice");
  EXPECT_EQ(c.user_unit, "docker-" + kId + ".scope");
  EXPECT_EQ(c.user_slice, "user.slice");
  EXPECT_EQ(c.owner_uid, 1000);
}

TEST(Docker, NestedDockerInDockerReportsInnermost) {
  const auto c = ident(hybrid("/docker/" + kId + "/docker/" + kId2));
  EXPECT_EQ(c.runtime, "docker");
  EXPECT_EQ(c.id, kId2);
  // systemd inside a container: still the container.
  EXPECT_EQ(ident(unified("/system.slice/docker-" + kId + ".scope/init.scope")).id, kId);
}

TEST(Docker, NearMissIdsAreNotContainers) {
  const std::string upper = "E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855";
  for (const std::string& path : std::vector<std::string>{"/docker/" + kId.substr(1), "/docker/" + kId + "0", "/docker/" + upper,
                           "/system.slice/docker-" + kId + ".scopex", "/system.slice/docker-.scope",
                           "/docker", "/docker/", "/system.slice/docker.service"}) {
    const auto c = ident(unified(path));
    EXPECT_NE(c.runtime, "docker") << path;
    EXPECT_EQ(c.id, "") << path;
  }
  EXPECT_EQ(ident(unified("/system.slice/docker.service")).runtime, "systemd");
}

// ---------------------------------------------------------------------------------------------
// podman

TEST(Podman, SystemdDriverMachineSlice) {
  for (const auto& c : all_layouts("/machine.slice/libpod-" + kId + ".scope")) {
    EXPECT_EQ(c.runtime, "podman");
    EXPECT_EQ(c.id, kId);
    EXPECT_FALSE(c.monitor);
    EXPECT_EQ(c.unit, "libpod-" + kId + ".scope");
    EXPECT_EQ(c.slice, "machine.slice");
    EXPECT_TRUE(c.in_container);
    EXPECT_EQ(container_key(c), "podman:" + kId);
  }
}

TEST(Podman, RootlessV2WithContainerSubgroup) {
  const auto c = ident(unified("/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" + kId +
                               ".scope/container"));
  EXPECT_EQ(c.runtime, "podman");
  EXPECT_EQ(c.id, kId);
  EXPECT_EQ(c.user_unit, "libpod-" + kId + ".scope");
  EXPECT_EQ(c.owner_uid, 1000);
}

TEST(Podman, ConmonIsTheMonitorNotThePayload) {
  const auto c = ident(unified("/machine.slice/libpod-conmon-" + kId + ".scope"));
  EXPECT_EQ(c.runtime, "podman");
  EXPECT_EQ(c.id, kId);
  EXPECT_TRUE(c.monitor);
  EXPECT_FALSE(c.in_container);  // conmon runs on the host
  EXPECT_EQ(container_key(c), "podman:" + kId);
}

TEST(Podman, CgroupfsDriverAndPods) {
  for (const auto& c : all_layouts("/libpod_parent/libpod-" + kId)) {
    EXPECT_EQ(c.runtime, "podman");
    EXPECT_EQ(c.id, kId);
  }
  const auto pod = ident(unified("/machine.slice/machine-libpod_pod_" + kId2 + ".slice/libpod-" + kId + ".scope"));
  EXPECT_EQ(pod.runtime, "podman");
  EXPECT_EQ(pod.id, kId);
  EXPECT_EQ(pod.pod_uid, kId2);
  EXPECT_EQ(pod.slice, "machine-libpod_pod_" + kId2 + ".slice");
  const auto rootless = ident(unified("/user.slice/user-1000.slice/user@1000.service/user.slice/user-libpod_pod_" +
                                      kId2 + ".slice/libpod-" + kId + ".scope/container"));
  EXPECT_EQ(rootless.pod_uid, kId2);
  EXPECT_EQ(rootless.id, kId);
}

// ---------------------------------------------------------------------------------------------
// containerd, CRI-O (outside Kubernetes)

TEST(Containerd, CriScopeNerdctlAndDefaultNamespace) {
  for (const auto& c : all_layouts("/system.slice/cri-containerd-" + kId + ".scope")) {
    EXPECT_EQ(c.runtime, "containerd");
    EXPECT_EQ(c.id, kId);
    EXPECT_EQ(container_key(c), "containerd:" + kId);
  }
  const auto nerdctl = ident(unified("/system.slice/nerdctl-" + kId + ".scope"));
  EXPECT_EQ(nerdctl.runtime, "containerd");
  EXPECT_EQ(nerdctl.id, kId);
  for (const auto& c : all_layouts("/default/" + kId)) {
    EXPECT_EQ(c.runtime, "containerd");
    EXPECT_EQ(c.id, kId);
  }
  // The daemon itself (and its shims) are a plain service.
  const auto daemon = ident(hybrid("/system.slice/containerd.service"));
  EXPECT_EQ(daemon.runtime, "systemd");
  EXPECT_EQ(daemon.unit, "containerd.service");
  EXPECT_FALSE(daemon.in_container);
}

TEST(CriO, ScopeAndConmon) {
  for (const auto& c : all_layouts("/system.slice/crio-" + kId + ".scope")) {
    EXPECT_EQ(c.runtime, "cri-o");
    EXPECT_EQ(c.id, kId);
    EXPECT_FALSE(c.monitor);
  }
  const auto conmon = ident(unified("/system.slice/crio-conmon-" + kId + ".scope"));
  EXPECT_EQ(conmon.runtime, "cri-o");
  EXPECT_TRUE(conmon.monitor);
  EXPECT_EQ(conmon.id, kId);
}

// ---------------------------------------------------------------------------------------------
// Kubernetes

TEST(Kubernetes, CgroupfsDriverBurstableBestEffortGuaranteed) {
  for (const std::string qos : {"/burstable", "/besteffort", ""}) {
    for (const auto& c : all_layouts("/kubepods" + qos + "/pod" + kPodUid + "/" + kId)) {
      EXPECT_EQ(c.runtime, "kubernetes") << qos;
      EXPECT_EQ(c.pod_uid, kPodUid);
      EXPECT_EQ(c.name, kPodUid);
      EXPECT_EQ(c.id, kId);
      EXPECT_EQ(c.engine, "");  // a bare id does not say
      EXPECT_TRUE(c.in_container);
      EXPECT_EQ(container_key(c), "kubernetes:" + kPodUid);
    }
  }
  const auto crio = ident(hybrid("/kubepods/burstable/pod" + kPodUid + "/crio-" + kId));
  EXPECT_EQ(crio.engine, "cri-o");
  EXPECT_EQ(crio.id, kId);
}

TEST(Kubernetes, SystemdDriverWithEachEngine) {
  const std::string pod_slice = "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + kPodUidUnderscored + ".slice/";
  const struct {
    std::string scope, engine;
    bool monitor;
  } cases[] = {{"cri-containerd-" + kId + ".scope", "containerd", false},
               {"docker-" + kId + ".scope", "docker", false},
               {"crio-" + kId + ".scope", "cri-o", false},
               {"crio-conmon-" + kId + ".scope", "cri-o", true}};
  for (const auto& k : cases) {
    for (const auto& c : all_layouts(pod_slice + k.scope)) {
      EXPECT_EQ(c.runtime, "kubernetes") << k.scope;
      EXPECT_EQ(c.engine, k.engine);
      EXPECT_EQ(c.id, kId);
      EXPECT_EQ(c.pod_uid, kPodUid);  // underscores back to dashes
      EXPECT_EQ(c.name, kPodUid);
      EXPECT_EQ(c.monitor, k.monitor);
      EXPECT_EQ(c.unit, k.scope);
      EXPECT_EQ(c.slice, "kubepods-burstable-pod" + kPodUidUnderscored + ".slice");
      EXPECT_EQ(c.in_container, !k.monitor);
    }
  }
}

TEST(Kubernetes, GuaranteedPodKindNodeMisconfiguredDriverAndPodLevel) {
  const auto guaranteed = ident(unified("/kubepods.slice/kubepods-pod" + kPodUidUnderscored + ".slice/cri-containerd-" + kId + ".scope"));
  EXPECT_EQ(guaranteed.runtime, "kubernetes");
  EXPECT_EQ(guaranteed.pod_uid, kPodUid);
  EXPECT_EQ(guaranteed.engine, "containerd");

  // kind: the node is a docker container, kubelet's cgroup root is /kubelet.
  const auto kind = ident(unified("/system.slice/docker-" + kId2 + ".scope/kubelet.slice/kubelet-kubepods.slice/"
                                  "kubelet-kubepods-besteffort.slice/kubelet-kubepods-besteffort-pod" +
                                  kPodUidUnderscored + ".slice/cri-containerd-" + kId + ".scope"));
  EXPECT_EQ(kind.runtime, "kubernetes");
  EXPECT_EQ(kind.id, kId);
  EXPECT_EQ(kind.pod_uid, kPodUid);
  EXPECT_EQ(kind.unit, "docker-" + kId2 + ".scope");  // systemd's view: the node's scope

  // kubelet with the systemd driver, containerd with cgroupfs: the cgroupsPath becomes a directory.
  const auto mixed = ident(unified("/system.slice/containerd.service/kubepods-besteffort-pod" + kPodUidUnderscored +
                                   ".slice:cri-containerd:" + kId));
  EXPECT_EQ(mixed.runtime, "kubernetes");
  EXPECT_EQ(mixed.engine, "containerd");
  EXPECT_EQ(mixed.pod_uid, kPodUid);
  EXPECT_EQ(mixed.id, kId);
  EXPECT_EQ(mixed.unit, "containerd.service");

  // A process in the pod cgroup itself (no container below).
  const auto pod_level = ident(hybrid("/kubepods/besteffort/pod" + kPodUid));
  EXPECT_EQ(pod_level.runtime, "kubernetes");
  EXPECT_EQ(pod_level.pod_uid, kPodUid);
  EXPECT_EQ(pod_level.id, "");
  // "pod..." outside kubepods is nothing.
  EXPECT_EQ(ident(unified("/foo/pod" + kPodUid + "/" + kId)).runtime, "");
  // Static pods have hash UIDs.
  EXPECT_EQ(ident(unified("/kubepods/burstable/pod6b0d1c2ab1e2f3a4b5c6d7e8f9a0b1c2/" + kId)).pod_uid,
            "6b0d1c2ab1e2f3a4b5c6d7e8f9a0b1c2");
}

// ---------------------------------------------------------------------------------------------
// LXC

TEST(Lxc, AllGenerations) {
  for (const auto& c : all_layouts("/lxc/web01")) {
    EXPECT_EQ(c.runtime, "lxc");
    EXPECT_EQ(c.name, "web01");
    EXPECT_EQ(c.id, "");
    EXPECT_TRUE(c.in_container);
    EXPECT_EQ(container_key(c), "lxc:web01");
  }
  const auto payload = ident(unified("/lxc.payload.web-01/system.slice/nginx.service"));
  EXPECT_EQ(payload.runtime, "lxc");
  EXPECT_EQ(payload.name, "web-01");
  EXPECT_FALSE(payload.monitor);
  EXPECT_EQ(payload.unit, "");  // not a systemd path from the host's side
  const auto lxd = ident(hybrid("/lxc.payload/proj_web01/init.scope"));
  EXPECT_EQ(lxd.name, "proj_web01");
  const auto monitor = ident(unified("/lxc.monitor.web01"));
  EXPECT_EQ(monitor.runtime, "lxc");
  EXPECT_EQ(monitor.name, "web01");
  EXPECT_TRUE(monitor.monitor);
  EXPECT_FALSE(monitor.in_container);
  EXPECT_TRUE(ident(unified("/lxc.monitor/web01")).monitor);
  EXPECT_EQ(ident(unified("/lxc.payload.")).runtime, "");
  EXPECT_EQ(ident(unified("/lxc")).runtime, "");
}

// ---------------------------------------------------------------------------------------------
// systemd-nspawn and machined

TEST(Nspawn, MachineScopeWithEscapedName) {
  for (const auto& c : all_layouts("/machine.slice/machine-my\\x2dbox.scope/payload/system.slice/nginx.service")) {
    EXPECT_EQ(c.runtime, "systemd-nspawn");
    EXPECT_EQ(c.name, "my-box");
    EXPECT_EQ(c.unit, "machine-my\\x2dbox.scope");
    EXPECT_EQ(c.slice, "machine.slice");
    EXPECT_FALSE(c.monitor);
    EXPECT_TRUE(c.in_container);
    EXPECT_EQ(container_key(c), "nspawn:my-box");
  }
  const auto direct = ident(legacy("/machine.slice/machine-fedora\\x2d39.scope"));
  EXPECT_EQ(direct.name, "fedora-39");
  const auto supervisor = ident(unified("/machine.slice/machine-box.scope/supervisor"));
  EXPECT_EQ(supervisor.runtime, "systemd-nspawn");
  EXPECT_TRUE(supervisor.monitor);
  EXPECT_FALSE(supervisor.in_container);
}

TEST(Nspawn, KeepUnitTemplateService) {
  // machinectl start: systemd-nspawn@.service runs nspawn --keep-unit; payload and supervisor below.
  for (const auto& c : all_layouts("/machine.slice/systemd-nspawn@build01.service/payload/init.scope")) {
    EXPECT_EQ(c.runtime, "systemd-nspawn");
    EXPECT_EQ(c.name, "build01");
    EXPECT_EQ(c.unit, "systemd-nspawn@build01.service");
    EXPECT_EQ(c.slice, "machine.slice");
    EXPECT_FALSE(c.monitor);
    EXPECT_TRUE(c.in_container);
    EXPECT_EQ(container_key(c), "nspawn:build01");
  }
  const auto supervisor = ident(unified("/machine.slice/systemd-nspawn@build01.service/supervisor"));
  EXPECT_EQ(supervisor.runtime, "systemd-nspawn");
  EXPECT_TRUE(supervisor.monitor);
  EXPECT_FALSE(supervisor.in_container);
  EXPECT_EQ(ident(unified("/system.slice/systemd-nspawn@.service")).runtime, "systemd");
}

TEST(Nspawn, LibvirtMachinesAreTold) {
  const auto qemu = ident(unified("/machine.slice/machine-qemu\\x2d3\\x2dwin\\x2d11.scope/libvirt/emulator"));
  EXPECT_EQ(qemu.runtime, "libvirt-qemu");
  EXPECT_EQ(qemu.name, "win-11");
  EXPECT_FALSE(qemu.in_container);  // a VM's emulator runs on the host
  EXPECT_EQ(container_key(qemu), "libvirt-qemu:win-11");
  const auto lxc = ident(unified("/machine.slice/machine-lxc\\x2d4242\\x2dweb.scope"));
  EXPECT_EQ(lxc.runtime, "libvirt-lxc");
  EXPECT_EQ(lxc.name, "web");
  EXPECT_TRUE(lxc.in_container);
  // "qemu-x..." that is not libvirt's pattern is an ordinary machine.
  EXPECT_EQ(ident(unified("/machine.slice/machine-qemu\\x2dbox.scope")).runtime, "systemd-nspawn");
}

TEST(SystemdUnescape, HexEscapesOnly) {
  EXPECT_EQ(systemd_unescape("my\\x2dbox"), "my-box");
  EXPECT_EQ(systemd_unescape("\\x2e\\x2D\\x41"), ".-A");
  EXPECT_EQ(systemd_unescape("a\\x"), "a\\x");
  EXPECT_EQ(systemd_unescape("a\\x2"), "a\\x2");
  EXPECT_EQ(systemd_unescape("a\\xzz"), "a\\xzz");
  EXPECT_EQ(systemd_unescape("nul\\x00kept"), "nul\\x00kept");
  EXPECT_EQ(systemd_unescape("\\xff"), "\xff");
  EXPECT_EQ(systemd_unescape(""), "");
}

// ---------------------------------------------------------------------------------------------
// plain systemd

TEST(Systemd, ServiceSessionUserUnitAndInit) {
  for (const auto& c : all_layouts("/system.slice/nginx.service")) {
    EXPECT_EQ(c.runtime, "systemd");
    EXPECT_EQ(c.unit, "nginx.service");
    EXPECT_EQ(c.slice, "system.slice");
    EXPECT_FALSE(c.in_container);
    EXPECT_EQ(container_key(c), "systemd:nginx.service");
  }
  const auto nested = ident(unified("/system.slice/system-getty.slice/getty@tty1.service"));
  EXPECT_EQ(nested.unit, "getty@tty1.service");
  EXPECT_EQ(nested.slice, "system-getty.slice");

  const auto session = ident(hybrid("/user.slice/user-1000.slice/session-3.scope"));
  EXPECT_EQ(session.runtime, "systemd");
  EXPECT_EQ(session.unit, "session-3.scope");
  EXPECT_EQ(session.slice, "user-1000.slice");
  EXPECT_EQ(session.owner_uid, 1000);
  EXPECT_EQ(session.user_unit, "");

  const auto app = ident(unified("/user.slice/user-1000.slice/user@1000.service/app.slice/app-org.gnome.Terminal.slice/"
                                 "vte-spawn-5f1b.scope"));
  EXPECT_EQ(app.unit, "user@1000.service");
  EXPECT_EQ(app.user_slice, "app-org.gnome.Terminal.slice");
  EXPECT_EQ(app.user_unit, "vte-spawn-5f1b.scope");
  EXPECT_EQ(app.owner_uid, 1000);

  const auto init = ident(unified("/init.scope"));
  EXPECT_EQ(init.unit, "init.scope");
  EXPECT_EQ(init.slice, "-.slice");

  // Slices alone: a slice but no unit, so not "systemd".
  const auto slices = ident(unified("/user.slice/user-0.slice"));
  EXPECT_EQ(slices.runtime, "");
  EXPECT_EQ(slices.slice, "user-0.slice");
  EXPECT_EQ(slices.owner_uid, 0);
  EXPECT_EQ(container_key(slices), "host");
}

TEST(Host, RootCgroupIsTheHost) {
  for (const auto& text : {hybrid("/"), legacy("/"), unified("/"), std::string()}) {
    ContainerInputs in;
    in.cgroup = text;
    in.namespaces = host_ns();
    in.host_namespaces = host_ns();
    const auto c = identify_container(in);
    EXPECT_EQ(c.runtime, "");
    EXPECT_FALSE(c.in_container);
    EXPECT_EQ(container_key(c), "host");
  }
}

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
    EXPECT_TRUE(c.runtime.empty() || c.runtime == "systemd") << text.substr(0, 80);
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
  EXPECT_EQ(c.runtime, "");
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
// id maps

TEST(IdMap, IdentityMap) {
  const std::string map = "         0          0 4294967295\n";
  EXPECT_EQ(map_id_to_namespace(0, map), 0);
  EXPECT_EQ(map_id_to_namespace(1000, map), 1000);
  EXPECT_EQ(map_id_to_namespace(4294967294, map), 4294967294);
  EXPECT_FALSE(map_id_to_namespace(4294967295, map).has_value());  // (uid_t)-1 is no id
  EXPECT_FALSE(map_id_to_namespace(-1, map).has_value());
  EXPECT_FALSE(map_id_to_namespace(INT64_MAX, map).has_value());
  EXPECT_FALSE(map_id_to_namespace(INT64_MIN, map).has_value());
  EXPECT_EQ(map_id_from_namespace(65534, map), 65534);
}

TEST(IdMap, SubordinateRange) {
  const std::string map = "0 100000 65536";
  EXPECT_EQ(map_id_to_namespace(100000, map), 0);
  EXPECT_EQ(map_id_to_namespace(100033, map), 33);
  EXPECT_EQ(map_id_to_namespace(165535, map), 65535);
  EXPECT_FALSE(map_id_to_namespace(165536, map).has_value());
  EXPECT_FALSE(map_id_to_namespace(99999, map).has_value());
  EXPECT_FALSE(map_id_to_namespace(0, map).has_value());
  EXPECT_EQ(map_id_from_namespace(0, map), 100000);
  EXPECT_EQ(map_id_from_namespace(65535, map), 165535);
  EXPECT_FALSE(map_id_from_namespace(65536, map).has_value());
}

TEST(IdMap, MultipleRanges) {
  // rootless podman: the user's own uid as root, then the subordinate range.
  const std::string map = "         0       1000          1\n         1     100000      65536\n";
  EXPECT_EQ(map_id_to_namespace(1000, map), 0);
  EXPECT_EQ(map_id_to_namespace(100000, map), 1);
  EXPECT_EQ(map_id_to_namespace(165535, map), 65536);
  EXPECT_FALSE(map_id_to_namespace(1001, map).has_value());
  EXPECT_FALSE(map_id_to_namespace(0, map).has_value());
  EXPECT_EQ(map_id_from_namespace(0, map), 1000);
  EXPECT_EQ(map_id_from_namespace(2, map), 100001);
  const auto extents = parse_id_map(map);
  ASSERT_TRUE(extents);
  ASSERT_EQ(extents->size(), 2u);
  EXPECT_EQ((*extents)[1].inside, 1u);
  EXPECT_EQ((*extents)[1].outside, 100000u);
  EXPECT_EQ((*extents)[1].count, 65536u);
  // Blanks the kernel accepts.
  EXPECT_TRUE(parse_id_map("0\t1000\t1\r\n1 100000 5 \n"));
}

TEST(IdMap, EmptyMapMapsNothing) {
  const auto extents = parse_id_map("");
  ASSERT_TRUE(extents);
  EXPECT_TRUE(extents->empty());
  EXPECT_FALSE(map_id_to_namespace(0, "").has_value());
}

TEST(IdMap, HostileMapsAreRejected) {
  const std::string bad[] = {
      "\n",                          // a blank line
      "0 0 1\n\n",                   // a blank line at the end
      " ",
      "0 0",                         // too few fields
      "0 0 1 1",                     // too many
      "0 0 0",                       // empty range
      "0 0 4294967296",              // count beyond 32 bits
      "4294967295 0 1",              // (u32)-1 is no id
      "0 4294967295 1",
      "1 0 4294967295",              // inside range wraps
      "0 1 4294967295",              // outside range wraps
      "4294967294 0 2",
      "99999999999999999999999999 0 1",  // would overflow a naive parser
      "-1 0 1", "+1 0 1", "0x10 0 1", "1e3 0 1", "0,0,1", "0 0 1x", "a b c",
      std::string("0 0 1\0", 6),     // NUL
      "0 0 1\n0 0 1",                // duplicate
      "0 100 10\n5 200 10",          // inside ranges overlap
      "0 100 10\n20 105 10",         // outside ranges overlap
      "0 0 4294967295\n5 5 1",
  };
  for (const auto& map : bad) {
    EXPECT_FALSE(parse_id_map(map).has_value()) << '"' << map << '"';
    EXPECT_FALSE(map_id_to_namespace(0, map).has_value()) << map;
    EXPECT_FALSE(map_id_from_namespace(0, map).has_value()) << map;
  }
  // Adjacent, not overlapping, is fine.
  EXPECT_TRUE(parse_id_map("0 100 10\n10 110 10\n"));
}

TEST(IdMap, AtMost340Lines) {
  std::string map;
  for (int i = 0; i < 340; ++i) map += std::to_string(i * 10) + " " + std::to_string(100000 + i * 10) + " 10\n";
  const auto extents = parse_id_map(map);
  ASSERT_TRUE(extents);
  EXPECT_EQ(extents->size(), 340u);
  EXPECT_EQ(map_id_to_namespace(100000 + 3395, map), 3395);
  EXPECT_EQ(map_id_from_namespace(3399, map), 103399);
  map += "3400 103400 10\n";
  EXPECT_FALSE(parse_id_map(map).has_value());
  EXPECT_FALSE(map_id_to_namespace(100000, map).has_value());
}

TEST(IdMap, RandomMapsRoundTrip) {
  std::mt19937 rng(777);
  const char alphabet[] = "0123456789 \n\t-";
  for (int iter = 0; iter < 20000; ++iter) {
    std::string map;
    const auto n = rng() % 60;
    for (unsigned i = 0; i < n; ++i) map += alphabet[rng() % (sizeof(alphabet) - 1)];
    const auto extents = parse_id_map(map);
    if (!extents) continue;
    for (const auto& e : *extents) {
      const std::int64_t last_inside = std::int64_t{e.inside} + e.count - 1;
      EXPECT_EQ(map_id_from_namespace(e.inside, map), e.outside);
      EXPECT_EQ(map_id_to_namespace(std::int64_t{e.outside} + e.count - 1, map), last_inside);
    }
  }
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

// ---------------------------------------------------------------------------------------------
// live: a real child in new user+pid+mnt+uts namespaces, in a docker-named cgroup

namespace {

std::string random_hex64() {
  std::random_device rd;
  std::string out;
  static constexpr char kHex[] = "0123456789abcdef";
  while (out.size() < 64) out += kHex[rd() % 16];
  return out;
}

bool is_fs(const std::string& path, decltype(statfs::f_type) magic) {
  struct statfs sfs{};
  return ::statfs(path.c_str(), &sfs) == 0 && sfs.f_type == magic;
}

bool write_file(const std::string& path, const std::string& data, std::string& error) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) {
    error = path + ": " + std::strerror(errno);
    return false;
  }
  const auto n = ::write(fd, data.data(), data.size());
  const int saved = errno;
  ::close(fd);
  if (n != static_cast<ssize_t>(data.size())) {
    error = path + ": " + std::strerror(saved);
    return false;
  }
  return true;
}

std::uint64_t ns_inode(const std::string& path) {
  struct stat st{};
  return ::stat(path.c_str(), &st) == 0 ? st.st_ino : 0;
}

bool read_exact(int fd, void* buf, std::size_t n) {
  auto* p = static_cast<char*>(buf);
  while (n > 0) {
    const auto r = ::read(fd, p, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= static_cast<std::size_t>(r);
  }
  return true;
}

// The outer child (A) unshares and forks the inner child (B), pid 1 of the new pid namespace; B
// waits for EOF on `down`. Every resource is released by the destructor, on every path.
class LiveContainer {
 public:
  static constexpr std::uint32_t kBase = 100000;  // host uid/gid of the namespace's root

  LiveContainer() = default;
  LiveContainer(const LiveContainer&) = delete;
  LiveContainer& operator=(const LiveContainer&) = delete;

  ~LiveContainer() {
    if (down_w_ >= 0) ::close(down_w_);  // B reads EOF and exits; A reaps it and exits
    if (up_r_ >= 0) ::close(up_r_);
    if (outer_ > 0) {
      int status = 0;
      bool reaped = false;
      for (int i = 0; i < 500 && !reaped; ++i) {  // up to 5 s
        reaped = ::waitpid(outer_, &status, WNOHANG) == outer_;
        if (!reaped) std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      if (!reaped) {
        if (inner_pidfd_ >= 0) ::syscall(SYS_pidfd_send_signal, inner_pidfd_, SIGKILL, nullptr, 0);
        ::kill(outer_, SIGKILL);  // our own unreaped child: the pid cannot have been reused
        ::waitpid(outer_, &status, 0);
      }
    }
    if (inner_pidfd_ >= 0) ::close(inner_pidfd_);
    // The cgroup is empty once B is reaped; its removal may lag a moment behind.
    for (auto it = created_dirs_.rbegin(); it != created_dirs_.rend(); ++it) {
      for (int i = 0; i < 200 && ::rmdir(it->c_str()) != 0 && errno == EBUSY; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }

  // Starts A and B. false with `error` (a reason to skip) on failure.
  bool start(std::string& error) {
    int up[2], down[2];
    if (::pipe2(up, O_CLOEXEC) != 0 || ::pipe2(down, O_CLOEXEC) != 0) {
      error = std::string("pipe: ") + std::strerror(errno);
      return false;
    }
    up_r_ = up[0];
    down_w_ = down[1];
    outer_ = ::fork();
    if (outer_ < 0) {
      error = std::string("fork: ") + std::strerror(errno);
      ::close(up[1]);
      ::close(down[0]);
      return false;
    }
    if (outer_ == 0) {
      ::close(up[0]);  // B must not hold the write end of `down`, or it never sees EOF
      ::close(down[1]);
      outer_main(up[1], down[0]);  // never returns
    }
    ::close(up[1]);
    ::close(down[0]);

    char tag = 0;
    int err = 0;
    if (!read_exact(up_r_, &tag, 1)) return fail(error, "outer child died before unsharing");
    if (tag == 'e') {
      read_exact(up_r_, &err, sizeof err);
      error = std::string("unshare(CLONE_NEWUSER|CLONE_NEWPID|CLONE_NEWNS|CLONE_NEWUTS): ") + std::strerror(err);
      return false;
    }
    // Root of the new user namespace is host uid/gid kBase (a privileged writer needs no
    // setgroups "deny").
    const std::string map = "0 " + std::to_string(kBase) + " 65536\n";
    const std::string proc = "/proc/" + std::to_string(outer_) + "/";
    if (!write_file(proc + "uid_map", map, error) || !write_file(proc + "gid_map", map, error)) return false;
    if (::write(down_w_, "g", 1) != 1) return fail(error, "write go");
    if (!read_exact(up_r_, &tag, 1)) return fail(error, "outer child died after the maps");
    if (tag == 'e') {
      std::int32_t step = 0;
      read_exact(up_r_, &step, sizeof step);
      read_exact(up_r_, &err, sizeof err);
      static const char* const kSteps[] = {"setresgid", "setresuid", "sethostname", "fork"};
      error = std::string(kSteps[step % 4]) + " in the new namespaces: " + std::strerror(err);
      return false;
    }
    pid_t inner = 0;
    if (tag != 'p' || !read_exact(up_r_, &inner, sizeof inner)) return fail(error, "no inner pid");
    inner_ = inner;
    // B cannot be reaped before we close `down`, so this pidfd is B's.
    inner_pidfd_ = static_cast<int>(::syscall(SYS_pidfd_open, inner_, 0));
    if (inner_pidfd_ < 0) return fail(error, std::string("pidfd_open: ") + std::strerror(errno));
    return true;
  }

  // Creates <root>/docker/<id> (and <root>/docker if need be) and moves B into it.
  bool place_in_cgroup(const std::string& root, const std::string& id, std::string& error) {
    const std::string parent = root + "/docker";
    if (::mkdir(parent.c_str(), 0755) == 0) created_dirs_.push_back(parent);
    else if (errno != EEXIST) return fail(error, parent + ": " + std::strerror(errno));
    const std::string dir = parent + "/" + id;
    if (::mkdir(dir.c_str(), 0755) != 0) return fail(error, dir + ": " + std::strerror(errno));
    created_dirs_.push_back(dir);
    return write_file(dir + "/cgroup.procs", std::to_string(inner_), error);
  }

  pid_t inner() const { return inner_; }
  int inner_pidfd() const { return inner_pidfd_; }

 private:
  static bool fail(std::string& error, const std::string& why) {
    error = why;
    return false;
  }

  [[noreturn]] static void outer_main(int up, int down) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    const auto report = [up](std::int32_t step) {
      const int err = errno;
      (void)!::write(up, "e", 1);
      if (step >= 0) (void)!::write(up, &step, sizeof step);
      (void)!::write(up, &err, sizeof err);
      ::_exit(1);
    };
    if (::unshare(CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWUTS) != 0) report(-1);
    if (::write(up, "u", 1) != 1) ::_exit(1);
    char go = 0;
    if (::read(down, &go, 1) != 1 || go != 'g') ::_exit(1);
    // Become root of the new user namespace (host kBase); drop the host's supplementary groups.
    if (::setresgid(0, 0, 0) != 0) report(0);
    (void)::setgroups(0, nullptr);
    if (::setresuid(0, 0, 0) != 0) report(1);
    if (::sethostname("ctr-live", 8) != 0) report(2);
    const pid_t inner = ::fork();
    if (inner < 0) report(3);
    if (inner == 0) {  // pid 1 of the new pid namespace
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      ::close(up);
      char c;
      while (::read(down, &c, 1) > 0) {
      }
      ::_exit(0);
    }
    (void)!::write(up, "p", 1);
    (void)!::write(up, &inner, sizeof inner);
    ::close(up);
    ::close(down);
    int status = 0;
    while (::waitpid(inner, &status, 0) < 0 && errno == EINTR) {
    }
    ::_exit(0);
  }

  pid_t outer_ = -1, inner_ = -1;
  int inner_pidfd_ = -1;
  int up_r_ = -1, down_w_ = -1;
  std::vector<std::string> created_dirs_;
};

// Runs the live scenario with the docker cgroup created under `root`.
void run_live(const std::string& root, const std::string& expect_line_prefix) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root (cgroup creation, uid maps)";
  const auto id = random_hex64();
  LiveContainer ctr;
  std::string error;
  if (!ctr.start(error)) GTEST_SKIP() << "cannot create namespaces: " << error;
  if (!ctr.place_in_cgroup(root, id, error)) GTEST_SKIP() << "cgroups not writable: " << error;

  // Collect as the handshake does, through the pidfd-verified /proc directory.
  auto proc = ProcDir::open(ctr.inner_pidfd(), ctr.inner(), error);
  ASSERT_TRUE(proc) << error;
  CollectLimits limits;
  limits.deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  const auto facts = collect_handshake_facts(*proc, limits);
  const auto status = bytes_from_json(facts.proc.value("status", nlohmann::json()));
  ASSERT_TRUE(status);
  const auto uid_map = proc->read("uid_map", 65536, error);
  const auto gid_map = proc->read("gid_map", 65536, error);
  ASSERT_TRUE(uid_map && gid_map) << error;
  nlohmann::json host = nlohmann::json::object();
  for (const char* ns : {"cgroup", "ipc", "mnt", "net", "pid", "time", "user", "uts"})
    host[ns] = ns_inode(std::string("/proc/self/ns/") + ns);

  EXPECT_NE(facts.cgroup.find(expect_line_prefix + "/docker/" + id), std::string::npos) << facts.cgroup;
  ContainerInputs in;
  in.cgroup = facts.cgroup;
  in.namespaces = facts.proc["namespaces"];
  in.host_namespaces = host;
  in.status = *status;
  in.uid_map = *uid_map;
  in.gid_map = *gid_map;
  in.hostname = facts.hostname;
  const auto c = identify_container(in);

  EXPECT_EQ(c.runtime, "docker") << facts.cgroup;
  EXPECT_EQ(c.id, id);
  EXPECT_EQ(c.cgroup_path, "/docker/" + id);
  EXPECT_EQ(c.namespaces_differ.pid, true);
  EXPECT_EQ(c.namespaces_differ.mnt, true);
  EXPECT_EQ(c.namespaces_differ.user, true);
  EXPECT_EQ(c.namespaces_differ.uts, true);
  EXPECT_EQ(c.namespaces_differ.net, false);
  EXPECT_EQ(c.namespaces_differ.ipc, false);
  EXPECT_TRUE(c.in_container);
  EXPECT_EQ(c.ns_pid, 1);
  EXPECT_EQ(c.ns_uid, 0);
  EXPECT_EQ(c.ns_gid, 0);
  EXPECT_EQ(c.hostname, "ctr-live");
  EXPECT_EQ(container_key(c), "docker:" + id);
  // From our side the process is kBase, and the map says so both ways.
  EXPECT_NE(status->find("\nUid:\t100000\t100000\t100000\t100000\n"), std::string::npos) << *status;
  EXPECT_EQ(map_id_from_namespace(0, *uid_map), LiveContainer::kBase);
  EXPECT_EQ(to_json(c)["key"], "docker:" + id);
}

}  // namespace

TEST(Live, DockerNamedCgroupV1PidsHierarchy) {
  const std::string root = "/sys/fs/cgroup/pids";
  if (!is_fs(root, CGROUP_SUPER_MAGIC)) GTEST_SKIP() << root << " is not a cgroup v1 hierarchy";
  run_live(root, ":pids:");
}

TEST(Live, DockerNamedCgroupV2Hierarchy) {
  std::string root;
  if (is_fs("/sys/fs/cgroup", CGROUP2_SUPER_MAGIC)) root = "/sys/fs/cgroup";
  else if (is_fs("/sys/fs/cgroup/unified", CGROUP2_SUPER_MAGIC)) root = "/sys/fs/cgroup/unified";
  else GTEST_SKIP() << "no cgroup v2 hierarchy mounted at /sys/fs/cgroup or /sys/fs/cgroup/unified";
  run_live(root, "0::");
}
