#include "daemon/policy/container.h"

#include <array>
#include <charconv>
#include <limits>

#include "store/dump_record.h"

namespace coredumpd {

namespace {

using std::string_view;

constexpr std::size_t kMaxExtents = 340;  // UID_GID_MAP_MAX_EXTENTS (include/linux/user_namespace.h)
constexpr std::uint64_t kU32Max = std::numeric_limits<std::uint32_t>::max();
constexpr std::size_t kMaxPodUid = 128;   // a UUID is 36; static pods use a 32-hex hash

// ---- small helpers ----

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_lower_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f'); }
bool is_alnum(char c) { return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

// A container id as docker, podman, containerd and CRI-O generate them: 32 random bytes in hex.
bool is_hex64(string_view s) {
  if (s.size() != 64) return false;
  for (char c : s)
    if (!is_lower_hex(c)) return false;
  return true;
}

bool all_digits(string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!is_digit(c)) return false;
  return true;
}

// Decimal digits only (no sign, no blanks), fitting an int64.
std::optional<std::int64_t> parse_decimal(string_view s) {
  if (!all_digits(s)) return std::nullopt;
  std::int64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

// The '/'-separated components of a cgroup path, empty ones dropped.
std::vector<string_view> split_path(string_view path) {
  std::vector<string_view> out;
  while (!path.empty()) {
    const auto slash = path.find('/');
    const auto comp = path.substr(0, slash);
    if (!comp.empty()) out.push_back(comp);
    if (slash == string_view::npos) break;
    path.remove_prefix(slash + 1);
  }
  return out;
}

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

// ---- systemd unit names (src/basic/unit-name.c, src/basic/cgroup-util.c) ----

// unit_name_is_valid(), simplified: [a-zA-Z0-9:_.\\@-]+ before a known suffix, at most 255 bytes.
bool is_unit_with_suffix(string_view c, string_view suffix) {
  if (c.size() <= suffix.size() || c.size() > 255 || !c.ends_with(suffix)) return false;
  for (char ch : c.substr(0, c.size() - suffix.size()))
    if (!is_alnum(ch) && ch != ':' && ch != '-' && ch != '_' && ch != '.' && ch != '\\' && ch != '@') return false;
  return true;
}

bool is_slice(string_view c) { return is_unit_with_suffix(c, ".slice"); }

// Units that can hold processes (cg_path_decode_unit() accepts any valid non-slice unit name; these
// are the types systemd ever puts processes into).
bool is_process_unit(string_view c) {
  static constexpr std::array<string_view, 5> kSuffixes = {".service", ".scope", ".socket", ".mount", ".swap"};
  for (auto suffix : kSuffixes)
    if (is_unit_with_suffix(c, suffix)) return true;
  return false;
}

// skip_user_manager() / skip_session() in cgroup-util.c: "user@<uid>.service", "session-<id>.scope".
bool is_user_manager(string_view c) {
  if (!c.starts_with("user@") || !c.ends_with(".service")) return false;
  return all_digits(c.substr(5, c.size() - 5 - 8));
}
bool is_session_scope(string_view c) { return c.starts_with("session-") && c.size() > 14 && c.ends_with(".scope"); }

// Fills unit/slice/user_unit/user_slice/owner_uid as sd_pid_get_unit(), _slice(), _user_unit(),
// _user_slice() and _owner_uid() would for this path.
void fill_systemd(const std::vector<string_view>& comps, ContainerInfo& info) {
  std::size_t i = 0;
  string_view slice;
  while (i < comps.size() && is_slice(comps[i])) slice = comps[i++];
  info.slice = std::string(slice);
  if (i < comps.size() && is_process_unit(comps[i])) {
    info.unit = std::string(comps[i]);
    if (slice.empty()) info.slice = "-.slice";
    if (is_user_manager(comps[i]) || is_session_scope(comps[i])) {
      std::size_t j = i + 1;
      string_view user_slice;
      while (j < comps.size() && is_slice(comps[j])) user_slice = comps[j++];
      if (j < comps.size() && is_process_unit(comps[j])) {
        info.user_unit = std::string(comps[j]);
        info.user_slice = user_slice.empty() ? std::string("-.slice") : std::string(user_slice);
      }
    }
  }
  // cg_path_get_owner_uid(): the slice "user-<uid>.slice".
  if (slice.starts_with("user-") && slice.ends_with(".slice")) {
    if (auto uid = parse_decimal(slice.substr(5, slice.size() - 5 - 6)); uid && *uid < static_cast<std::int64_t>(kU32Max))
      info.owner_uid = uid;
  }
}

// ---- container forms ----

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
  const char* runtime;
  std::string id;
  bool monitor = false;
  std::string pod_uid;  // from the "<pod slice>:<prefix>:<id>" form
};

// The runtime behind a systemd scope prefix (runc/crun's "<prefix>-<id>.scope").
const char* runtime_of_prefix(string_view prefix) {
  if (prefix == "docker") return "docker";
  if (prefix == "libpod") return "podman";
  if (prefix == "cri-containerd" || prefix == "nerdctl") return "containerd";
  if (prefix == "crio") return "cri-o";
  return nullptr;
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
    const char* runtime = runtime_of_prefix(c.substr(colon + 1, second - colon - 1));
    if (!runtime || !is_hex64(id)) return std::nullopt;
    EngineMatch m{runtime, std::string(id), false, {}};
    if (auto uid = kube_pod_slice_uid(c.substr(0, colon))) m.pod_uid = *uid;
    return m;
  }
  // "<prefix>-<id>.scope" (systemd driver), or "<prefix>-<id>" (podman's and CRI-O's cgroupfs).
  struct Form {
    string_view prefix;
    const char* runtime;
    bool monitor;
  };
  static constexpr std::array<Form, 7> kForms = {{
      {"libpod-conmon-", "podman", true},  // podman: conmon's own scope
      {"libpod-", "podman", false},
      {"crio-conmon-", "cri-o", true},     // CRI-O: conmon's own scope
      {"crio-", "cri-o", false},
      {"cri-containerd-", "containerd", false},  // containerd's CRI plugin
      {"nerdctl-", "containerd", false},
      {"docker-", "docker", false},
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
  info.runtime.clear();
  info.engine.clear();
  info.id.clear();
  info.name.clear();
  info.pod_uid.clear();
  info.monitor = false;
}

// libvirt registers its domains with machined as "<driver>-<n>-<domain>".
bool split_libvirt(string_view machine, std::string& runtime, std::string& domain) {
  for (string_view driver : {string_view("qemu-"), string_view("lxc-")}) {
    if (!machine.starts_with(driver)) continue;
    const auto rest = machine.substr(driver.size());
    const auto dash = rest.find('-');
    if (dash == string_view::npos || !all_digits(rest.substr(0, dash)) || rest.size() == dash + 1) return false;
    runtime = driver == "qemu-" ? "libvirt-qemu" : "libvirt-lxc";
    domain = std::string(rest.substr(dash + 1));
    return true;
  }
  return false;
}

// ---- namespaces and status ----

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
    const auto n = parse_decimal(value.substr(0, end));
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

// ---- id maps ----

bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\v' || c == '\f' || c == '\r'; }

// One unsigned 32-bit decimal number at the start of `s`, which is advanced past it.
std::optional<std::uint32_t> take_u32(string_view& s) {
  std::size_t i = 0;
  std::uint64_t v = 0;
  while (i < s.size() && is_digit(s[i])) {
    v = v * 10 + static_cast<std::uint64_t>(s[i] - '0');
    if (v > kU32Max) return std::nullopt;
    ++i;
  }
  if (i == 0) return std::nullopt;
  s.remove_prefix(i);
  return static_cast<std::uint32_t>(v);
}

std::size_t skip_blanks(string_view& s) {
  std::size_t n = 0;
  while (n < s.size() && is_blank(s[n])) ++n;
  s.remove_prefix(n);
  return n;
}

std::optional<IdExtent> parse_extent(string_view line) {
  skip_blanks(line);
  const auto inside = take_u32(line);
  if (!inside || skip_blanks(line) == 0) return std::nullopt;
  const auto outside = take_u32(line);
  if (!outside || skip_blanks(line) == 0) return std::nullopt;
  const auto count = take_u32(line);
  if (!count) return std::nullopt;
  skip_blanks(line);
  if (!line.empty()) return std::nullopt;
  // The kernel's checks: (u32)-1 is no id, and neither range may be empty or wrap.
  if (*inside == kU32Max || *outside == kU32Max || *count == 0) return std::nullopt;
  if (std::uint64_t{*inside} + *count > kU32Max || std::uint64_t{*outside} + *count > kU32Max) return std::nullopt;
  return IdExtent{*inside, *outside, *count};
}

bool ranges_overlap(std::uint32_t a, std::uint32_t b, std::uint32_t count_a, std::uint32_t count_b) {
  const std::uint64_t a_last = std::uint64_t{a} + count_a - 1, b_last = std::uint64_t{b} + count_b - 1;
  return a <= b_last && b <= a_last;
}

enum class Direction { ToNamespace, FromNamespace };

std::optional<std::int64_t> map_id(std::int64_t id, string_view text, Direction dir) {
  if (id < 0 || id >= static_cast<std::int64_t>(kU32Max)) return std::nullopt;
  const auto extents = parse_id_map(text);
  if (!extents) return std::nullopt;
  for (const auto& e : *extents) {
    const std::int64_t from = dir == Direction::ToNamespace ? e.outside : e.inside;
    const std::int64_t to = dir == Direction::ToNamespace ? e.inside : e.outside;
    if (id >= from && id < from + std::int64_t{e.count}) return to + (id - from);
  }
  return std::nullopt;
}

}  // namespace

// ---- public ----

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

std::string systemd_unescape(string_view s) {
  std::string out;
  out.reserve(s.size());
  const auto hex = [](char c) -> int {
    if (is_digit(c)) return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size() && s[i + 1] == 'x') {
      const int hi = hex(s[i + 2]), lo = hex(s[i + 3]);
      if (hi >= 0 && lo >= 0 && (hi | lo) != 0) {
        out += static_cast<char>(hi * 16 + lo);
        i += 3;
        continue;
      }
    }
    out += s[i];
  }
  return out;
}

ContainerInfo identify_cgroup_path(string_view path) {
  ContainerInfo info;
  const auto comps = split_path(path);
  fill_systemd(comps, info);

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
      info.runtime = "kubernetes";
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
        info.runtime = "kubernetes";
        info.engine = m->runtime;
        info.pod_uid = info.name = kube_pod;
      } else {
        info.runtime = m->runtime;
        if (info.runtime == "podman") info.pod_uid = podman_pod;
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
      info.runtime = c == "docker" ? "docker" : "containerd";
      info.id = std::string(next);
      ++i;
      continue;
    }
    // LXC: "lxc/<name>" (1.x-3.x), "lxc.payload/<name>", "lxc.payload.<name>" (4+), monitors.
    const bool lxc_dir = c == "lxc" || c == "lxc.payload" || c == "lxc.monitor";
    if (lxc_dir && valid_name(next)) {
      clear_container(info);
      info.runtime = "lxc";
      info.name = std::string(next);
      info.monitor = c == "lxc.monitor";
      ++i;
      continue;
    }
    if ((c.starts_with("lxc.payload.") || c.starts_with("lxc.monitor.")) && valid_name(c.substr(12))) {
      clear_container(info);
      info.runtime = "lxc";
      info.name = std::string(c.substr(12));
      info.monitor = c.starts_with("lxc.monitor.");
      continue;
    }
    // systemd-machined's scope, "machine-<escaped name>.scope".
    if (c.starts_with("machine-") && c.ends_with(".scope") && c.size() > 8 + 6) {
      const auto machine = systemd_unescape(c.substr(8, c.size() - 8 - 6));
      clear_container(info);
      if (!split_libvirt(machine, info.runtime, info.name)) {
        info.runtime = "systemd-nspawn";
        info.name = machine;
        info.monitor = next == "supervisor";  // nspawn: "payload" and "supervisor" below the scope
      }
      continue;
    }
    // nspawn --keep-unit in its template service (machinectl start): no scope of its own.
    if (c.starts_with("systemd-nspawn@") && c.ends_with(".service") && c.size() > 15 + 8) {
      clear_container(info);
      info.runtime = "systemd-nspawn";
      info.name = systemd_unescape(c.substr(15, c.size() - 15 - 8));
      info.monitor = next == "supervisor";
      continue;
    }
  }
  if (info.runtime.empty() && !info.unit.empty()) info.runtime = "systemd";
  return info;
}

