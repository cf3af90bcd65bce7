// The names the daemon gives core files in the store: "<id>.zst" (kCompressionZstd) or
// "<id>.core" (kCompressionNone), the id being 32 lower-case hex characters. Retention unlinks
// nothing else, and verify reads these names back to their rows.
#pragma once

#include <string>

namespace coredumpd {

/// The id a core file name belongs to ("<id>.zst" or "<id>.core" -> "<id>"), or "" if `name` is
/// not such a name.
std::string core_file_id(const std::string& name);

/// True if `path` is a name the daemon gives the core of dump `id` (`id` non-empty). Vacuum never
/// unlinks anything else, whatever the index says.
bool is_core_file_of(const std::string& id, const std::string& path);

}  // namespace coredumpd
