// The analysis of one core with libdwfl: its modules (dwfl_core_file_report) and its threads'
// frames (dwfl_core_file_attach, dwfl_getthread_frames), capped, crashing thread first.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "analysis/crash_report.h"

namespace coredumpd::analyzer {

/// Frames counted (not kept) past the frame cap before a thread's unwinding stops: bounds the time
/// and memory of a runaway or cyclic stack.
inline constexpr std::size_t kMaxFramesCounted = 4096;

/// What the unwinding needs from the request.
struct UnwindOptions {
  std::optional<std::int64_t> crashing_tid;          ///< else the first NT_PRSTATUS thread
  std::map<std::int64_t, std::string> thread_names;  ///< tid -> comm
  std::size_t max_threads = analysis::kDefaultMaxThreads;  ///< threads unwound, crashing one included
  std::size_t max_frames = analysis::kDefaultMaxFrames;    ///< frames kept per thread
  bool debuginfod = false;                           ///< debuginfod URLs are set in the environment
};

/// Analyses the ELF core readable at `core_fd` (read with ELF_C_READ: libelf reads the headers and
/// then only the chunks asked for, never the whole core into memory). Modules are found by build-id
/// and path (dwfl_build_id_find_elf), debug files in /usr/lib/debug/.build-id/ and beside them
/// (dwfl_standard_find_debuginfo), and through debuginfod when its URLs are in the environment.
/// Returns state "ok" with modules and threads (without signature, timing or size fitting), or
/// "unavailable" with the reason (not an ELF core, no threads). Never throws for the core's content.
analysis::CrashReport unwind_core(int core_fd, const UnwindOptions& options);

}  // namespace coredumpd::analyzer
