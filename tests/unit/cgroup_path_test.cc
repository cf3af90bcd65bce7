// /proc/<pid>/cgroup parsing and each runtime's cgroup layouts (cgroup_path.h), read through
// identify_container() in every cgroup layout (v1 hybrid, v1 legacy, v2).
#include <gtest/gtest.h>

#include "tests/unit/container_test_util.h"

using namespace coredumpd;
using namespace coredumpd::container_test;

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
  EXPECT_EQ(c.runtime, Runtime::Docker);
  EXPECT_EQ(c.id, kId);
  EXPECT_EQ(c.cgroup_path, "/docker/" + kId);
  EXPECT_EQ(c.unit, "");
  EXPECT_EQ(c.slice, "");
  EXPECT_TRUE(c.in_container);
  EXPECT_EQ(container_key(c), "docker:" + kId);
}

TEST(Docker, CgroupfsDriverEveryLayout) {
  for (const auto& c : all_layouts("/docker/" + kId)) {
    EXPECT_EQ(c.runtime, Runtime::Docker);
    EXPECT_EQ(c.id, kId);
    EXPECT_EQ(c.engine, Runtime::None);
    EXPECT_FALSE(c.monitor);
  }
}

TEST(Docker, SystemdDriverEveryLayout) {
  for (const auto& c : all_layouts("/system.slice/docker-" + kId + ".scope")) {
    EXPECT_EQ(c.runtime, Runtime::Docker);
    EXPECT_EQ(c.id, kId);
    EXPECT_EQ(c.unit, "docker-" + kId + ".scope");
    EXPECT_EQ(c.slice, "system.slice");
    EXPECT_EQ(c.cgroup_path, "/system.slice/docker-" + kId + ".scope");
  }
}

TEST(Docker, RootlessUnderUserManager) {
  const auto c = ident(unified("/user.slice/user-1000.slice/user@1000.service/user.slice/docker-" + kId + ".scope"));
  EXPECT_EQ(c.runtime, Runtime::Docker);
  EXPECT_EQ(c.id, kId);
  EXPECT_EQ(c.unit, "user@1000.service");
  EXPECT_EQ(c.slice, "user-1000.slice");
  EXPECT_EQ(c.user_unit, "docker-" + kId + ".scope");
  EXPECT_EQ(c.user_slice, "user.slice");
  EXPECT_EQ(c.owner_uid, 1000);
}

TEST(Docker, NestedDockerInDockerReportsInnermost) {
  const auto c = ident(hybrid("/docker/" + kId + "/docker/" + kId2));
  EXPECT_EQ(c.runtime, Runtime::Docker);
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
    EXPECT_NE(c.runtime, Runtime::Docker) << path;
    EXPECT_EQ(c.id, "") << path;
  }
  EXPECT_EQ(ident(unified("/system.slice/docker.service")).runtime, Runtime::Systemd);
}

// ---------------------------------------------------------------------------------------------
// podman

TEST(Podman, SystemdDriverMachineSlice) {
  for (const auto& c : all_layouts("/machine.slice/libpod-" + kId + ".scope")) {
    EXPECT_EQ(c.runtime, Runtime::Podman);
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
  EXPECT_EQ(c.runtime, Runtime::Podman);
  EXPECT_EQ(c.id, kId);
  EXPECT_EQ(c.user_unit, "libpod-" + kId + ".scope");
  EXPECT_EQ(c.owner_uid, 1000);
}

TEST(Podman, ConmonIsTheMonitorNotThePayload) {
  const auto c = ident(unified("/machine.slice/libpod-conmon-" + kId + ".scope"));
  EXPECT_EQ(c.runtime, Runtime::Podman);
  EXPECT_EQ(c.id, kId);
  EXPECT_TRUE(c.monitor);
  EXPECT_FALSE(c.in_container);  // conmon runs on the host
  EXPECT_EQ(container_key(c), "podman:" + kId);
}

TEST(Podman, CgroupfsDriverAndPods) {
  for (const auto& c : all_layouts("/libpod_parent/libpod-" + kId)) {
    EXPECT_EQ(c.runtime, Runtime::Podman);
    EXPECT_EQ(c.id, kId);
  }
  const auto pod = ident(unified("/machine.slice/machine-libpod_pod_" + kId2 + ".slice/libpod-" + kId + ".scope"));
  EXPECT_EQ(pod.runtime, Runtime::Podman);
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
    EXPECT_EQ(c.runtime, Runtime::Containerd);
    EXPECT_EQ(c.id, kId);
    EXPECT_EQ(container_key(c), "containerd:" + kId);
  }
  const auto nerdctl = ident(unified("/system.slice/nerdctl-" + kId + ".scope"));
  EXPECT_EQ(nerdctl.runtime, Runtime::Containerd);
  EXPECT_EQ(nerdctl.id, kId);
  for (const auto& c : all_layouts("/default/" + kId)) {
    EXPECT_EQ(c.runtime, Runtime::Containerd);
    EXPECT_EQ(c.id, kId);
  }
  // The daemon itself (and its shims) are a plain service.
  const auto daemon = ident(hybrid("/system.slice/containerd.service"));
  EXPECT_EQ(daemon.runtime, Runtime::Systemd);
  EXPECT_EQ(daemon.unit, "containerd.service");
  EXPECT_FALSE(daemon.in_container);
}

