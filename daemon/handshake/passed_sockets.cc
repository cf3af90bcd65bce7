#include "daemon/handshake/passed_sockets.h"

#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

namespace coredumpd {

PassedSockets take_passed_sockets() {
  char** raw = nullptr;
  const int n = sd_listen_fds_with_names(1, &raw);
  if (n < 0) throw std::runtime_error("reading the sockets systemd passed (LISTEN_FDS) failed");
  std::vector<std::string> names;
  for (int i = 0; i < n; ++i) {
    names.emplace_back(raw && raw[i] ? raw[i] : "unknown");
    if (raw) std::free(raw[i]);
  }
  std::free(raw);

  PassedSockets out;
  std::vector<int> others;
  for (int i = 0; i < n; ++i) {
    const int fd = SD_LISTEN_FDS_START + i;
    int* slot = names[i] == "kernel" ? &out.kernel : names[i] == "query" ? &out.query : nullptr;
    if (!slot) {
      others.push_back(fd);
    } else if (*slot >= 0) {
      throw std::runtime_error("systemd passed two sockets named \"" + names[i] + "\"");
    } else {
      *slot = fd;
    }
  }
  if (out.kernel < 0 && others.size() == 1) {
    out.kernel = others.front();  // an older unit: one socket, named after the unit
    others.clear();
  }
  if (!others.empty())
    throw std::runtime_error("systemd passed " + std::to_string(n) +
                             " sockets that cannot be told apart: name the kernel's FileDescriptorName=kernel "
                             "and the query service's FileDescriptorName=query");
  return out;
}

}  // namespace coredumpd
