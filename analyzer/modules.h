// What libdwfl knows of the core's modules (executable, shared objects, vDSO) and of one program
// counter: its module, symbol and source line.
#pragma once

#include <elfutils/libdwfl.h>

#include <string>
#include <vector>

#include "analysis/crash_report.h"

namespace coredumpd::analyzer {

/// The modules of a reported core, by start address, at most analysis::kMaxModules.
struct ModuleScan {
  std::vector<analysis::Module> modules;
  std::size_t omitted = 0;             ///< modules past kMaxModules
  std::vector<std::string> warnings;   ///< modules without their ELF file (deleted, missing, other build-id)
  bool missing_files = false;          ///< some module had no local ELF file (debuginfod was asked when on)
};

/// Lists `dwfl`'s modules with their path, build-id (dwfl_module_build_id), address range, the ELF
/// and separate debug file libdwfl used (after the unwinding, so the debug file of every module
/// with a frame is known) and their .note.package. Never throws for the core's content.
ModuleScan scan_modules(Dwfl* dwfl);

/// One frame: `pc` symbolised with `dwfl`'s modules. A non-activation frame (a return address) is
/// looked up at pc - 1, inside the call instruction, so a call as the last instruction of a
/// function is not taken for the next function. Unknown parts stay empty/0.
analysis::Frame describe_frame(Dwfl* dwfl, Dwarf_Addr pc, bool activation);

/// A symbol demangled (abi::__cxa_demangle) when it is a C++ name, else as it is.
std::string demangle(const char* symbol);

}  // namespace coredumpd::analyzer
