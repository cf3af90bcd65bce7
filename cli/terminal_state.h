// State shared by the pager and the colour decision (cli/pager.cc, cli/terminal.cc); not for callers.
#pragma once

namespace coredumpd::cli::terminal_state {

/// True while a pager from start_pager() holds fd 1 and 2 (they were a terminal when it started).
inline bool pager_running = false;

}  // namespace coredumpd::cli::terminal_state
