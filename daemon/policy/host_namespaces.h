// The reference for "the host's namespaces": what a crashing process's namespace inodes are
// compared with to tell a namespaced crash (container_info.h NamespacesDiffer, rules on
// "namespaces").
//
// /proc/1/ns/* is the obvious reference, but its links cannot always be read, even as root (a PID 1
// that is not dumpable, or a sandbox: EACCES). The daemon's own /proc/self/ns is no substitute: the
// shipped unit gives it mount, network and UTS namespaces of its own (PrivateTmp=, PrivateNetwork=,
// ProtectHostname=). What stays true is the kernel's fixed inode numbers of the initial namespaces.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>
#include <string>

#include <nlohmann/json.hpp>

namespace coredumpd {

/// Inode of an initial namespace, fixed by the kernel (include/linux/proc_ns.h PROC_*_INIT_INO;
/// uapi <linux/nsfs.h> enum init_ns_ino since 6.18), or std::nullopt if the kernel gives that one
/// no fixed number: net and mnt before Linux 6.18 (`kernel_has_fixed_net_mnt`).
std::optional<std::uint64_t> init_namespace_inode(const std::string& ns, bool kernel_has_fixed_net_mnt);

/// True if the kernel `release` ("6.18.44-...") numbers the initial net and mnt namespaces with
/// the fixed inodes of init_namespace_inode() (Linux 6.18 and later).
bool kernel_has_fixed_net_mnt(const std::string& release);

/// The chosen reference: for each namespace type, its inode and where it came from.
struct HostNamespaces {
  nlohmann::json inodes = nlohmann::json::object();   ///< {"pid": 4026531836, ...}, known ones only
  nlohmann::json sources = nlohmann::json::object();  ///< {"pid": "/proc/1/ns" | "init inode"}
  std::vector<std::string> missing;  ///< types with no reference: never "differ", rules never match
  std::string pid1_error;            ///< why /proc/1/ns could not be read ("" if it could)

  /// One line for the log and --probe: the sources, and what is missing and why.
  std::string describe() const;
  /// {"inodes": ..., "sources": ..., "missing": [...], "pid1_error": ..., "summary": describe()}.
  nlohmann::json to_json() const;
};

/// Chooses the reference for each of the eight types (cgroup ipc mnt net pid time user uts): PID 1's
/// inode where `pid1` has it (read from /proc/1/ns, keyed by type), else the fixed initial inode.
/// `self` is the daemon's own (/proc/self/ns): where its inode equals the fixed net/mnt one, the
/// kernel has them even if `release` does not say so. Pure.
HostNamespaces choose_host_namespaces(const nlohmann::json& pid1, const std::string& pid1_error,
                                      const nlohmann::json& self, const std::string& release);

/// Reads /proc/1/ns, /proc/self/ns and uname(2), and chooses (choose_host_namespaces()). Never throws.
HostNamespaces read_host_namespaces();

}  // namespace coredumpd
