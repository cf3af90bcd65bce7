#include "cli/signal_cleanup.h"

#include <limits.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>

namespace coredumpd::cli {

namespace {

// A fixed table, since the handler may not allocate or lock: dumpctl holds at most one or two
// temporary files at a time.
constexpr int kSlots = 8;
constexpr std::array<int, 3> kSignals{SIGINT, SIGTERM, SIGHUP};

char g_paths[kSlots][PATH_MAX];
volatile std::sig_atomic_t g_used[kSlots];
bool g_installed = false;

extern "C" void remove_and_reraise(int sig) {
  const int saved = errno;
  for (int i = 0; i < kSlots; ++i) {
    if (g_used[i] != 0) ::unlink(g_paths[i]);
  }
  errno = saved;
  // SA_RESETHAND restored the default action and SA_NODEFER left the signal unblocked: this kills
  // the process with `sig`, as if no handler had been there.
  ::raise(sig);
}

void install_handlers() {
  if (g_installed) return;
  g_installed = true;
  for (const int sig : kSignals) {
    struct sigaction old {};
    if (::sigaction(sig, nullptr, &old) != 0 || old.sa_handler == SIG_IGN) continue;
    struct sigaction sa {};
    sa.sa_handler = remove_and_reraise;
    sigemptyset(&sa.sa_mask);
    for (const int other : kSignals) sigaddset(&sa.sa_mask, other);  // one cleanup at a time
    sa.sa_flags = SA_RESETHAND | SA_NODEFER;
    ::sigaction(sig, &sa, nullptr);
  }
}

}  // namespace

BlockCleanupSignals::BlockCleanupSignals() {
  sigset_t block;
  sigemptyset(&block);
  for (const int sig : kSignals) sigaddset(&block, sig);
  ::sigprocmask(SIG_BLOCK, &block, &old_);
}

BlockCleanupSignals::~BlockCleanupSignals() { ::sigprocmask(SIG_SETMASK, &old_, nullptr); }

void disarm_signal_cleanup() {
  for (const int sig : kSignals) {
    struct sigaction cur {};
    if (::sigaction(sig, nullptr, &cur) != 0 || cur.sa_handler != remove_and_reraise) continue;
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    ::sigaction(sig, &dfl, nullptr);
  }
}

SignalCleanup::SignalCleanup(const char* path) {
  const std::size_t len = std::strlen(path);
  if (len >= PATH_MAX) return;
  const BlockCleanupSignals blocked;
  install_handlers();
  for (int i = 0; i < kSlots; ++i) {
    if (g_used[i] != 0) continue;
    std::memcpy(g_paths[i], path, len + 1);
    g_used[i] = 1;
    slot_ = i;
    return;
  }
}

SignalCleanup::~SignalCleanup() { release(); }

void SignalCleanup::release() {
  if (slot_ < 0) return;
  const BlockCleanupSignals blocked;
  g_used[slot_] = 0;
  slot_ = -1;
}

}  // namespace coredumpd::cli
