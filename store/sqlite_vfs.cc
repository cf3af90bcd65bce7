#include "store/sqlite_vfs.h"

#include <sqlite3.h>
#include <sys/random.h>

#include <cerrno>
#include <cstddef>
#include <mutex>
#include <stdexcept>
#include <string>

#ifndef GRND_INSECURE
#define GRND_INSECURE 0x0004  // <linux/random.h>, Linux 5.6; older C libraries lack the name
#endif

namespace coredumpd {

namespace {

sqlite3_vfs* g_unix = nullptr;  // the wrapped VFS; set once, before ours is registered
sqlite3_vfs g_ours;             // a copy of it with our xRandomness

// Fills `out` with `n` bytes, never waiting for the random pool to be initialised.
int nonblocking_randomness(sqlite3_vfs* /*vfs*/, int n, char* out) {
  if (n <= 0) return 0;
  const auto want = static_cast<std::size_t>(n);
  ssize_t got = 0;
  do got = ::getrandom(out, want, GRND_INSECURE);
  while (got < 0 && errno == EINTR);
  if (got == static_cast<ssize_t>(want)) return n;
  // Before Linux 5.6 GRND_INSECURE is EINVAL; GRND_NONBLOCK then fails (EAGAIN) only while the
  // pool is not ready, the one case where the wrapped method (/dev/urandom) would not wait either.
  ssize_t nb = 0;
  do nb = ::getrandom(out, want, GRND_NONBLOCK);
  while (nb < 0 && errno == EINTR);
  if (nb == static_cast<ssize_t>(want)) return n;
  return g_unix->xRandomness(g_unix, n, out);
}

}  // namespace

void use_nonblocking_random_vfs() {
  static std::once_flag once;
  std::call_once(once, [] {
    sqlite3_vfs* unix_vfs = sqlite3_vfs_find("unix");
    if (unix_vfs == nullptr) throw std::runtime_error("SQLite has no \"unix\" VFS to wrap");
    g_unix = unix_vfs;
    // A copy keeps pAppData, szOsFile and every method: "unix" finds its own state through the
    // sqlite3_vfs it is called with, so the copy behaves exactly like it.
    g_ours = *unix_vfs;
    g_ours.zName = kSqliteVfsName;
    g_ours.pNext = nullptr;
    g_ours.xRandomness = nonblocking_randomness;
    if (const int rc = sqlite3_vfs_register(&g_ours, /*makeDflt=*/1); rc != SQLITE_OK)
      throw std::runtime_error(std::string("registering the SQLite VFS: ") + sqlite3_errstr(rc));
  });
}

}  // namespace coredumpd
