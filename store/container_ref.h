// How a user names a container: the one definition shared by a rule's "container" condition
// (daemon/policy/policy.cc) and `dumpctl list --container` (cli/), so both select the same crashes.
#pragma once

#include <cstddef>
#include <string_view>

namespace coredumpd {

/// Shortest container id prefix accepted as a reference (docker's short ids are 12 hex digits).
inline constexpr std::size_t kMinContainerIdPrefix = 12;

/// True if `ref` names the container whose container_key() is `key` ("docker:<id>", "host", ...),
/// whose name is `name` (may be empty: no name) and whose full id is `id` (may be empty): `ref` is
/// the key, the name, or a prefix of the id at least kMinContainerIdPrefix characters long.
bool container_ref_matches(std::string_view ref, std::string_view key, std::string_view name, std::string_view id);

}  // namespace coredumpd
