// Container identification: which container (if any) a crashing process ran in, combining what
// its cgroup path says (cgroup_path.h, systemd_unit.h), whether its namespaces differ from the
// host's, and its ids inside them (status, id_map.h).
//
// Everything here is pure: it interprets texts the handshake already collected (/proc/<pid>/cgroup,
// namespace inodes, status, uid_map/gid_map, the UTS hostname) and does no I/O, so it can be tested
// with canned inputs and can never stall the handshake. The namespace inodes say whether the
// process is isolated from the host at all, whatever the cgroup says.
#pragma once

#include <string_view>

#include <nlohmann/json.hpp>

#include "daemon/policy/cgroup_path.h"
#include "daemon/policy/container_info.h"
#include "daemon/policy/id_map.h"
#include "daemon/policy/systemd_unit.h"

namespace coredumpd {

/// The inputs of identify_container(), named so that the texts cannot be passed in the wrong order.
/// Empty means "not collected".
struct ContainerInputs {
  std::string_view cgroup;  ///< /proc/<pid>/cgroup text (HandshakeFacts::cgroup)
  /// The process's namespace inodes, {"pid": 4026531836, ...} (HandshakeFacts::proc["namespaces"]).
  nlohmann::json namespaces = nlohmann::json::object();
  /// The host's, same shape (read_host_namespaces() in host_namespaces.h), not /proc/self/ns: a daemon
  /// sandboxed by systemd (PrivateTmp=, ProtectSystem=...) has a mount namespace of its own.
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

}  // namespace coredumpd
