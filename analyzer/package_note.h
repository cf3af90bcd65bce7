// systemd's package metadata note (https://systemd.io/ELF_PACKAGE_METADATA/): a PT_NOTE of owner
// "FDO", type 0xcafe1a7e, whose descriptor is one JSON object ({"type":"deb","name":...}).
#pragma once

#include <libelf.h>

#include <nlohmann/json.hpp>

namespace coredumpd::analyzer {

/// The note's type (NT_FDO_PACKAGING_METADATA).
inline constexpr unsigned kPackageNoteType = 0xcafe1a7e;

/// The first .note.package JSON object among `elf`'s PT_NOTE segments (libelf reads them, from a
/// file or a module image in the core), or null when there is none or it is not a JSON object.
/// The note comes from the core's world, so it is parsed without exceptions and capped at 64 KiB.
nlohmann::json read_package_note(Elf* elf);

}  // namespace coredumpd::analyzer