TEST(CriO, ScopeAndConmon) {
  for (const auto& c : all_layouts("/system.slice/crio-" + kId + ".scope")) {
    EXPECT_EQ(c.runtime, Runtime::CriO);
    EXPECT_EQ(c.id, kId);
    EXPECT_FALSE(c.monitor);
  }
  const auto conmon = ident(unified("/system.slice/crio-conmon-" + kId + ".scope"));
  EXPECT_EQ(conmon.runtime, Runtime::CriO);
  EXPECT_TRUE(conmon.monitor);
  EXPECT_EQ(conmon.id, kId);
}

// ---------------------------------------------------------------------------------------------
// Kubernetes

TEST(Kubernetes, CgroupfsDriverBurstableBestEffortGuaranteed) {
  for (const std::string qos : {"/burstable", "/besteffort", ""}) {
    for (const auto& c : all_layouts("/kubepods" + qos + "/pod" + kPodUid + "/" + kId)) {
      EXPECT_EQ(c.runtime, Runtime::Kubernetes) << qos;
      EXPECT_EQ(c.pod_uid, kPodUid);
      EXPECT_EQ(c.name, kPodUid);
      EXPECT_EQ(c.id, kId);
      EXPECT_EQ(c.engine, Runtime::None);  // a bare id does not say
      EXPECT_TRUE(c.in_container);
      EXPECT_EQ(container_key(c), "kubernetes:" + kPodUid);
    }
  }
  const auto crio = ident(hybrid("/kubepods/burstable/pod" + kPodUid + "/crio-" + kId));
  EXPECT_EQ(crio.engine, Runtime::CriO);
  EXPECT_EQ(crio.id, kId);
}

