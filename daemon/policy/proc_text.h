// Small scanners for the texts of /proc that container identification reads (cgroup paths,
// status lines, id maps): digits, container ids, decimal numbers. Header-only, no I/O.
#pragma once

#include <charconv>
#include <cstdint>
#include <limits>
#include <optional>
#include <string_view>
#include <vector>

#include "util/text.h"

namespace coredumpd::proc_text {

inline constexpr std::uint64_t kU32Max = std::numeric_limits<std::uint32_t>::max();

using coredumpd::all_digits;
using coredumpd::is_digit;
using coredumpd::is_lower_hex;

inline bool is_alnum(char c) { return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

/// A container id as docker, podman, containerd and CRI-O generate them: 32 random bytes in hex.
inline bool is_hex64(std::string_view s) {
  if (s.size() != 64) return false;
  for (char c : s)
    if (!is_lower_hex(c)) return false;
  return true;
}

/// Decimal digits only (no sign, no blanks), fitting an int64; std::nullopt otherwise.
inline std::optional<std::int64_t> parse_decimal(std::string_view s) {
  if (!all_digits(s)) return std::nullopt;
  std::int64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

/// The '/'-separated components of a cgroup path, empty ones dropped.
inline std::vector<std::string_view> cgroup_components(std::string_view path) {
  std::vector<std::string_view> out;
  while (!path.empty()) {
    const auto slash = path.find('/');
    const auto comp = path.substr(0, slash);
    if (!comp.empty()) out.push_back(comp);
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash + 1);
  }
  return out;
}

}  // namespace coredumpd::proc_text
