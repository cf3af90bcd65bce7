#include "util/kernel_support.h"

#include <sys/utsname.h>

#include <charconv>
#include <fstream>

namespace coredumpd {

bool release_at_least(std::string_view release, int major, int minor) {
  int ma = 0, mi = 0;
  const char* end = release.data() + release.size();
  auto r = std::from_chars(release.data(), end, ma);
  if (r.ec != std::errc() || r.ptr == end || *r.ptr != '.') return false;
  r = std::from_chars(r.ptr + 1, end, mi);
  if (r.ec != std::errc()) return false;
  return ma > major || (ma == major && mi >= minor);
}

std::optional<std::string> socket_mode_unsupported(const KernelFacts& facts) {
  std::string release = facts.release;
  if (release.empty()) {
    utsname u{};
    ::uname(&u);
    release = u.release;
  }
  if (!release_at_least(release, 6, 17))
    return "kernel " + release + " lacks the core_pattern \"@@\" socket protocol (needs Linux 6.17 or later)";
  std::ifstream modes_file(facts.core_modes_path);
  if (!modes_file) return std::nullopt;  // no list to consult (not every kernel has one): the release decides
  std::string modes, word;
  bool socket = false;
  while (modes_file >> word) {
    socket = socket || word == "socket";
    modes += (modes.empty() ? "" : " ") + word;
  }
  if (!socket)
    return "kernel " + release + " has no socket core_pattern mode (" + facts.core_modes_path + " does not list \"socket\": \"" +
           modes + "\")";
  return std::nullopt;
}

}  // namespace coredumpd
