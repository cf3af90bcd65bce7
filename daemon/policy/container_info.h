// What container identification concludes about a crashing process (ContainerInfo), the runtime
// that runs it (Runtime), and the forms it is written in: the container key and the record's JSON.
//
// All strings taken from the process (cgroup paths, names, hostname) are untrusted bytes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace coredumpd {

/// Who runs a process, as recognised from its cgroup path (cgroup_path.h).
enum class Runtime {
  None,           ///< nothing recognised: the host, or a container no runtime left its mark for
  Docker,         ///< "docker" (moby)
  Podman,         ///< "podman" (libpod)
  Containerd,     ///< "containerd" (its CRI plugin, nerdctl, ctr)
  CriO,           ///< "cri-o"
  Kubernetes,     ///< "kubernetes": a pod's container; the CRI engine is ContainerInfo::engine
  Lxc,            ///< "lxc" (LXC, LXD, Incus)
  SystemdNspawn,  ///< "systemd-nspawn", or anything else registered with systemd-machined
  LibvirtLxc,     ///< "libvirt-lxc": a libvirt LXC domain
  LibvirtQemu,    ///< "libvirt-qemu": a VM's emulator process on the host, not a container
  Systemd,        ///< "systemd": a plain systemd unit, not a container
};

/// The runtime's name as records and rules' "runtime" conditions spell it ("docker", "cri-o", ...);
/// "" for Runtime::None.
std::string_view runtime_name(Runtime r);

/// The runtime named `name` (runtime_name()'s inverse; "" gives Runtime::None); std::nullopt for
/// any other text.
std::optional<Runtime> runtime_from_name(std::string_view name);

/// True for the runtimes that run containers (Docker, Podman, Containerd, CriO, Kubernetes, Lxc,
/// SystemdNspawn, LibvirtLxc).
bool is_container_runtime(Runtime r);

/// Whether each namespace of the process differs from the host's (compared by nsfs inode number).
/// std::nullopt: unknown, because the inode was missing (or not a number) on either side.
struct NamespacesDiffer {
  std::optional<bool> cgroup, ipc, mnt, net, pid, time, user, uts;
};

/// What identify_container() (container.h) concluded about a process.
struct ContainerInfo {
  /// Who runs the process; Runtime::None for the host, or nothing recognisable.
  Runtime runtime = Runtime::None;
  /// For Runtime::Kubernetes: the engine behind the kubelet's CRI, from the container's cgroup
  /// name: Containerd, CriO, Docker, or None when the cgroup name does not say (kubelet's
  /// cgroupfs driver names containers by bare id). None for every other runtime.
  Runtime engine = Runtime::None;
  /// Full container id: 64 lower-case hex digits for docker, podman, containerd, cri-o and
  /// kubernetes containers; empty for LXC, nspawn, libvirt, systemd units and pod-level cgroups.
  std::string id;
  /// Human name where the cgroup path carries one: the machine name for systemd-nspawn (unescaped
  /// from `machine-<name>.scope`), the container name for LXC, the domain name for libvirt, and the
  /// pod UID for Kubernetes (the pod's name is not in the cgroup path). Empty otherwise.
  std::string name;
  /// Kubernetes pod UID, dashes restored ("0b8e2b6a-...") when kubelet's systemd driver wrote them
  /// as underscores; or the podman pod id (64 hex) for a container of a podman pod. Else empty.
  std::string pod_uid;
  /// True when the process is the runtime's per-container monitor rather than the payload: podman's
  /// and CRI-O's conmon (`libpod-conmon-<id>`, `crio-conmon-<id>`), LXC's monitor
  /// (`lxc.monitor.<name>`), systemd-nspawn's supervisor (`machine-<name>.scope/supervisor`).
  /// A monitor runs on the host: it is not `in_container` unless its namespaces say otherwise.
  bool monitor = false;
  /// systemd's view of the chosen cgroup path (SystemdUnits in systemd_unit.h): the unit and the
  /// slice ("nginx.service", "system.slice").
  std::string unit, slice;
  /// Inside a user manager or a session scope: the unit and slice below it (SystemdUnits).
  std::string user_unit, user_slice;
  /// The uid of a `user-<uid>.slice` slice (sd_pid_get_owner_uid()), when there is one.
  std::optional<std::int64_t> owner_uid;
  /// The cgroup path the answer came from. The first path that names a container wins, trying in
  /// order: the cgroup v2 line ("0::/path"), the v1 `name=systemd` line, then the v1 controller
  /// lines in file order. If none names a container, it is the first of those that is neither empty
  /// nor "/"; "/" when every line is at the root; "" when the text had no valid line.
  std::string cgroup_path;
  NamespacesDiffer namespaces_differ;
  /// The process's pid namespace inode, when collected (names an unrecognised container's key).
  std::optional<std::uint64_t> pidns;
  /// True when a container runtime was recognised for the payload (is_container_runtime(), and the
  /// process is not a monitor), or when both the pid and mount namespaces differ from the host's
  /// (an unrecognised container: bubblewrap, unshare, an unknown engine). Differing mount
  /// namespaces alone do not count: systemd's PrivateTmp= and friends do that.
  bool in_container = false;
  /// The process id inside its innermost pid namespace (last field of NStgid:, else NSpid:; the
  /// Tgid: when neither exists and the pid namespace is the host's).
  std::optional<std::int64_t> ns_pid;
  /// The real uid/gid as seen inside the process's user namespace: status' Uid:/Gid: (which we read
  /// from the host side) mapped through the inverse of uid_map/gid_map. The host value when the
  /// user namespace is the host's and no map was given; std::nullopt when unmapped or unknown.
  std::optional<std::int64_t> ns_uid, ns_gid;
  /// The hostname in the process's UTS namespace, as given.
  std::string hostname;
};

/// A stable key for per-container quotas, rate limits and filters:
///   "docker:<id>", "podman:<id>", "containerd:<id>", "cri-o:<id>" (a monitor shares its
///   container's key); "kubernetes:<pod uid>" (per pod: container ids change at every restart, the
///   pod UID does not, so a crash-looping pod keeps one key); "lxc:<name>", "nspawn:<name>",
///   "libvirt-lxc:<name>", "libvirt-qemu:<name>"; "systemd:<unit>"; for an unrecognised container
///   "pidns:<inode>" (or "cgroup:<path>" when the inode is unknown); "host" otherwise.
std::string container_key(const ContainerInfo& info);

/// The info as a JSON object with the field names of ContainerInfo (runtime and engine by
/// runtime_name()); optionals are null; byte strings go through bytes_to_json() (an array of byte
/// values when not UTF-8), and "key" holds container_key().
nlohmann::json to_json(const ContainerInfo& info);

}  // namespace coredumpd
