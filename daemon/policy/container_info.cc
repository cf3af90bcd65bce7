#include "daemon/policy/container_info.h"

#include <array>
#include <utility>

#include "store/dump_record.h"

namespace coredumpd {

namespace {

using nlohmann::json;

// Every runtime with its name, in enum order.
constexpr std::array<std::pair<Runtime, std::string_view>, 11> kRuntimeNames = {{
    {Runtime::None, ""},
    {Runtime::Docker, "docker"},
    {Runtime::Podman, "podman"},
    {Runtime::Containerd, "containerd"},
    {Runtime::CriO, "cri-o"},
    {Runtime::Kubernetes, "kubernetes"},
    {Runtime::Lxc, "lxc"},
    {Runtime::SystemdNspawn, "systemd-nspawn"},
    {Runtime::LibvirtLxc, "libvirt-lxc"},
    {Runtime::LibvirtQemu, "libvirt-qemu"},
    {Runtime::Systemd, "systemd"},
}};

json optional_json(const auto& v) { return v ? json(*v) : json(nullptr); }

json namespaces_to_json(const NamespacesDiffer& n) {
  return {{"cgroup", optional_json(n.cgroup)}, {"ipc", optional_json(n.ipc)}, {"mnt", optional_json(n.mnt)},
          {"net", optional_json(n.net)},       {"pid", optional_json(n.pid)}, {"time", optional_json(n.time)},
          {"user", optional_json(n.user)},     {"uts", optional_json(n.uts)}};
}

}  // namespace

std::string_view runtime_name(Runtime r) {
  for (const auto& [runtime, name] : kRuntimeNames)
    if (runtime == r) return name;
  return "";
}

std::optional<Runtime> runtime_from_name(std::string_view name) {
  for (const auto& [runtime, n] : kRuntimeNames)
    if (n == name) return runtime;
  return std::nullopt;
}

bool is_container_runtime(Runtime r) {
  switch (r) {
    case Runtime::Docker:
    case Runtime::Podman:
    case Runtime::Containerd:
    case Runtime::CriO:
    case Runtime::Kubernetes:
    case Runtime::Lxc:
    case Runtime::SystemdNspawn:
    case Runtime::LibvirtLxc:
      return true;
    case Runtime::None:
    case Runtime::LibvirtQemu:
    case Runtime::Systemd:
      return false;
  }
  return false;
}

std::string container_key(const ContainerInfo& info) {
  const auto r = info.runtime;
  const std::string name(runtime_name(r));
  const bool by_id = r == Runtime::Docker || r == Runtime::Podman || r == Runtime::Containerd || r == Runtime::CriO;
  if (by_id && !info.id.empty()) return name + ":" + info.id;
  if (r == Runtime::Kubernetes && !info.pod_uid.empty()) return "kubernetes:" + info.pod_uid;
  if (r == Runtime::SystemdNspawn && !info.name.empty()) return "nspawn:" + info.name;
  const bool by_name = r == Runtime::Lxc || r == Runtime::LibvirtLxc || r == Runtime::LibvirtQemu;
  if (by_name && !info.name.empty()) return name + ":" + info.name;
  if (r == Runtime::Systemd && !info.unit.empty()) return "systemd:" + info.unit;
  if (info.in_container) {
    if (info.pidns) return "pidns:" + std::to_string(*info.pidns);
    return "cgroup:" + info.cgroup_path;
  }
  return "host";
}

json to_json(const ContainerInfo& info) {
  json j = {
      {"runtime", runtime_name(info.runtime)},
      {"engine", runtime_name(info.engine)},
      {"id", info.id},
      {"name", bytes_to_json(info.name)},
      {"pod_uid", info.pod_uid},
      {"monitor", info.monitor},
      {"unit", bytes_to_json(info.unit)},
      {"slice", bytes_to_json(info.slice)},
      {"user_unit", bytes_to_json(info.user_unit)},
      {"user_slice", bytes_to_json(info.user_slice)},
      {"cgroup_path", bytes_to_json(info.cgroup_path)},
      {"in_container", info.in_container},
      {"hostname", bytes_to_json(info.hostname)},
      {"key", bytes_to_json(container_key(info))},
  };
  j["owner_uid"] = optional_json(info.owner_uid);
  j["namespaces_differ"] = namespaces_to_json(info.namespaces_differ);
  j["pidns"] = optional_json(info.pidns);
  j["ns_pid"] = optional_json(info.ns_pid);
  j["ns_uid"] = optional_json(info.ns_uid);
  j["ns_gid"] = optional_json(info.ns_gid);
  return j;
}

}  // namespace coredumpd
