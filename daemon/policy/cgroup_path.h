// /proc/<pid>/cgroup and what its paths say: each container runtime leaves its mark in the cgroup
// path following its own naming convention (documented at identify_cgroup_path()). Pure: it reads
// only the texts given.
//
// The kernel forbids '\n' in cgroup names (cgroup_mkdir() returns EINVAL), so a cgroup path cannot
// forge extra lines of /proc/<pid>/cgroup, but it may contain ':' and any other byte.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "daemon/policy/container_info.h"

namespace coredumpd {

/// One line of /proc/<pid>/cgroup: "hierarchy-ID:controller-list:cgroup-path" (cgroups(7)).
struct CgroupLine {
  std::string hierarchy;    ///< "0" for the v2 line
  std::string controllers;  ///< "" for the v2 line, "cpu,cpuacct", "name=systemd", ...
  std::string path;         ///< starts with '/'; may contain ':'
};

/// Parses a /proc/<pid>/cgroup text. A line is valid if its hierarchy is decimal digits, it has a
/// second ':' and its path starts with '/'; other lines are skipped. The path is everything after
/// the second ':' (cgroup names may contain ':'), minus the " (deleted)" the kernel appends to the
/// v2 line of a removed cgroup.
std::vector<CgroupLine> parse_cgroup_file(std::string_view text);

/// What one cgroup path says: fills runtime, engine, id, name, pod_uid, monitor, and the
/// SystemdUnits fields (unit, slice, user_unit, user_slice, owner_uid) of a ContainerInfo, leaving
/// the rest empty. Recognised, by component, the innermost match winning (docker-in-docker, containers in
/// an nspawn machine, kind's nodes):
///  - docker (moby): cgroupfs driver `/docker/<64hex>` (libcontainer's default cgroup parent
///    "/docker"); systemd driver `docker-<64hex>.scope` (scope prefix "docker", under system.slice,
///    or a user slice when rootless).
///  - podman (libpod): systemd driver `libpod-<64hex>.scope`, possibly followed by `/container`
///    (crun's split of the scope); cgroupfs driver `/libpod_parent/libpod-<64hex>`; conmon in
///    `libpod-conmon-<64hex>.scope` (monitor); pods in `machine-libpod_pod_<64hex>.slice` (or
///    `user-libpod_pod_<64hex>.slice` when rootless), which sets pod_uid.
///  - containerd: CRI plugin's systemd cgroup `cri-containerd-<64hex>.scope`, nerdctl's
///    `nerdctl-<64hex>.scope`, and containerd's default cgroupfs path `/<namespace>/<id>` for its
///    "default" namespace (ctr, nerdctl): `/default/<64hex>`.
///  - cri-o: `crio-<64hex>.scope` (or without ".scope" under cgroupfs), conmon in
///    `crio-conmon-<64hex>.scope` (monitor).
///  - kubernetes (kubelet's pod cgroups, pkg/kubelet/cm): cgroupfs
///    `/kubepods[/burstable|/besteffort]/pod<uid>/<container>`; systemd driver
///    `/kubepods.slice[/kubepods-<qos>.slice]/kubepods[-<qos>]-pod<uid with '-' as '_'>.slice/
///    <container>`, also under another cgroup root (kind: `kubelet-kubepods-...-pod<uid>.slice`).
///    <container> is any of the engine forms above (which sets `engine`) or a bare 64-hex id. Also the
///    form left when kubelet uses the systemd driver but containerd does not
///    (`.../containerd.service/kubepods-<qos>-pod<uid>.slice:cri-containerd:<64hex>`).
///  - lxc: `/lxc/<name>` (LXC 1.x-3.x), `/lxc.payload.<name>` and `/lxc.payload/<name>` (LXC 4+,
///    LXD, Incus), monitor in `/lxc.monitor.<name>` or `/lxc.monitor/<name>`.
///  - systemd-nspawn, and anything registered with systemd-machined: `machine-<name>.scope`
///    (machined's scope name: "machine-" + unit_name_escape(name) + ".scope", so '-' is `\x2d`),
///    the payload in it or under `payload/`, nspawn itself under `supervisor/` (monitor); with
///    --keep-unit (machinectl start) `systemd-nspawn@<name>.service` with the same subgroups
///    (create_subcgroup() in src/nspawn/nspawn-cgroup.c). libvirt
///    registers "qemu-<n>-<domain>" and "lxc-<n>-<domain>" machines: Runtime::LibvirtQemu and
///    Runtime::LibvirtLxc with name <domain>.
///  - systemd units: see SystemdUnits; Runtime::Systemd when a unit is found and nothing above
///    matched.
/// 64-hex ids must be exactly 64 lower-case hex digits; names must be non-empty.
ContainerInfo identify_cgroup_path(std::string_view path);

}  // namespace coredumpd
