#include "daemon/policy/systemd_unit.h"

#include <array>

#include "daemon/policy/proc_text.h"

namespace coredumpd {

namespace {

using std::string_view;
using namespace proc_text;

// unit_name_is_valid(), simplified: [a-zA-Z0-9:_.\\@-]+ before a known suffix, at most 255 bytes.
bool is_unit_with_suffix(string_view c, string_view suffix) {
  if (c.size() <= suffix.size() || c.size() > 255 || !c.ends_with(suffix)) return false;
  for (char ch : c.substr(0, c.size() - suffix.size()))
    if (!is_alnum(ch) && ch != ':' && ch != '-' && ch != '_' && ch != '.' && ch != '\\' && ch != '@') return false;
  return true;
}

bool is_slice(string_view c) { return is_unit_with_suffix(c, ".slice"); }

// Units that can hold processes (cg_path_decode_unit() accepts any valid non-slice unit name; these
// are the types systemd ever puts processes into).
bool is_process_unit(string_view c) {
  static constexpr std::array<string_view, 5> kSuffixes = {".service", ".scope", ".socket", ".mount", ".swap"};
  for (auto suffix : kSuffixes)
    if (is_unit_with_suffix(c, suffix)) return true;
  return false;
}

// skip_user_manager() / skip_session() in cgroup-util.c: "user@<uid>.service", "session-<id>.scope".
bool is_user_manager(string_view c) {
  if (!c.starts_with("user@") || !c.ends_with(".service")) return false;
  return all_digits(c.substr(5, c.size() - 5 - 8));
}
bool is_session_scope(string_view c) { return c.starts_with("session-") && c.size() > 14 && c.ends_with(".scope"); }

}  // namespace

SystemdUnits systemd_units(const std::vector<string_view>& comps) {
  SystemdUnits units;
  std::size_t i = 0;
  string_view slice;
  while (i < comps.size() && is_slice(comps[i])) slice = comps[i++];
  units.slice = std::string(slice);
  if (i < comps.size() && is_process_unit(comps[i])) {
    units.unit = std::string(comps[i]);
    if (slice.empty()) units.slice = "-.slice";
    if (is_user_manager(comps[i]) || is_session_scope(comps[i])) {
      std::size_t j = i + 1;
      string_view user_slice;
      while (j < comps.size() && is_slice(comps[j])) user_slice = comps[j++];
      if (j < comps.size() && is_process_unit(comps[j])) {
        units.user_unit = std::string(comps[j]);
        units.user_slice = user_slice.empty() ? std::string("-.slice") : std::string(user_slice);
      }
    }
  }
  // cg_path_get_owner_uid(): the slice "user-<uid>.slice".
  if (slice.starts_with("user-") && slice.ends_with(".slice")) {
    if (auto uid = parse_decimal(slice.substr(5, slice.size() - 5 - 6)); uid && *uid < static_cast<std::int64_t>(kU32Max))
      units.owner_uid = uid;
  }
  return units;
}

std::string systemd_unescape(string_view s) {
  std::string out;
  out.reserve(s.size());
  const auto hex = [](char c) -> int {
    if (is_digit(c)) return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size() && s[i + 1] == 'x') {
      const int hi = hex(s[i + 2]), lo = hex(s[i + 3]);
      if (hi >= 0 && lo >= 0 && (hi | lo) != 0) {
        out += static_cast<char>(hi * 16 + lo);
        i += 3;
        continue;
      }
    }
    out += s[i];
  }
  return out;
}

}  // namespace coredumpd
