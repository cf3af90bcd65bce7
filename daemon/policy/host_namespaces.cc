#include "daemon/policy/host_namespaces.h"

#include <sys/stat.h>
#include <sys/utsname.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace coredumpd {

namespace {

constexpr const char* kTypes[] = {"cgroup", "ipc", "mnt", "net", "pid", "time", "user", "uts"};
constexpr const char* kFromPid1 = "/proc/1/ns";
constexpr const char* kFromInit = "init inode";

// Inode of each /proc/<who>/ns/<type> that can be stat()ed; `error` gets the first failure.
nlohmann::json stat_namespaces(const std::string& dir, std::string& error) {
  auto out = nlohmann::json::object();
  for (const char* ns : kTypes) {
    struct stat st{};
    if (::stat((dir + "/" + ns).c_str(), &st) == 0) out[ns] = static_cast<std::uint64_t>(st.st_ino);
    else if (error.empty() && errno != ENOENT) error = dir + "/" + ns + ": " + std::strerror(errno);
  }
  return out;
}

}  // namespace

std::optional<std::uint64_t> init_namespace_inode(const std::string& ns, bool fixed_net_mnt) {
  // include/linux/proc_ns.h (PROC_IPC_INIT_INO ...), the same values as uapi <linux/nsfs.h>.
  if (ns == "ipc") return 0xEFFFFFFFu;
  if (ns == "uts") return 0xEFFFFFFEu;
  if (ns == "user") return 0xEFFFFFFDu;
  if (ns == "pid") return 0xEFFFFFFCu;
  if (ns == "cgroup") return 0xEFFFFFFBu;
  if (ns == "time") return 0xEFFFFFFAu;
  // Before 6.18 init_net and the initial mount namespace took an inode from proc_alloc_inum().
  if (ns == "net" && fixed_net_mnt) return 0xEFFFFFF9u;
  if (ns == "mnt" && fixed_net_mnt) return 0xEFFFFFF8u;
  return std::nullopt;
}

bool kernel_has_fixed_net_mnt(const std::string& release) {
  int major = 0, minor = 0;
  if (std::sscanf(release.c_str(), "%d.%d", &major, &minor) != 2) return false;
  return major > 6 || (major == 6 && minor >= 18);
}

HostNamespaces choose_host_namespaces(const nlohmann::json& pid1, const std::string& pid1_error,
                                      const nlohmann::json& self, const std::string& release) {
  HostNamespaces h;
  h.pid1_error = pid1_error;
  bool fixed = kernel_has_fixed_net_mnt(release);
  // The daemon's own net or mnt inode equal to the fixed one proves the kernel numbers them so.
  for (const char* ns : {"net", "mnt"})
    if (self.is_object() && self.contains(ns) && self[ns] == *init_namespace_inode(ns, true)) fixed = true;
  for (const char* ns : kTypes) {
    if (pid1.is_object() && pid1.contains(ns) && pid1[ns].is_number_unsigned()) {
      h.inodes[ns] = pid1[ns];
      h.sources[ns] = kFromPid1;
    } else if (const auto ino = init_namespace_inode(ns, fixed)) {
      h.inodes[ns] = *ino;
      h.sources[ns] = kFromInit;
    } else {
      h.missing.push_back(ns);
    }
  }
  return h;
}

std::string HostNamespaces::describe() const {
  std::vector<std::string> from_pid1, from_init;
  for (const auto& [ns, source] : sources.items()) (source == kFromPid1 ? from_pid1 : from_init).push_back(ns);
  std::string s;
  if (!from_pid1.empty()) s += fmt::format("{} from /proc/1/ns", fmt::join(from_pid1, " "));
  if (!from_init.empty())
    s += fmt::format("{}{} from the kernel's fixed initial-namespace inodes", s.empty() ? "" : "; ", fmt::join(from_init, " "));
  if (!pid1_error.empty()) s += fmt::format(" (/proc/1/ns unreadable: {})", pid1_error);
  if (!missing.empty())
    s += fmt::format("; NO reference for {}: crashes are not told apart by these namespaces and rules on them never "
                     "match (this kernel gives their initial namespaces no fixed inode before 6.18)",
                     fmt::join(missing, " "));
  return s;
}

nlohmann::json HostNamespaces::to_json() const {
  return {{"inodes", inodes}, {"sources", sources}, {"missing", missing},
          {"pid1_error", pid1_error.empty() ? nlohmann::json(nullptr) : nlohmann::json(pid1_error)},
          {"summary", describe()}};
}

HostNamespaces read_host_namespaces() {
  std::string pid1_error, self_error;
  const auto pid1 = stat_namespaces("/proc/1/ns", pid1_error);
  const auto self = stat_namespaces("/proc/self/ns", self_error);
  utsname u{};
  ::uname(&u);
  return choose_host_namespaces(pid1, pid1_error, self, u.release);
}

}  // namespace coredumpd
