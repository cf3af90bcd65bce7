// The SQLite VFS every index opens through: the "unix" VFS, seeded without waiting for the kernel's
// random pool.
#pragma once

namespace coredumpd {

/// Name of the VFS registered by use_nonblocking_random_vfs().
inline constexpr const char* kSqliteVfsName = "coredumpd-unix";

/// Registers (once per process; later calls do nothing) a copy of SQLite's default "unix" VFS,
/// named kSqliteVfsName, as the default VFS. It differs only in xRandomness, which SQLite calls
/// once to seed its PRNG (journal nonces, temporary names): "unix" reads /dev/urandom there, which
/// in a fresh VM before the pool is initialised held start-up ~1.8 s (issue 23, Linux 7.3 guest).
/// Ours asks getrandom(GRND_INSECURE) (Linux 5.6+; never blocks), then GRND_NONBLOCK, and only
/// then the wrapped "unix" method. Nothing here needs unpredictable bytes: SQLite uses them for
/// names and nonces, not secrets. Call before the first sqlite3_open. Throws std::runtime_error if
/// SQLite has no "unix" VFS or refuses the registration.
void use_nonblocking_random_vfs();

}  // namespace coredumpd
