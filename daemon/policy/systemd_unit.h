// systemd's view of a cgroup path: the unit, the slice, and inside a user manager or a session the
// user's unit and slice, computed as libsystemd's sd_pid_get_unit() and friends do
// (src/basic/cgroup-util.c, src/basic/unit-name.c). Pure: it reads only the path.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace coredumpd {

/// The systemd units of one cgroup path.
struct SystemdUnits {
  /// The first non-slice component, if it is a valid unit name ("nginx.service",
  /// "docker-<id>.scope", "session-3.scope") (sd_pid_get_unit()).
  std::string unit;
  /// The right-most of the slices before the unit ("system.slice", "user-1000.slice"), "-.slice"
  /// for a unit at the root (sd_pid_get_slice()). Both empty when the path starts with neither
  /// (e.g. docker's cgroupfs `/docker/<id>`); `slice` alone for a path of slices only (a
  /// Kubernetes pod slice).
  std::string slice;
  /// Inside a user manager (`user@<uid>.service`) or a session scope: the unit and slice below it,
  /// as sd_pid_get_user_unit()/sd_pid_get_user_slice() compute them ("app-firefox-1234.scope").
  std::string user_unit, user_slice;
  /// The uid of a `user-<uid>.slice` slice (sd_pid_get_owner_uid()), when there is one.
  std::optional<std::int64_t> owner_uid;
};

/// The units of a cgroup path given as its '/'-separated components (empty ones dropped).
SystemdUnits systemd_units(const std::vector<std::string_view>& components);

/// Undoes systemd's unit name escaping (unit_name_escape()): every `\xHH` becomes the byte 0xHH
/// (except NUL, left as is); everything else is copied.
std::string systemd_unescape(std::string_view s);

}  // namespace coredumpd
