#include "daemon/policy/id_map.h"

#include "daemon/policy/proc_text.h"

namespace coredumpd {

namespace {

using std::string_view;
using proc_text::is_digit;
using proc_text::kU32Max;

constexpr std::size_t kMaxExtents = 340;  // UID_GID_MAP_MAX_EXTENTS (include/linux/user_namespace.h)

bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\v' || c == '\f' || c == '\r'; }

// One unsigned 32-bit decimal number at the start of `s`, which is advanced past it.
std::optional<std::uint32_t> take_u32(string_view& s) {
  std::size_t i = 0;
  std::uint64_t v = 0;
  while (i < s.size() && is_digit(s[i])) {
    v = v * 10 + static_cast<std::uint64_t>(s[i] - '0');
    if (v > kU32Max) return std::nullopt;
    ++i;
  }
  if (i == 0) return std::nullopt;
  s.remove_prefix(i);
  return static_cast<std::uint32_t>(v);
}

std::size_t skip_blanks(string_view& s) {
  std::size_t n = 0;
  while (n < s.size() && is_blank(s[n])) ++n;
  s.remove_prefix(n);
  return n;
}

std::optional<IdExtent> parse_extent(string_view line) {
  skip_blanks(line);
  const auto inside = take_u32(line);
  if (!inside || skip_blanks(line) == 0) return std::nullopt;
  const auto outside = take_u32(line);
  if (!outside || skip_blanks(line) == 0) return std::nullopt;
  const auto count = take_u32(line);
  if (!count) return std::nullopt;
  skip_blanks(line);
  if (!line.empty()) return std::nullopt;
  // The kernel's checks: (u32)-1 is no id, and neither range may be empty or wrap.
  if (*inside == kU32Max || *outside == kU32Max || *count == 0) return std::nullopt;
  if (std::uint64_t{*inside} + *count > kU32Max || std::uint64_t{*outside} + *count > kU32Max) return std::nullopt;
  return IdExtent{*inside, *outside, *count};
}

bool ranges_overlap(std::uint32_t a, std::uint32_t b, std::uint32_t count_a, std::uint32_t count_b) {
  const std::uint64_t a_last = std::uint64_t{a} + count_a - 1, b_last = std::uint64_t{b} + count_b - 1;
  return a <= b_last && b <= a_last;
}

enum class Direction { ToNamespace, FromNamespace };

std::optional<std::int64_t> map_id(std::int64_t id, string_view text, Direction dir) {
  if (id < 0 || id >= static_cast<std::int64_t>(kU32Max)) return std::nullopt;
  const auto extents = parse_id_map(text);
  if (!extents) return std::nullopt;
  for (const auto& e : *extents) {
    const std::int64_t from = dir == Direction::ToNamespace ? e.outside : e.inside;
    const std::int64_t to = dir == Direction::ToNamespace ? e.inside : e.outside;
    if (id >= from && id < from + std::int64_t{e.count}) return to + (id - from);
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::vector<IdExtent>> parse_id_map(string_view text) {
  std::vector<IdExtent> out;
  while (!text.empty()) {
    const auto nl = text.find('\n');
    const auto line = text.substr(0, nl);
    text.remove_prefix(nl == string_view::npos ? text.size() : nl + 1);
    if (out.size() == kMaxExtents) return std::nullopt;
    const auto e = parse_extent(line);
    if (!e) return std::nullopt;
    for (const auto& o : out)  // mappings_overlap(): O(n^2) over at most 340 extents
      if (ranges_overlap(o.inside, e->inside, o.count, e->count) || ranges_overlap(o.outside, e->outside, o.count, e->count))
        return std::nullopt;
    out.push_back(*e);
  }
  return out;
}

std::optional<std::int64_t> map_id_to_namespace(std::int64_t host_id, string_view id_map) {
  return map_id(host_id, id_map, Direction::ToNamespace);
}

std::optional<std::int64_t> map_id_from_namespace(std::int64_t ns_id, string_view id_map) {
  return map_id(ns_id, id_map, Direction::FromNamespace);
}

}  // namespace coredumpd
