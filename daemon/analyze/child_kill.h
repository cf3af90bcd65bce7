// Ending the analyzer a thread of this process started, from another thread: how a stop reaches a
// running analysis while analysis::run_analyzer() takes no stop token.
#pragma once

#include <sys/types.h>

namespace coredumpd {

/// Sends SIGKILL to every child process of thread `tid` of this process
/// (/proc/self/task/<tid>/children), each through a pidfd opened while it was listed as that
/// thread's child, so a recycled pid is never signalled. Returns how many were signalled; 0 when
/// there were none or /proc cannot tell. Never throws.
int kill_children_of_thread(pid_t tid);

}  // namespace coredumpd
