// What systemd's tools do on a terminal, for dumpctl: a pager (systemd's pager_open()) and colour.
// The source of each rule is systemd 252: src/shared/pager.c (pager_open(), pager_close()) and
// src/basic/terminal-util.c (terminal_is_dumb(), get_color_mode()).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace coredumpd::cli {

/// A running pager that dumpctl's standard output goes to; the destructor flushes std::cout,
/// closes the pipe and waits for the pager to exit (the user quits it).
class Pager {
 public:
  virtual ~Pager() = default;
};

/// What start_pager() runs, decided from the environment as systemd 252's pager_open() does.
struct PagerPlan {
  /// $SYSTEMD_PAGER, else $PAGER, split on whitespace; tried first (execvp) only when trusted:
  /// $SYSTEMD_PAGERSECURE is set to a boolean. Empty when unset or not trusted.
  std::vector<std::string> user_pager;
  /// Tried next, in order, without arguments: "pager" (Debian's alternative), "less", "more"; in
  /// secure mode only "less". After them the built-in pager copies its input to the terminal.
  std::vector<std::string> fallbacks;
  std::string less;     ///< $LESS for the pager: $SYSTEMD_LESS, default "FRSXMK"
  bool secure = false;  ///< secure mode: LESSSECURE=1 is set for the pager (else LESSSECURE is unset)
};

/// The pager start_pager(no_pager) would run, or std::nullopt when none runs: `no_pager`, standard
/// output or standard error not a terminal, $TERM unset or "dumb", or $SYSTEMD_PAGER (else $PAGER)
/// empty, blank or "cat". Secure mode: $SYSTEMD_PAGERSECURE as a boolean (unparsable: secure);
/// unset: secure when running with escalated privileges ($SUDO_UID set, or the login session's
/// owner, sd_pid_get_owner_uid(), unknown or not the effective uid), as systemd 252.39 decides.
std::optional<PagerPlan> plan_pager(bool no_pager);

/// Starts a pager as systemd's tools do when standard output is a terminal and `no_pager` is
/// false (see plan_pager()). The pager's stdin is a pipe that is dup2()ed onto standard output
/// and standard error, as systemd does; it gets LESS, LESSSECURE and LESSCHARSET ($SYSTEMD_LESSCHARSET,
/// else "utf-8" in a UTF-8 locale). When the pager is less and $LESS lacks 'K', dumpctl ignores SIGINT
/// while the pager runs (less then handles Ctrl-C itself), as systemd does; the destructor restores
/// it. Returns nullptr when no pager runs (not a terminal, disabled, or it could not start: then
/// dumpctl just writes to the terminal).
std::unique_ptr<Pager> start_pager(bool no_pager);

/// Whether output to `fd` gets ANSI colour, as systemd decides: $SYSTEMD_COLORS (a boolean, or
/// "16"/"256"/"24bit" meaning yes), else $NO_COLOR set means no, else $TERM unset or "dumb" means
/// no, else whether `fd` is a terminal. While a pager started by start_pager() runs, fd 1 and 2 count
/// as the terminal the pager writes to (systemd decides before the pager starts, from the same tty).
bool colour_wanted(int fd);

/// ANSI sequences, or "" when colour is off (dumpctl passes the result of colour_wanted()).
const char* ansi_highlight_red(bool colour);   ///< a failed or missing core, as systemd's red
const char* ansi_highlight(bool colour);       ///< bold: a field's value worth seeing first
const char* ansi_grey(bool colour);            ///< less important text (legend, "(19s ago)")
const char* ansi_normal(bool colour);          ///< back to normal

}  // namespace coredumpd::cli
