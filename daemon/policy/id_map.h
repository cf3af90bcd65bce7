// uid_map / gid_map of a user namespace (user_namespaces(7)): parsing with the kernel's own rules,
// and mapping an id across the namespace boundary. Pure: it reads only the map's text.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace coredumpd {

/// One line of a uid_map or gid_map: ids [inside, inside+count) of the process's user namespace are
/// ids [outside, outside+count) of the reader's.
struct IdExtent {
  std::uint32_t inside = 0;
  std::uint32_t outside = 0;
  std::uint32_t count = 0;
};

/// Parses and validates a uid_map/gid_map text with the kernel's own rules (map_write() in
/// kernel/user_namespace.c): at most 340 lines of three unsigned 32-bit decimal numbers separated
/// by blanks (leading and trailing blanks allowed, as /proc pads them), each line ending in '\n'
/// except perhaps the last; count > 0; neither start is 4294967295; neither range wraps past 2^32;
/// no two extents overlap on either side. "" is valid (no mapping written yet: maps nothing).
/// std::nullopt if the text breaks any rule.
std::optional<std::vector<IdExtent>> parse_id_map(std::string_view text);

/// The id inside the namespace for `host_id` (an id of the map reader's namespace), through the
/// inverse of the map. std::nullopt if the map is invalid, the id is out of range
/// (not 0..4294967294) or unmapped.
std::optional<std::int64_t> map_id_to_namespace(std::int64_t host_id, std::string_view id_map);

/// The reverse: the host id (the reader's) for an id inside the namespace. Same failure cases.
std::optional<std::int64_t> map_id_from_namespace(std::int64_t ns_id, std::string_view id_map);

}  // namespace coredumpd
