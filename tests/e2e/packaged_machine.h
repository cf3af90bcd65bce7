// A booted Debian machine with coredumpd's .deb installed, for the package's end-to-end test
// (tests/e2e/nspawn_package_test.cc). The machine's /run/coredumpd is a host directory, so its
// coredumpd.socket is reachable from the host, and the host's core_pattern points there while the
// machine runs: core_pattern is global, and a crash inside the machine goes where the host's
// pattern says.
#pragma once

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "store/dump_record.h"
#include "tests/e2e/nspawn_machine.h"
#include "tests/support/test_support.h"

namespace coredumpd::test {

/// The unprivileged user made in the machine (useradd) for the users' crashes.
inline constexpr const char* kMachineUser = "tester";
/// Where the machine's coredumpd keeps its store (the package's config file).
inline constexpr const char* kMachineStore = "/var/lib/coredumpd";  // bound to <dir()>/store on the host

/// One crash inside the machine: a transient unit of its systemd (systemd-run), its pid in the
/// machine's pid namespace, and what the machine's coredumpd stored (std::nullopt: nothing).
struct MachineCrash {
  std::string unit;  ///< "crashy-N.service"
  std::int64_t pid = 0;
  std::optional<DumpRecord> record;
};

/// Why the machine could not be had: `skip` (no root or kernel support, no network for the first
/// debootstrap) or a failure.
struct MachineProblem {
  bool skip = false;
  std::string why;
};

/// The packaged machine, booted and configured by setup(); everything it started is stopped, and
/// core_pattern and fs.suid_dumpable restored, by the destructor (on every exit path).
class PackagedMachine {
 public:
  PackagedMachine();
  ~PackagedMachine();
  PackagedMachine(const PackagedMachine&) = delete;
  PackagedMachine& operator=(const PackagedMachine&) = delete;

  /// Builds (packaging/build-deb.sh) or takes ($COREDUMPD_DEB) the .deb, makes the cached root
  /// with the .deb's Depends, fetches systemd-coredump's coredumpctl, boots the machine, installs
  /// the .deb with dpkg -i, points the host's core_pattern at the machine's socket (under the
  /// core_pattern lock) and adds kMachineUser. Returns the problem, if any. Bounded throughout.
  std::optional<MachineProblem> setup();

  /// Crashes `program` (a path inside the machine; crasher's `--mode segv`) as transient unit
  /// "crashy-<n>" with LimitCORE=infinity, as `user` (empty: root), and waits (bounded, 60 s) for
  /// its record to leave InProgress in the machine's store.
  MachineCrash crash(int n, const std::string& program, const std::string& user = "");

  /// A set-uid root copy of the crasher (inside the machine), crashed as kMachineUser with the
  /// host's fs.suid_dumpable at 2 for the duration (at 0 the kernel dumps no set-uid program).
  MachineCrash crash_setuid(int n);

  /// Runs `argv` inside the machine as `user` (runuser; empty: root), stdout and stderr together.
  std::pair<ExitStatus, std::string> run_as(const std::string& user, const std::vector<std::string>& argv,
                                            std::chrono::milliseconds timeout = std::chrono::seconds(60)) const;

  /// Every record in the machine's store (read from the host through /proc/<leader>/root).
  std::vector<DumpRecord> records() const;

  /// Path of systemd-coredump 252's coredumpctl inside the machine (bind-mounted read-only).
  static constexpr const char* kCoredumpctl = "/opt/systemd-coredump/usr/bin/coredumpctl";

  const NspawnMachine& machine() const { return machine_; }
  const std::string& dir() const { return dir_.path(); }
  /// nspawn's output and anything setup() logged, for failure reports.
  std::string log() const;

 private:
  std::optional<MachineProblem> build_deb();
  std::optional<MachineProblem> fetch_coredumpctl(const std::string& root);

  TempDir dir_;
  NspawnMachine machine_;
  std::string deb_, coredumpctl_dir_;
  std::unique_ptr<CorePatternLock> pattern_;
};

}  // namespace coredumpd::test
