// PLACEHOLDER from the integrator so that callers build while the real pager and colour logic is
// written (helper "time-terminal" replaces this file): no pager, no colour.
#include "cli/terminal.h"

namespace coredumpd::cli {

std::unique_ptr<Pager> start_pager(bool /*no_pager*/) { return nullptr; }
bool colour_wanted(int /*fd*/) { return false; }
const char* ansi_highlight_red(bool) { return ""; }
const char* ansi_highlight(bool) { return ""; }
const char* ansi_grey(bool) { return ""; }
const char* ansi_normal(bool) { return ""; }

}  // namespace coredumpd::cli
