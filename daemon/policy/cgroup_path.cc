#include "daemon/policy/cgroup_path.h"

#include <array>
#include <optional>

#include "daemon/policy/proc_text.h"
#include "daemon/policy/systemd_unit.h"

namespace coredumpd {

namespace {

using std::string_view;
using namespace proc_text;

constexpr std::size_t kMaxPodUid = 128;   // a UUID is 36; static pods use a 32-hex hash

// True if `word` is one of the `sep`-separated words of `s`.
bool has_word(string_view s, string_view word, char sep) {
  while (true) {
    const auto at = s.find(sep);
    if (s.substr(0, at) == word) return true;
    if (at == string_view::npos) return false;
    s.remove_prefix(at + 1);
  }
}

// A name taken from a path component: anything non-empty but "." and "..".
bool valid_name(string_view s) { return !s.empty() && s != "." && s != ".."; }

// A pod UID from a cgroup name: letters, digits and dashes; kubelet's systemd driver writes the
// UUID's dashes as underscores ('-' separates slice levels), so '_' becomes '-' again.
std::optional<std::string> pod_uid_from(string_view raw) {
  if (raw.empty() || raw.size() > kMaxPodUid) return std::nullopt;
  std::string out;
  for (char c : raw) {
    if (c == '_') out += '-';
    else if (is_alnum(c) || c == '-') out += c;
    else return std::nullopt;
  }
  return out;
}

// kubelet's systemd driver (pkg/kubelet/cm/cgroup_manager_linux.go): each cgroup level becomes a
// slice named by joining the levels with '-': "kubepods-burstable-pod<uid>.slice". With another
// cgroup root (kind uses /kubelet) the name gains a prefix: "kubelet-kubepods-...-pod<uid>.slice".
std::optional<std::string> kube_pod_slice_uid(string_view c) {
  if (!c.ends_with(".slice")) return std::nullopt;
  const auto base = c.substr(0, c.size() - 6);
  const auto dash = base.rfind('-');
  if (dash == string_view::npos) return std::nullopt;
  const auto last = base.substr(dash + 1);
  if (!last.starts_with("pod") || !has_word(base.substr(0, dash), "kubepods", '-')) return std::nullopt;
  return pod_uid_from(last.substr(3));
}

// kubelet's cgroupfs driver: /kubepods/pod<uid> (Guaranteed), /kubepods/{burstable,besteffort}/pod<uid>.
std::optional<std::string> kube_pod_dir_uid(const std::vector<string_view>& comps, std::size_t i) {
  const auto c = comps[i];
  if (!c.starts_with("pod") || i == 0) return std::nullopt;
  const bool under_kubepods = comps[i - 1] == "kubepods" ||
      ((comps[i - 1] == "burstable" || comps[i - 1] == "besteffort") && i >= 2 && comps[i - 2] == "kubepods");
  if (!under_kubepods) return std::nullopt;
  return pod_uid_from(c.substr(3));
}

// Podman pods: "machine-libpod_pod_<id>.slice", "user-libpod_pod_<id>.slice" (rootless), or a
// cgroupfs directory "libpod_pod_<id>".
std::optional<std::string> podman_pod_id(string_view c) {
  if (c.ends_with(".slice")) c.remove_suffix(6);
  if (const auto dash = c.rfind('-'); dash != string_view::npos) c.remove_prefix(dash + 1);
  if (!c.starts_with("libpod_pod_") || !is_hex64(c.substr(11))) return std::nullopt;
  return std::string(c.substr(11));
}

struct EngineMatch {
  Runtime runtime;
  std::string id;
  bool monitor = false;
  std::string pod_uid;  // from the "<pod slice>:<prefix>:<id>" form
};

// The runtime behind a systemd scope prefix (runc/crun's "<prefix>-<id>.scope").
std::optional<Runtime> runtime_of_prefix(string_view prefix) {
  if (prefix == "docker") return Runtime::Docker;
  if (prefix == "libpod") return Runtime::Podman;
  if (prefix == "cri-containerd" || prefix == "nerdctl") return Runtime::Containerd;
  if (prefix == "crio") return Runtime::CriO;
  return std::nullopt;
}

// One component naming an engine's container.
std::optional<EngineMatch> match_engine(string_view c) {
  // "<slice>:<prefix>:<id>" is a systemd-driver cgroupsPath (runc's libcontainer/cgroups/systemd)
  // that a cgroupfs-driven runtime took literally as a directory name, typically under
  // containerd.service when kubelet uses the systemd driver and containerd SystemdCgroup=false.
  if (const auto colon = c.find(':'); colon != string_view::npos) {
    const auto second = c.find(':', colon + 1);
    if (second == string_view::npos) return std::nullopt;
    const auto id = c.substr(second + 1);
    const auto runtime = runtime_of_prefix(c.substr(colon + 1, second - colon - 1));
    if (!runtime || !is_hex64(id)) return std::nullopt;
    EngineMatch m{*runtime, std::string(id), false, {}};
    if (auto uid = kube_pod_slice_uid(c.substr(0, colon))) m.pod_uid = *uid;
    return m;
  }
  // "<prefix>-<id>.scope" (systemd driver), or "<prefix>-<id>" (podman's and CRI-O's cgroupfs).
  struct Form {
    string_view prefix;
    Runtime runtime;
    bool monitor;
  };
  static constexpr std::array<Form, 7> kForms = {{
      {"libpod-conmon-", Runtime::Podman, true},  // podman: conmon's own scope
      {"libpod-", Runtime::Podman, false},
      {"crio-conmon-", Runtime::CriO, true},     // CRI-O: conmon's own scope
      {"crio-", Runtime::CriO, false},
      {"cri-containerd-", Runtime::Containerd, false},  // containerd's CRI plugin
      {"nerdctl-", Runtime::Containerd, false},
      {"docker-", Runtime::Docker, false},
  }};
  string_view base = c;
  if (base.ends_with(".scope")) base.remove_suffix(6);
  for (const auto& f : kForms)
    if (base.starts_with(f.prefix) && is_hex64(base.substr(f.prefix.size())))
      return EngineMatch{f.runtime, std::string(base.substr(f.prefix.size())), f.monitor, {}};
  return std::nullopt;
}

// Resets the container fields (not the systemd ones) before a more deeply nested match.
void clear_container(ContainerInfo& info) {
  info.runtime = Runtime::None;
  info.engine = Runtime::None;
  info.id.clear();
  info.name.clear();
  info.pod_uid.clear();
  info.monitor = false;
}

// libvirt registers its domains with machined as "<driver>-<n>-<domain>".
bool split_libvirt(string_view machine, Runtime& runtime, std::string& domain) {
  for (string_view driver : {string_view("qemu-"), string_view("lxc-")}) {
    if (!machine.starts_with(driver)) continue;
    const auto rest = machine.substr(driver.size());
    const auto dash = rest.find('-');
    if (dash == string_view::npos || !all_digits(rest.substr(0, dash)) || rest.size() == dash + 1) return false;
    runtime = driver == "qemu-" ? Runtime::LibvirtQemu : Runtime::LibvirtLxc;
    domain = std::string(rest.substr(dash + 1));
    return true;
  }
  return false;
}

}  // namespace

std::vector<CgroupLine> parse_cgroup_file(string_view text) {
  std::vector<CgroupLine> out;
  while (!text.empty()) {
    const auto nl = text.find('\n');
    const auto line = text.substr(0, nl);
    text.remove_prefix(nl == string_view::npos ? text.size() : nl + 1);
    const auto c1 = line.find(':');
    if (c1 == string_view::npos || !all_digits(line.substr(0, c1))) continue;
    const auto c2 = line.find(':', c1 + 1);
    if (c2 == string_view::npos) continue;
    auto path = line.substr(c2 + 1);
    if (!path.starts_with('/')) continue;
    CgroupLine l{std::string(line.substr(0, c1)), std::string(line.substr(c1 + 1, c2 - c1 - 1)), {}};
    // proc_cgroup_show() marks a removed v2 cgroup so; never seen for a live, populated one.
    if (l.hierarchy == "0" && l.controllers.empty() && path.size() > 1 && path.ends_with(" (deleted)"))
      path.remove_suffix(10);
    l.path = std::string(path);
    out.push_back(std::move(l));
  }
  return out;
}

ContainerInfo identify_cgroup_path(string_view path) {
  ContainerInfo info;
  const auto comps = cgroup_components(path);
  auto units = systemd_units(comps);
  info.unit = std::move(units.unit);
  info.slice = std::move(units.slice);
  info.user_unit = std::move(units.user_unit);
  info.user_slice = std::move(units.user_slice);
  info.owner_uid = units.owner_uid;

  std::string kube_pod;     // a Kubernetes pod cgroup seen, its container not yet
  std::string podman_pod;   // a podman pod slice seen
  for (std::size_t i = 0; i < comps.size(); ++i) {
    const auto c = comps[i];
    const auto next = i + 1 < comps.size() ? comps[i + 1] : string_view();

    // Kubernetes pod level.
    auto uid = kube_pod_slice_uid(c);
    if (!uid) uid = kube_pod_dir_uid(comps, i);
    if (uid) {
      clear_container(info);
      info.runtime = Runtime::Kubernetes;
      info.pod_uid = info.name = kube_pod = *uid;
      continue;
    }
    if (auto pod = podman_pod_id(c)) {
      podman_pod = *pod;
      continue;
    }

    // A container of an engine, in a pod or not.
    if (auto m = match_engine(c)) {
      if (!m->pod_uid.empty()) kube_pod = m->pod_uid;
      clear_container(info);
      if (!kube_pod.empty()) {
        info.runtime = Runtime::Kubernetes;
        info.engine = m->runtime;
        info.pod_uid = info.name = kube_pod;
      } else {
        info.runtime = m->runtime;
        if (info.runtime == Runtime::Podman) info.pod_uid = podman_pod;
      }
      info.id = std::move(m->id);
      info.monitor = m->monitor;
      kube_pod.clear();
      podman_pod.clear();
      continue;
    }
    // kubelet's cgroupfs driver names a pod's containers by bare id, whatever the engine.
    if (!kube_pod.empty() && is_hex64(c)) {
      info.id = std::string(c);
      kube_pod.clear();
      continue;
    }
    kube_pod.clear();  // the pod's container must be its direct child

    // docker's cgroupfs parent "/docker"; containerd's "/<namespace>/<id>" for namespace "default".
    if ((c == "docker" || c == "default") && is_hex64(next)) {
      clear_container(info);
      info.runtime = c == "docker" ? Runtime::Docker : Runtime::Containerd;
      info.id = std::string(next);
      ++i;
      continue;
    }
    // LXC: "lxc/<name>" (1.x-3.x), "lxc.payload/<name>", "lxc.payload.<name>" (4+), monitors.
    const bool lxc_dir = c == "lxc" || c == "lxc.payload" || c == "lxc.monitor";
    if (lxc_dir && valid_name(next)) {
      clear_container(info);
      info.runtime = Runtime::Lxc;
      info.name = std::string(next);
      info.monitor = c == "lxc.monitor";
      ++i;
      continue;
    }
    if ((c.starts_with("lxc.payload.") || c.starts_with("lxc.monitor.")) && valid_name(c.substr(12))) {
      clear_container(info);
      info.runtime = Runtime::Lxc;
      info.name = std::string(c.substr(12));
      info.monitor = c.starts_with("lxc.monitor.");
      continue;
    }
    // systemd-machined's scope, "machine-<escaped name>.scope".
    if (c.starts_with("machine-") && c.ends_with(".scope") && c.size() > 8 + 6) {
      const auto machine = systemd_unescape(c.substr(8, c.size() - 8 - 6));
      clear_container(info);
      if (!split_libvirt(machine, info.runtime, info.name)) {
        info.runtime = Runtime::SystemdNspawn;
        info.name = machine;
        info.monitor = next == "supervisor";  // nspawn: "payload" and "supervisor" below the scope
      }
      continue;
    }
    // nspawn --keep-unit in its template service (machinectl start): no scope of its own.
    if (c.starts_with("systemd-nspawn@") && c.ends_with(".service") && c.size() > 15 + 8) {
      clear_container(info);
      info.runtime = Runtime::SystemdNspawn;
      info.name = systemd_unescape(c.substr(15, c.size() - 15 - 8));
      info.monitor = next == "supervisor";
      continue;
    }
  }
  if (info.runtime == Runtime::None && !info.unit.empty()) info.runtime = Runtime::Systemd;
  return info;
}

}  // namespace coredumpd
