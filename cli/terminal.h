// What systemd's tools do on a terminal, for dumpctl: a pager (systemd's pager_open()) and colour.
#pragma once

#include <memory>

namespace coredumpd::cli {

/// A running pager that dumpctl's standard output goes to; the destructor flushes std::cout,
/// closes the pipe and waits for the pager to exit (the user quits it).
class Pager {
 public:
  virtual ~Pager() = default;
};

/// Starts a pager as systemd's tools do when standard output is a terminal and `no_pager` is
/// false: $SYSTEMD_PAGER, else $PAGER, else less (then more); "" or "cat" in either variable
/// means none, as does $SYSTEMD_PAGER=... unset with $NO_PAGER... (see systemd's pager.c); less
/// gets LESS=FRSXMK (unless $SYSTEMD_LESS says otherwise) so short output does not page.
/// Standard output (fd 1) is redirected to the pager's stdin. Returns nullptr when no pager runs
/// (not a terminal, disabled, or it could not start: then dumpctl just writes to the terminal).
std::unique_ptr<Pager> start_pager(bool no_pager);

/// Whether output to `fd` gets ANSI colour, as systemd decides: $SYSTEMD_COLORS (a boolean, or
/// "16"/"256"/"24bit" meaning yes), else $NO_COLOR set means no, else $TERM=dumb means no, else
/// whether `fd` is a terminal.
bool colour_wanted(int fd);

/// ANSI sequences, or "" when colour is off (dumpctl passes the result of colour_wanted()).
const char* ansi_highlight_red(bool colour);   ///< a failed or missing core, as systemd's red
const char* ansi_highlight(bool colour);       ///< bold: a field's value worth seeing first
const char* ansi_grey(bool colour);            ///< less important text (legend, "(19s ago)")
const char* ansi_normal(bool colour);          ///< back to normal

}  // namespace coredumpd::cli
