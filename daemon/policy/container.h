// Container identification: which container (if any) a crashing process ran in.
//
// Everything here is pure: it interprets texts the handshake already collected (/proc/<pid>/cgroup,
// namespace inodes, status, uid_map/gid_map, the UTS hostname) and does no I/O, so it can be tested
// with canned inputs and can never stall the handshake.
//
// The container is recognised from the cgroup path, where every engine leaves its mark following its
// own naming convention (documented at identify_cgroup_path()); the namespace inodes say whether the
// process is isolated from the host at all, whatever the cgroup says.
//
// All strings taken from the process (cgroup paths, names, hostname) are untrusted bytes. The kernel
// forbids '\n' in cgroup names (cgroup_mkdir() returns EINVAL), so a cgroup path cannot forge extra
// lines of /proc/<pid>/cgroup, but it may contain ':' and any other byte.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace coredumpd {

/// Whether each namespace of the process differs from the host's (compared by nsfs inode number).
/// std::nullopt: unknown, because the inode was missing (or not a number) on either side.
struct NamespacesDiffer {
  std::optional<bool> cgroup, ipc, mnt, net, pid, time, user, uts;
};

/// What identify_container() concluded about a process.
struct ContainerInfo {
  /// Who runs the process: "docker", "podman", "containerd", "cri-o", "kubernetes" (a pod's
  /// container; the CRI engine is in `engine`), "lxc", "systemd-nspawn", "libvirt-lxc",
  /// "libvirt-qemu" (a VM's emulator process on the host, not a container), "systemd" (a plain
  /// systemd unit, not a container) or "" (the host, or nothing recognisable).
  std::string runtime;
  /// For runtime "kubernetes": the engine behind the kubelet's CRI, from the container's cgroup
  /// name: "containerd", "cri-o", "docker", or "" when the cgroup name does not say (kubelet's
  /// cgroupfs driver names containers by bare id). Empty for every other runtime.
  std::string engine;
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
  /// systemd's view of the chosen cgroup path, as sd_pid_get_unit()/sd_pid_get_slice() compute it:
  /// `unit` is the first non-slice component if it is a valid unit name ("nginx.service",
  /// "docker-<id>.scope", "session-3.scope"); `slice` is the right-most of the slices before it
  /// ("system.slice", "user-1000.slice"), "-.slice" for a unit at the root. Both empty when the
  /// path starts with neither (e.g. docker's cgroupfs `/docker/<id>`); `slice` alone for a path of
  /// slices only (a Kubernetes pod slice).
  std::string unit, slice;
  /// Inside a user manager (`user@<uid>.service`) or a session scope: the unit and slice below it,
  /// as sd_pid_get_user_unit()/sd_pid_get_user_slice() compute them ("app-firefox-1234.scope").
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
  /// True when a container runtime was recognised for the payload (runtime is not "", "systemd" or
  /// "libvirt-qemu", and the process is not a monitor), or when both the pid and mount namespaces
  /// differ from the host's (an unrecognised container: bubblewrap, unshare, an unknown engine).
  /// Differing mount namespaces alone do not count: systemd's PrivateTmp= and friends do that.
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

/// The inputs of identify_container(), named so that the texts cannot be passed in the wrong order.
/// Empty means "not collected".
struct ContainerInputs {
  std::string_view cgroup;  ///< /proc/<pid>/cgroup text (HandshakeFacts::cgroup)
  /// The process's namespace inodes, {"pid": 4026531836, ...} (HandshakeFacts::proc["namespaces"]).
  nlohmann::json namespaces = nlohmann::json::object();
  /// The host's, same shape. Read them from /proc/1/ns, not /proc/self/ns: a daemon sandboxed by
  /// systemd (PrivateTmp=, ProtectSystem=...) has a mount namespace of its own.
  nlohmann::json host_namespaces = nlohmann::json::object();
  std::string_view status;   ///< /proc/<pid>/status text (NStgid:, NSpid:, Tgid:, Uid:, Gid: lines)
  std::string_view uid_map;  ///< /proc/<pid>/uid_map as read from the host's user namespace
  std::string_view gid_map;  ///< /proc/<pid>/gid_map, likewise
  std::string_view hostname; ///< HandshakeFacts::hostname
};

/// Identifies the container of a process from what the handshake collected. Pure; never throws on
/// any input (malformed texts simply yield less: an unrecognised path gives runtime "", a bad map
/// gives ns_uid std::nullopt).
ContainerInfo identify_container(const ContainerInputs& in);

/// A stable key for per-container quotas, rate limits and filters:
///   "docker:<id>", "podman:<id>", "containerd:<id>", "cri-o:<id>" (a monitor shares its
///   container's key); "kubernetes:<pod uid>" (per pod: container ids change at every restart, the
///   pod UID does not, so a crash-looping pod keeps one key); "lxc:<name>", "nspawn:<name>",
///   "libvirt-lxc:<name>", "libvirt-qemu:<name>"; "systemd:<unit>"; for an unrecognised container
///   "pidns:<inode>" (or "cgroup:<path>" when the inode is unknown); "host" otherwise.
std::string container_key(const ContainerInfo& info);

/// The info as a JSON object with the field names of ContainerInfo; optionals are null; byte
/// strings go through bytes_to_json() (an array of byte values when not UTF-8), and "key" holds
/// container_key().
nlohmann::json to_json(const ContainerInfo& info);

/// True for the runtimes that run containers ("docker", "podman", "containerd", "cri-o",
/// "kubernetes", "lxc", "systemd-nspawn", "libvirt-lxc").
bool is_container_runtime(std::string_view runtime);

// ---- Pieces, exposed for tests and for other readers of the same texts. ----

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

/// What one cgroup path says: fills runtime, engine, id, name, pod_uid, monitor, unit, slice,
/// user_unit, user_slice and owner_uid of a ContainerInfo, leaving the rest empty. Recognised, by component, the innermost match winning (docker-in-docker, containers in
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
///    registers "qemu-<n>-<domain>" and "lxc-<n>-<domain>" machines: runtime "libvirt-qemu" and
///    "libvirt-lxc" with name <domain>.
///  - systemd units: see ContainerInfo::unit; runtime "systemd" when a unit is found and nothing
///    above matched.
/// 64-hex ids must be exactly 64 lower-case hex digits; names must be non-empty.
ContainerInfo identify_cgroup_path(std::string_view path);

/// Undoes systemd's unit name escaping (unit_name_escape()): every `\xHH` becomes the byte 0xHH
/// (except NUL, left as is); everything else is copied.
std::string systemd_unescape(std::string_view s);

/// One line of a uid_map or gid_map: ids [inside, inside+count) of the process's user namespace are
/// ids [outside, outside+count) of the reader's (user_namespaces(7)).
struct IdExtent {
  std::uint32_t inside = 0;
  std::uint32_t outside = 0;
  std::uint32_t count = 0;
};

/// Parses and validates a uid_map/gid_map text with the kernel's own rules (map_write() in
/// kernel/user_namespace.c): at most 340 lines of three unsigned 32-bit decimal numbers separated
/// by blanks (leading and trailing blanks allowed, as /proc pads them), each line ending in '\n'
/// except perhaps the last; count > 0; neither start is 4294967295; neither range wraps past 2^32;
/// no two extents overlap on either side. "" is valid (no mapping written yet: maps nothing).
/// std::nullopt if the text breaks any rule.
std::optional<std::vector<IdExtent>> parse_id_map(std::string_view text);

/// The id inside the namespace for `host_id` (an id of the map reader's namespace), through the
/// inverse of the map. std::nullopt if the map is invalid, the id is out of range
/// (not 0..4294967294) or unmapped.
std::optional<std::int64_t> map_id_to_namespace(std::int64_t host_id, std::string_view id_map);

/// The reverse: the host id (the reader's) for an id inside the namespace. Same failure cases.
std::optional<std::int64_t> map_id_from_namespace(std::int64_t ns_id, std::string_view id_map);

}  // namespace coredumpd
