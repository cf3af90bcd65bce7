#include "daemon/policy/container.h"

#include "daemon/policy/proc_text.h"

namespace coredumpd {

namespace {

using std::string_view;

// ---- namespaces ----

std::optional<std::uint64_t> inode_of(const nlohmann::json& j, const char* key) {
  if (!j.is_object()) return std::nullopt;
  const auto it = j.find(key);
  if (it == j.end()) return std::nullopt;
  if (it->is_number_unsigned()) return it->get<std::uint64_t>();
  if (it->is_number_integer() && it->get<std::int64_t>() >= 0) return static_cast<std::uint64_t>(it->get<std::int64_t>());
  return std::nullopt;
}

std::optional<bool> differs(const ContainerInputs& in, const char* key) {
  const auto mine = inode_of(in.namespaces, key);
  const auto host = inode_of(in.host_namespaces, key);
  if (!mine || !host) return std::nullopt;
  return *mine != *host;
}

// ---- status ----

// The value of the "Key:" line of a status text (without the key and colon).
std::optional<string_view> status_field(string_view status, string_view key) {
  while (!status.empty()) {
    const auto nl = status.find('\n');
    const auto line = status.substr(0, nl);
    if (line.size() > key.size() && line.starts_with(key) && line[key.size()] == ':') return line.substr(key.size() + 1);
    if (nl == string_view::npos) break;
    status.remove_prefix(nl + 1);
  }
  return std::nullopt;
}

// The blank-separated decimal numbers of a status value; std::nullopt if any is not one.
std::optional<std::vector<std::int64_t>> status_numbers(string_view value) {
  std::vector<std::int64_t> out;
  while (true) {
    const auto start = value.find_first_not_of(" \t");
    if (start == string_view::npos) break;
    value.remove_prefix(start);
    const auto end = value.find_first_of(" \t");
    const auto n = proc_text::parse_decimal(value.substr(0, end));
    if (!n) return std::nullopt;
    out.push_back(*n);
    if (end == string_view::npos) break;
    value.remove_prefix(end);
  }
  return out;
}

std::optional<std::int64_t> status_number(string_view status, string_view key, bool last) {
  const auto value = status_field(status, key);
  if (!value) return std::nullopt;
  const auto numbers = status_numbers(*value);
  if (!numbers || numbers->empty()) return std::nullopt;
  return last ? numbers->back() : numbers->front();
}

// An id of the process as seen in its user namespace, from the host-side status value.
std::optional<std::int64_t> ns_id(string_view status, string_view key, string_view map, std::optional<bool> user_differs) {
  const auto host = status_number(status, key, false);
  if (!host) return std::nullopt;
  if (!map.empty()) return map_id_to_namespace(*host, map);
  if (user_differs == false) return host;
  return std::nullopt;
}

}  // namespace

ContainerInfo identify_container(const ContainerInputs& in) {
  const auto lines = parse_cgroup_file(in.cgroup);
  // Preference: the v2 line, the v1 name=systemd line, then the v1 controllers in file order.
  std::vector<const CgroupLine*> order;
  const auto is_v2 = [](const CgroupLine& l) { return l.hierarchy == "0" && l.controllers.empty(); };
  for (const auto& l : lines)
    if (is_v2(l)) { order.push_back(&l); break; }
  for (const auto& l : lines)
    if (l.controllers == "name=systemd") { order.push_back(&l); break; }
  for (const auto& l : lines)
    if (l.controllers != "name=systemd" && !is_v2(l)) order.push_back(&l);

  ContainerInfo info;
  bool found = false;
  // A container on any hierarchy wins: on a hybrid host with docker's cgroupfs driver the v2 line
  // stays "/system.slice/containerd.service" while the v1 lines say "/docker/<id>".
  for (const auto* l : order) {
    if (l->path == "/") continue;
    auto candidate = identify_cgroup_path(l->path);
    if (candidate.runtime != Runtime::None && candidate.runtime != Runtime::Systemd) {
      info = std::move(candidate);
      info.cgroup_path = l->path;
      found = true;
      break;
    }
  }
  if (!found) {
    for (const auto* l : order) {
      if (l->path == "/") continue;
      info = identify_cgroup_path(l->path);
      info.cgroup_path = l->path;
      found = true;
      break;
    }
  }
  if (!found && !order.empty()) info.cgroup_path = "/";

  auto& nsd = info.namespaces_differ;
  nsd.cgroup = differs(in, "cgroup");
  nsd.ipc = differs(in, "ipc");
  nsd.mnt = differs(in, "mnt");
  nsd.net = differs(in, "net");
  nsd.pid = differs(in, "pid");
  nsd.time = differs(in, "time");
  nsd.user = differs(in, "user");
  nsd.uts = differs(in, "uts");
  info.pidns = inode_of(in.namespaces, "pid");

  info.in_container = (is_container_runtime(info.runtime) && !info.monitor) || (nsd.pid == true && nsd.mnt == true);

  info.ns_pid = status_number(in.status, "NStgid", true);
  if (!info.ns_pid) info.ns_pid = status_number(in.status, "NSpid", true);
  if (!info.ns_pid && nsd.pid == false) info.ns_pid = status_number(in.status, "Tgid", false);
  info.ns_uid = ns_id(in.status, "Uid", in.uid_map, nsd.user);
  info.ns_gid = ns_id(in.status, "Gid", in.gid_map, nsd.user);
  info.hostname = std::string(in.hostname);
  return info;
}

}  // namespace coredumpd
