// A booted systemd machine for the end-to-end tests: a minimal Debian made once with debootstrap
// into a cache under /var/cache/coredumpd-tests (reused across runs, never written: the machine
// boots with --volatile=overlay), booted with `systemd-nspawn -b` in a cgroup named like
// machinectl's template unit (machine.slice/systemd-nspawn@<name>.service, which is how coredumpd
// identifies nspawn machines). Without network the first debootstrap cannot run: the tests skip
// then, and only then, saying why (mirror_unreachable() decides).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tests/support/test_support.h"

namespace coredumpd::test {

inline constexpr const char* kNspawn = "/usr/bin/systemd-nspawn";
inline constexpr const char* kDebootstrap = "/usr/sbin/debootstrap";
/// Where machine roots (and the packages debootstrap downloaded for them, debs/) are cached.
inline constexpr const char* kMachineCache = "/var/cache/coredumpd-tests";
inline constexpr const char* kMirrorHost = "deb.debian.org";
inline constexpr const char* kMirror = "http://deb.debian.org/debian";
inline constexpr const char* kSuite = "bookworm";

/// Why the mirror cannot be reached, or std::nullopt if it can: a DNS lookup of its host (unless
/// a proxy resolves it for us), then a HEAD of the suite's Release file with wget, debootstrap's own
/// downloader, bounded (20 s, one try). A mirror that answers, even with an error, is reachable.
std::optional<std::string> mirror_unreachable();

/// The last `lines` lines of `text`.
std::string tail_lines(const std::string& text, int lines);

/// Why there is no machine root: a network failure (the test skips) or anything else (it fails).
struct RootProblem {
  bool network = false;
  std::string why;
};

/// Makes `root` once, unless it exists: a --variant=minbase debootstrap of kSuite with systemd,
/// systemd-sysv, dbus and the packages in `include`, under a lock (root + ".lock"), into a temp dir
/// renamed on success; downloads are kept in kMachineCache/debs for the next root. The mirror's
/// reachability is checked first, and again after a failure (the network may have gone meanwhile);
/// any other debootstrap failure is reported with the tail of its log. Bounded: 15 minutes.
std::optional<RootProblem> ensure_debootstrap_root(const std::string& root, const std::vector<std::string>& include = {});

/// A systemd-nspawn -b machine: booted by boot(), powered off (SIGTERM to nspawn, SIGKILL after
/// 30 s) and its cgroup removed by stop() or the destructor, on every exit path.
class NspawnMachine {
 public:
  NspawnMachine() = default;
  ~NspawnMachine();
  NspawnMachine(const NspawnMachine&) = delete;
  NspawnMachine& operator=(const NspawnMachine&) = delete;

  /// Boots `root` (--volatile=overlay) as machine `name`, with `extra_args` for nspawn (--bind=...),
  /// nspawn's output appended to `log`, and waits until its systemd reports running or degraded
  /// (bounded: 30 s to start, `boot_timeout` to finish booting). Returns why it failed, if it did.
  std::optional<std::string> boot(const std::string& name, const std::string& root,
                                  const std::vector<std::string>& extra_args, const std::string& log,
                                  std::chrono::milliseconds boot_timeout = std::chrono::seconds(90));

  /// Runs `argv` in all of the machine's namespaces (nsenter -a; bounded), its stdout captured (and
  /// its stderr too with `with_stderr`). Processes started this way are not in the machine's cgroup:
  /// anything that must be, like a crash, belongs in a transient unit (systemd-run).
  std::pair<ExitStatus, std::string> run(const std::vector<std::string>& argv,
                                         std::chrono::milliseconds timeout = std::chrono::seconds(60),
                                         bool with_stderr = false) const;

  /// `systemctl is-active UNIT` inside the machine ("active", "inactive", ...), trailing space cut.
  std::string unit_state(const std::string& unit) const;

  /// `path` inside the machine as the host reaches it (/proc/<leader>/root + path).
  std::string host_path(const std::string& path) const;

  /// Powers the machine off (bounded) and removes its cgroup. Idempotent.
  void stop();

  const std::string& name() const { return name_; }
  pid_t leader() const { return leader_; }  ///< the machine's init (systemd), as the host sees it
  bool running() const { return nspawn_pid_ > 0; }

 private:
  std::string name_;
  std::vector<std::filesystem::path> cgroups_;
  pid_t nspawn_pid_ = -1, leader_ = -1;
};

}  // namespace coredumpd::test
