// colour_wanted() and the ANSI sequences: systemd 252's get_color_mode()/colors_enabled() and
// ansi_*() (src/basic/terminal-util.{c,h}). The pager is cli/pager.cc.
#include "cli/terminal.h"

#include <strings.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "cli/terminal_state.h"

namespace coredumpd::cli {

namespace {

/// $SYSTEMD_COLORS as systemd reads it: 1 on, 0 off, -1 unset or not understood (then the other
/// rules decide, as systemd does).
int systemd_colors() {
  const char* v = std::getenv("SYSTEMD_COLORS");
  if (v == nullptr) return -1;
  for (const char* t : {"1", "yes", "y", "true", "t", "on", "16", "256", "24bit"})
    if (strcasecmp(v, t) == 0) return 1;
  for (const char* f : {"0", "no", "n", "false", "f", "off"})
    if (strcasecmp(v, f) == 0) return 0;
  return -1;
}

}  // namespace

bool colour_wanted(int fd) {
  const int forced = systemd_colors();
  if (forced >= 0) return forced == 1;
  if (std::getenv("NO_COLOR") != nullptr) return false;  // presence is enough, whatever its value
  const char* term = std::getenv("TERM");
  if (term == nullptr || std::strcmp(term, "dumb") == 0) return false;
  if (terminal_state::pager_running && (fd == STDOUT_FILENO || fd == STDERR_FILENO)) return true;
  return isatty(fd) == 1;
}

// The sequences of systemd's terminal-util.h (ANSI_HIGHLIGHT_RED, ANSI_HIGHLIGHT, ANSI_GREY, ANSI_NORMAL).
const char* ansi_highlight_red(bool colour) { return colour ? "\x1B[0;1;31m" : ""; }
const char* ansi_highlight(bool colour) { return colour ? "\x1B[0;1;39m" : ""; }
const char* ansi_grey(bool colour) { return colour ? "\x1B[0;38;5;245m" : ""; }
const char* ansi_normal(bool colour) { return colour ? "\x1B[0m" : ""; }

}  // namespace coredumpd::cli
