#include "daemon/policy/policy.h"

#include <fnmatch.h>
#include <unistd.h>

#include <sstream>

#include "store/container_ref.h"
#include "store/record_extras.h"

namespace coredumpd {

const char* action_name(Action a) {
  switch (a) {
    case Action::Store: return "store";
    case Action::Reject: return "reject";
    case Action::MetadataOnly: return "metadata-only";
    case Action::Forward: return "forward";
  }
  return "?";
}

std::optional<Action> action_from_name(std::string_view name) {
  for (const Action a : {Action::Store, Action::Reject, Action::MetadataOnly, Action::Forward})
    if (name == action_name(a)) return a;
  return std::nullopt;
}

namespace {

std::uint64_t page_bytes() {
  static const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  return page;
}

bool glob(const std::string& pattern, const std::string& s) { return ::fnmatch(pattern.c_str(), s.c_str(), 0) == 0; }

// /proc/<pid>/cgroup lines are "<id>:<controllers>:<path>" (one per hierarchy on v1, one "0::" on v2).
bool any_cgroup_matches(const std::string& pattern, const std::string& cgroup_file) {
  std::istringstream in(cgroup_file);
  std::string line;
  while (std::getline(in, line)) {
    const auto second = line.find(':', line.find(':') + 1);
    if (second != std::string::npos && glob(pattern, line.substr(second + 1))) return true;
  }
  return false;
}

bool container_matches(const std::string& want, const ContainerInfo& c) {
  return container_ref_matches(want, container_key(c), c.name, c.id);
}

std::optional<bool> differs(const ContainerInfo& c, const std::string& ns) {
  const auto& d = c.namespaces_differ;
  if (ns == "pid") return d.pid;
  if (ns == "mnt") return d.mnt;
  if (ns == "user") return d.user;
  if (ns == "uts") return d.uts;
  if (ns == "net") return d.net;
  if (ns == "ipc") return d.ipc;
  if (ns == "cgroup") return d.cgroup;
  if (ns == "time") return d.time;
  return std::nullopt;
}

bool namespace_matches(const std::string& ns, const NamespaceMatch& m, const DumpRecord& r, const ContainerInfo& c) {
  if (m.kind == NamespaceMatch::Kind::Inode) {
    const auto& inodes = r.extra.value(extras::kProc, nlohmann::json::object()).value("namespaces", nlohmann::json::object());
    return inodes.contains(ns) && inodes[ns] == m.inode;
  }
  const auto d = differs(c, ns);
  return d.has_value() && *d == (m.kind == NamespaceMatch::Kind::NonHost);
}

}  // namespace

bool Match::matches(const DumpRecord& r, const ContainerInfo& c) const {
  if (comm && *comm != r.comm) return false;
  if (exe && !glob(*exe, r.exe)) return false;
  if (cgroup && !any_cgroup_matches(*cgroup, r.cgroup)) return false;
  if (uid && *uid != r.uid) return false;
  // A rule names the host (and any container no runtime was recognised for) "host".
  if (runtime && *runtime != (c.runtime == Runtime::None ? "host" : runtime_name(c.runtime))) return false;
  if (container && !container_matches(*container, c)) return false;
  if (unit && !glob(*unit, c.unit)) return false;
  if (slice && !glob(*slice, c.slice)) return false;
  for (const auto& [ns, m] : namespaces)
    if (!namespace_matches(ns, m, r, c)) return false;
  return true;
}

Decision select_policy(const Policy& defaults, const std::vector<Rule>& rules, const DumpRecord& r,
                       const ContainerInfo& c) {
  for (const auto& rule : rules)
    if (rule.match.matches(r, c)) return {rule.policy, rule.name};
  return {defaults, ""};
}

protocol::Wants wants_for(const Policy& p, const HandshakeFacts& facts, std::string& reason) {
  protocol::Wants w;
  switch (p.action) {
    case Action::Reject:
      w.mode = protocol::Mode::Reject;
      reason = "policy action reject";
      return w;
    case Action::MetadataOnly:
      w.mode = protocol::Mode::Userspace;
      w.wait = false;
      reason = "policy action metadata-only";
      return w;
    case Action::Store:
    case Action::Forward:
      break;
  }
  if (p.honor_rlimit_core && facts.rlimit_core && *facts.rlimit_core < page_bytes()) {
    // As systemd-coredump's save_external_coredump() (src/coredump/coredump.c): "if (rlimit <
    // page_size()) ... Resource limits disable core dumping"; nothing below a page is a readable core.
    w.mode = protocol::Mode::Reject;
    reason = "RLIMIT_CORE is " + std::to_string(*facts.rlimit_core) + " bytes, below one page (honor_rlimit_core)";
    return w;
  }
  if (p.max_core_bytes && !p.truncate_over_size && facts.estimated_core_bytes && *facts.estimated_core_bytes > *p.max_core_bytes) {
    // Only a sure excess is rejected up front: the core can be smaller than the mapped total.
    w.mode = protocol::Mode::Reject;
    reason = "estimated core of " + std::to_string(*facts.estimated_core_bytes) + " bytes, over max_core_bytes " +
             std::to_string(*p.max_core_bytes);
    return w;
  }
  w.mode = protocol::Mode::Kernel;
  w.wait = !p.post_dump.empty();
  w.records = p.records;
  w.sparse = p.sparse;
  w.close_files = p.close_files;
  w.memory_types = p.memory_types;
  return w;
}

}  // namespace coredumpd
