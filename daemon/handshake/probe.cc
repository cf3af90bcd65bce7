#include "daemon/handshake/probe.h"

#include <sys/socket.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "daemon/handshake/core_pattern.h"
#include "daemon/policy/host_namespaces.h"
#include "daemon/proc/peer.h"
#include "store/index.h"
#include "protocol/wire.h"
#include "store/record_extras.h"
#include "util/unique_fd.h"

namespace coredumpd {

namespace {

nlohmann::json mask_names(std::uint64_t mask, std::initializer_list<std::pair<std::uint64_t, const char*>> names) {
  auto out = nlohmann::json::array();
  for (const auto& [bit, name] : names) {
    if (mask & bit) out.push_back(name);
    mask &= ~bit;
  }
  if (mask) out.push_back("unknown:" + std::to_string(mask));
  return out;
}

nlohmann::json coredump_mask_names(std::uint64_t mask, std::uint64_t close_files_bit) {
  using namespace protocol;
  return mask_names(mask, {{COREDUMP_KERNEL, "KERNEL"}, {COREDUMP_USERSPACE, "USERSPACE"}, {COREDUMP_REJECT, "REJECT"},
                           {COREDUMP_WAIT, "WAIT"}, {COREDUMP_RECORDS, "RECORDS"}, {COREDUMP_SPARSE, "SPARSE"},
                           {COREDUMP_MEMORY_TYPES, "MEMORY_TYPES"}, {close_files_bit, "CLOSE_FILES"}});
}

nlohmann::json probe_pidfd() {
  nlohmann::json out;
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) return {{"error", "socketpair failed"}};
  const UniqueFd ours(sv[0]), theirs(sv[1]);
  const Peer peer = identify_peer(ours.get());
  out["so_peerpidfd"] = static_cast<bool>(peer.pidfd);
  if (!peer.pidfd) {
    out["error"] = peer.error;
    return out;
  }
  std::string error;
  const auto info = pidfd_get_info(peer.pidfd.get(), 0xFF, error);
  out["pidfd_get_info"] = info.has_value();
  if (!info) {
    out["error"] = error;
    return out;
  }
  const auto pidfd_fields = [](std::uint64_t mask) {
    return mask_names(mask, {{PIDFD_INFO_PID, "PID"}, {PIDFD_INFO_CREDS, "CREDS"}, {PIDFD_INFO_CGROUPID, "CGROUPID"},
                             {PIDFD_INFO_EXIT, "EXIT"}, {PIDFD_INFO_COREDUMP, "COREDUMP"},
                             {PIDFD_INFO_SUPPORTED_MASK, "SUPPORTED_MASK"}, {PIDFD_INFO_COREDUMP_SIGNAL, "COREDUMP_SIGNAL"},
                             {PIDFD_INFO_COREDUMP_CODE, "COREDUMP_CODE"}});
  };
  // What our own (not crashing) process gets: never the coredump fields, whatever the kernel.
  out["pidfd_info_mask"] = info->mask;
  out["pidfd_info_fields"] = pidfd_fields(info->mask);
  // What the kernel can report about a crashing task: its supported mask (6.19+), since a mask
  // returned for our own process cannot show fields only a crash fills.
  const PidfdSupport support = pidfd_supported_mask();
  if (support.supported_mask) {
    out["pidfd_info_supported_mask"] = *support.supported_mask;
    out["pidfd_info_supported"] = pidfd_fields(*support.supported_mask);
  } else {
    out["pidfd_info_supported_mask"] = nullptr;
    out["pidfd_info_supported_error"] = support.error;
  }
  const std::uint64_t supported = support.supported_mask.value_or(0);
  out["coredump_signal_field"] = (supported & PIDFD_INFO_COREDUMP_SIGNAL) != 0;
  out["coredump_code_field"] = (supported & PIDFD_INFO_COREDUMP_CODE) != 0;
  return out;
}

}  // namespace

nlohmann::json probe_kernel(const std::string& store_dir, std::uint64_t close_files_bit) {
  nlohmann::json out;
  utsname u{};
  ::uname(&u);
  out["kernel"] = u.release;
  int major = 0, minor = 0;
  std::sscanf(u.release, "%d.%d", &major, &minor);

  std::ifstream modes_file("/proc/sys/kernel/core_modes");
  auto modes = nlohmann::json::array();
  for (std::string m; modes_file >> m;) modes.push_back(m);
  out["core_modes"] = modes;
  const bool socket_mode = std::find(modes.begin(), modes.end(), "socket") != modes.end();
  out["socket_protocol"] = socket_mode && (major > 6 || (major == 6 && minor >= 17)) ? "@@ (request/ack, 6.17+)"
                           : socket_mode                                           ? "@ only (6.16)"
                                                                                   : "none (needs 6.16+)";
  // The check --pattern=install and --install-pattern make before writing the pattern.
  const auto unsupported = socket_mode_unsupported();
  out["pattern_install"] = unsupported ? nlohmann::json{{"supported", false}, {"reason", *unsupported}}
                                       : nlohmann::json{{"supported", true}};
  try {
    out["core_pattern"] = read_core_pattern();
  } catch (const std::exception& e) {
    out["core_pattern"] = {{"error", e.what()}};
  }
  out["pidfd"] = probe_pidfd();
  out["host_namespaces"] = read_host_namespaces().to_json();
  out["close_files_bit"] = close_files_bit;
  out["close_files_bit_default"] = protocol::COREDUMP_CLOSE_FILES_DEFAULT;
#ifdef COREDUMPD_HAVE_UAPI_COREDUMP_CLOSE_FILES  // cmake/KernelHeaders.cmake: an enum constant, not a macro
  out["close_files_bit_source"] = "<linux/coredump.h>";
#else
  out["close_files_bit_source"] = "spec inference (RFC value not final)";
#endif
  try {
    Index index(store_dir, false);
    const auto all = index.list();
    for (auto it = all.rbegin(); it != all.rend(); ++it) {
      if (!it->extra.contains(extras::kRequest)) continue;
      const auto& req = it->extra[extras::kRequest];
      const auto mask = req.value("mask", std::uint64_t{0});
      out["last_offered"] = {{"dump", it->id},
                             {"mask", mask},
                             {"flags", coredump_mask_names(mask, close_files_bit)},
                             {"request_size", req.value("size", 0)},
                             {"size_ack", req.value("size_ack", 0)}};
      break;
    }
    if (!out.contains("last_offered")) out["last_offered"] = nullptr;
  } catch (const std::exception& e) {
    out["last_offered"] = {{"error", e.what()}};
  }
  return out;
}

}  // namespace coredumpd
