// Every thread's name (/proc/<pid>/task/<tid>/comm), read before the coredump_ack while the task's
// threads still exist, keyed by the TID the core's NT_PRSTATUS notes carry (the task's own pid
// namespace), so the crash analysis can name the threads of its stack traces.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <span>

#include <nlohmann/json.hpp>

#include "daemon/proc/collect.h"
#include "daemon/proc/proc_dir.h"

namespace coredumpd {

/// At most this many thread names are read per crash. A name is at most 16 bytes, so the cap keeps
/// extra.thread_names under ~150 KiB in the index row, and its read cost (bench/README.md "Thread
/// names") far inside the handshake deadline; the analysis shows kDefaultMaxThreads*16 threads at
/// most, so names beyond it would never be shown anyway.
inline constexpr std::size_t kThreadNamesMax = 4096;

/// What read_thread_names() found.
struct ThreadNames {
  /// {"<tid in the task's pid namespace>": byte string (bytes_to_json)}.
  nlohmann::json names = nlohmann::json::object();
  /// {"read", "omitted", "reason"} when some live threads' names were not read; null otherwise.
  nlohmann::json incomplete;
  /// A read failure other than a thread that is gone ("task/12/comm: Permission denied"); the
  /// first one, empty if none.
  std::string error;
};

/// Reads task/<host_tid>/comm through `proc` for each of `threads` (as the threads collector listed
/// them from the task/ directory and their NSpid lines), in order, until `cap` names are read or
/// `stop_at` passes. A thread gone meanwhile (ENOENT, ESRCH) is skipped, not counted. `total` is how
/// many threads the process has if more than `threads` lists (the list was truncated); omitted
/// counts the live threads whose name was not read (not reached, or a read that failed), `reason`
/// says why ("more than 4096 threads", "time budget: ...", or the first failed read).
ThreadNames read_thread_names(const ProcDir& proc, std::span<const ThreadIds> threads, std::size_t cap,
                              std::chrono::steady_clock::time_point stop_at, std::optional<std::size_t> total = {});

/// The "Threads:" count of a /proc/<pid>/status text; std::nullopt if absent.
std::optional<std::size_t> parse_status_threads(const std::string& status);

}  // namespace coredumpd
