// Filling a record's identity from the core's own notes where the handshake could not read /proc
// (a stalled read overtaken by the deadline, a forwarded crash, a process gone): comm, the command
// line, the executable, the mapped files and the signal, each named in extra.from_core.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "protocol/core_notes.h"
#include "store/dump_record.h"

namespace coredumpd {

/// The executable's path from NT_FILE: the mapping that contains AT_ENTRY (NT_AUXV), since the
/// kernel maps the executable's text there (ld.so's when ld.so itself was run, as /proc/<pid>/exe
/// would also say). Without AT_ENTRY, the first mapping at file offset 0 whose base name begins
/// with `core.fname` (comm is the first 15 bytes of the exec'd file's base name). Never the lowest
/// mapping as such: with the legacy mmap layout (ulimit -s unlimited) libraries lie below a PIE
/// executable. std::nullopt when neither identifies a mapping (comm changed by prctl, no NT_FILE).
std::optional<std::string> exe_from_core(const protocol::CoreFacts& core);

/// Splits NT_PRPSINFO pr_psargs into arguments at spaces. Lossy, and said so where it is shown: the
/// kernel keeps only the first 79 bytes of the command line and turns its NULs into spaces, so an
/// argument holding a space comes back as two.
std::vector<std::string> argv_from_psargs(const std::string& psargs);

/// Fills the fields of `r` the handshake left empty from `core`: comm, argv, exe, signal, and the
/// NT_FILE mappings (extra.core_mapped_files) when extra.proc has no maps. Names each field filled
/// in extra.from_core (store/record_extras.h); nothing is overwritten. Returns the names filled.
std::vector<std::string> fill_from_core(const protocol::CoreFacts& core, DumpRecord& r);

}  // namespace coredumpd