bool is_container_runtime(string_view runtime) {
  static constexpr std::array<string_view, 8> kRuntimes = {"docker", "podman", "containerd", "cri-o",
                                                           "kubernetes", "lxc", "systemd-nspawn", "libvirt-lxc"};
  for (auto r : kRuntimes)
    if (r == runtime) return true;
  return false;
}

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
    if (!candidate.runtime.empty() && candidate.runtime != "systemd") {
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

std::string container_key(const ContainerInfo& info) {
  const auto& r = info.runtime;
  if ((r == "docker" || r == "podman" || r == "containerd" || r == "cri-o") && !info.id.empty()) return r + ":" + info.id;
  if (r == "kubernetes" && !info.pod_uid.empty()) return "kubernetes:" + info.pod_uid;
  if (r == "systemd-nspawn" && !info.name.empty()) return "nspawn:" + info.name;
  if ((r == "lxc" || r == "libvirt-lxc" || r == "libvirt-qemu") && !info.name.empty()) return r + ":" + info.name;
  if (r == "systemd" && !info.unit.empty()) return "systemd:" + info.unit;
  if (info.in_container) {
    if (info.pidns) return "pidns:" + std::to_string(*info.pidns);
    return "cgroup:" + info.cgroup_path;
  }
  return "host";
}

nlohmann::json to_json(const ContainerInfo& info) {
  const auto opt = [](const auto& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
  const auto& n = info.namespaces_differ;
  return {
      {"runtime", info.runtime},
      {"engine", info.engine},
      {"id", info.id},
      {"name", bytes_to_json(info.name)},
      {"pod_uid", info.pod_uid},
      {"monitor", info.monitor},
      {"unit", bytes_to_json(info.unit)},
      {"slice", bytes_to_json(info.slice)},
      {"user_unit", bytes_to_json(info.user_unit)},
      {"user_slice", bytes_to_json(info.user_slice)},
      {"owner_uid", opt(info.owner_uid)},
      {"cgroup_path", bytes_to_json(info.cgroup_path)},
      {"namespaces_differ",
       {{"cgroup", opt(n.cgroup)}, {"ipc", opt(n.ipc)}, {"mnt", opt(n.mnt)}, {"net", opt(n.net)},
        {"pid", opt(n.pid)}, {"time", opt(n.time)}, {"user", opt(n.user)}, {"uts", opt(n.uts)}}},
      {"pidns", opt(info.pidns)},
      {"in_container", info.in_container},
      {"ns_pid", opt(info.ns_pid)},
      {"ns_uid", opt(info.ns_uid)},
      {"ns_gid", opt(info.ns_gid)},
      {"hostname", bytes_to_json(info.hostname)},
      {"key", bytes_to_json(container_key(info))},
  };
}

std::optional<std::vector<IdExtent>> parse_id_map(string_view text) {
  std::vector<IdExtent> out;
  while (!text.empty()) {
    const auto nl = text.find('\n');
    const auto line = text.substr(0, nl);
    text.remove_prefix(nl == string_view::npos ? text.size() : nl + 1);
    if (out.size() == kMaxExtents) return std::nullopt;
    const auto e = parse_extent(line);
    if (!e) return std::nullopt;
    for (const auto& o : out)  // mappings_overlap(): O(n^2) over at most 340 extents
      if (ranges_overlap(o.inside, e->inside, o.count, e->count) || ranges_overlap(o.outside, e->outside, o.count, e->count))
        return std::nullopt;
    out.push_back(*e);
  }
  return out;
}

std::optional<std::int64_t> map_id_to_namespace(std::int64_t host_id, string_view id_map) {
  return map_id(host_id, id_map, Direction::ToNamespace);
}

std::optional<std::int64_t> map_id_from_namespace(std::int64_t ns_id_value, string_view id_map) {
  return map_id(ns_id_value, id_map, Direction::FromNamespace);
}

}  // namespace coredumpd
