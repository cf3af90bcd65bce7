#include "cli/status_probe.h"

#include <sys/stat.h>
#include <sys/utsname.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <sstream>

namespace coredumpd::cli {

namespace {

/// __SO_ACCEPTCON (include/linux/net.h): the socket listens.
constexpr unsigned long kSoAcceptCon = 1UL << 16;

std::optional<std::string> read_text(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

KernelSupport probe_kernel_support(const std::string& core_modes_path) {
  KernelSupport k;
  utsname u{};
  if (::uname(&u) == 0) k.release = u.release;
  if (auto modes = read_text(core_modes_path)) {
    std::istringstream words(*modes);
    std::string joined;
    for (std::string w; words >> w;) joined += (joined.empty() ? "" : " ") + w;
    k.core_modes = joined;
  }
  // The daemon's own rule (it installs the pattern only where this holds).
  const auto unsupported = socket_mode_unsupported({core_modes_path, k.release});
  k.socket_mode = !unsupported;
  k.why = unsupported ? *unsupported : k.core_modes ? "core_modes lists \"socket\"" : "Linux 6.17 or later";
  return k;
}

std::optional<std::string> pattern_socket(std::string_view core_pattern) {
  if (!core_pattern.empty() && core_pattern.back() == '\n') core_pattern.remove_suffix(1);
  if (!core_pattern.starts_with("@@") || core_pattern.size() == 2) return std::nullopt;
  return std::string(core_pattern.substr(2));
}

bool unix_socket_listening(std::string_view text, std::string_view path) {
  // "Num RefCount Protocol Flags Type St Inode Path": the path is whatever follows the 7th field.
  std::istringstream lines{std::string(text)};
  for (std::string line; std::getline(lines, line);) {
    std::istringstream f(line);
    std::string num, ref, proto, flags, type, st, inode;
    if (!(f >> num >> ref >> proto >> flags >> type >> st >> inode)) continue;
    std::string rest;
    std::getline(f, rest);
    const std::size_t start = rest.find_first_not_of(' ');
    if (start == std::string::npos || rest.substr(start) != path) continue;
    unsigned long v = 0;
    const auto r = std::from_chars(flags.data(), flags.data() + flags.size(), v, 16);
    if (r.ec == std::errc() && (v & kSoAcceptCon) != 0) return true;
  }
  return false;
}

SocketState probe_socket(const std::string& path, const std::string& proc_net_unix) {
  SocketState s;
  struct stat sb {};
  if (::stat(path.c_str(), &sb) == 0) {
    s.exists = true;
    s.is_socket = S_ISSOCK(sb.st_mode);
  } else if (errno != ENOENT && errno != ENOTDIR) {
    s.error = std::strerror(errno);
  }
  if (const auto text = read_text(proc_net_unix)) s.listening = unix_socket_listening(*text, path);
  return s;
}

}  // namespace coredumpd::cli