TEST(Kubernetes, SystemdDriverWithEachEngine) {
  const std::string pod_slice = "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + kPodUidUnderscored + ".slice/";
  const struct {
    std::string scope;
    Runtime engine;
    bool monitor;
  } cases[] = {{"cri-containerd-" + kId + ".scope", Runtime::Containerd, false},
               {"docker-" + kId + ".scope", Runtime::Docker, false},
               {"crio-" + kId + ".scope", Runtime::CriO, false},
               {"crio-conmon-" + kId + ".scope", Runtime::CriO, true}};
  for (const auto& k : cases) {
    for (const auto& c : all_layouts(pod_slice + k.scope)) {
      EXPECT_EQ(c.runtime, Runtime::Kubernetes) << k.scope;
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
  EXPECT_EQ(guaranteed.runtime, Runtime::Kubernetes);
  EXPECT_EQ(guaranteed.pod_uid, kPodUid);
  EXPECT_EQ(guaranteed.engine, Runtime::Containerd);

  // kind: the node is a docker container, kubelet's cgroup root is /kubelet.
  const auto kind = ident(unified("/system.slice/docker-" + kId2 + ".scope/kubelet.slice/kubelet-kubepods.slice/"
                                  "kubelet-kubepods-besteffort.slice/kubelet-kubepods-besteffort-pod" +
                                  kPodUidUnderscored + ".slice/cri-containerd-" + kId + ".scope"));
  EXPECT_EQ(kind.runtime, Runtime::Kubernetes);
  EXPECT_EQ(kind.id, kId);
  EXPECT_EQ(kind.pod_uid, kPodUid);
  EXPECT_EQ(kind.unit, "docker-" + kId2 + ".scope");  // systemd's view: the node's scope

  // kubelet with the systemd driver, containerd with cgroupfs: the cgroupsPath becomes a directory.
  const auto mixed = ident(unified("/system.slice/containerd.service/kubepods-besteffort-pod" + kPodUidUnderscored +
                                   ".slice:cri-containerd:" + kId));
  EXPECT_EQ(mixed.runtime, Runtime::Kubernetes);
  EXPECT_EQ(mixed.engine, Runtime::Containerd);
  EXPECT_EQ(mixed.pod_uid, kPodUid);
  EXPECT_EQ(mixed.id, kId);
  EXPECT_EQ(mixed.unit, "containerd.service");

  // A process in the pod cgroup itself (no container below).
  const auto pod_level = ident(hybrid("/kubepods/besteffort/pod" + kPodUid));
  EXPECT_EQ(pod_level.runtime, Runtime::Kubernetes);
  EXPECT_EQ(pod_level.pod_uid, kPodUid);
  EXPECT_EQ(pod_level.id, "");
  // "pod..." outside kubepods is nothing.
  EXPECT_EQ(ident(unified("/foo/pod" + kPodUid + "/" + kId)).runtime, Runtime::None);
  // Static pods have hash UIDs.
  EXPECT_EQ(ident(unified("/kubepods/burstable/pod6b0d1c2ab1e2f3a4b5c6d7e8f9a0b1c2/" + kId)).pod_uid,
            "6b0d1c2ab1e2f3a4b5c6d7e8f9a0b1c2");
}

// ---------------------------------------------------------------------------------------------
// LXC

TEST(Lxc, AllGenerations) {
  for (const auto& c : all_layouts("/lxc/web01")) {
    EXPECT_EQ(c.runtime, Runtime::Lxc);
    EXPECT_EQ(c.name, "web01");
    EXPECT_EQ(c.id, "");
    EXPECT_TRUE(c.in_container);
    EXPECT_EQ(container_key(c), "lxc:web01");
  }
  const auto payload = ident(unified("/lxc.payload.web-01/system.slice/nginx.service"));
  EXPECT_EQ(payload.runtime, Runtime::Lxc);
  EXPECT_EQ(payload.name, "web-01");
  EXPECT_FALSE(payload.monitor);
  EXPECT_EQ(payload.unit, "");  // not a systemd path from the host's side
  const auto lxd = ident(hybrid("/lxc.payload/proj_web01/init.scope"));
  EXPECT_EQ(lxd.name, "proj_web01");
  const auto monitor = ident(unified("/lxc.monitor.web01"));
  EXPECT_EQ(monitor.runtime, Runtime::Lxc);
  EXPECT_EQ(monitor.name, "web01");
  EXPECT_TRUE(monitor.monitor);
  EXPECT_FALSE(monitor.in_container);
  EXPECT_TRUE(ident(unified("/lxc.monitor/web01")).monitor);
  EXPECT_EQ(ident(unified("/lxc.payload.")).runtime, Runtime::None);
  EXPECT_EQ(ident(unified("/lxc")).runtime, Runtime::None);
}

// ---------------------------------------------------------------------------------------------
// systemd-nspawn and machined

TEST(Nspawn, MachineScopeWithEscapedName) {
  for (const auto& c : all_layouts("/machine.slice/machine-my\\x2dbox.scope/payload/system.slice/nginx.service")) {
    EXPECT_EQ(c.runtime, Runtime::SystemdNspawn);
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
  EXPECT_EQ(supervisor.runtime, Runtime::SystemdNspawn);
  EXPECT_TRUE(supervisor.monitor);
  EXPECT_FALSE(supervisor.in_container);
}

TEST(Nspawn, KeepUnitTemplateService) {
  // machinectl start: systemd-nspawn@.service runs nspawn --keep-unit; payload and supervisor below.
  for (const auto& c : all_layouts("/machine.slice/systemd-nspawn@build01.service/payload/init.scope")) {
    EXPECT_EQ(c.runtime, Runtime::SystemdNspawn);
    EXPECT_EQ(c.name, "build01");
    EXPECT_EQ(c.unit, "systemd-nspawn@build01.service");
    EXPECT_EQ(c.slice, "machine.slice");
    EXPECT_FALSE(c.monitor);
    EXPECT_TRUE(c.in_container);
    EXPECT_EQ(container_key(c), "nspawn:build01");
  }
  const auto supervisor = ident(unified("/machine.slice/systemd-nspawn@build01.service/supervisor"));
  EXPECT_EQ(supervisor.runtime, Runtime::SystemdNspawn);
  EXPECT_TRUE(supervisor.monitor);
  EXPECT_FALSE(supervisor.in_container);
  EXPECT_EQ(ident(unified("/system.slice/systemd-nspawn@.service")).runtime, Runtime::Systemd);
}

TEST(Nspawn, LibvirtMachinesAreTold) {
  const auto qemu = ident(unified("/machine.slice/machine-qemu\\x2d3\\x2dwin\\x2d11.scope/libvirt/emulator"));
  EXPECT_EQ(qemu.runtime, Runtime::LibvirtQemu);
  EXPECT_EQ(qemu.name, "win-11");
  EXPECT_FALSE(qemu.in_container);  // a VM's emulator runs on the host
  EXPECT_EQ(container_key(qemu), "libvirt-qemu:win-11");
  const auto lxc = ident(unified("/machine.slice/machine-lxc\\x2d4242\\x2dweb.scope"));
  EXPECT_EQ(lxc.runtime, Runtime::LibvirtLxc);
  EXPECT_EQ(lxc.name, "web");
  EXPECT_TRUE(lxc.in_container);
  // "qemu-x..." that is not libvirt's pattern is an ordinary machine.
  EXPECT_EQ(ident(unified("/machine.slice/machine-qemu\\x2dbox.scope")).runtime, Runtime::SystemdNspawn);
}
