// Logging setup: journald when our stderr is connected to the journal, else stderr.
#pragma once

#include <string>

namespace coredumpd {

/// Installs the default spdlog logger. Logs go to journald (with priorities) when $JOURNAL_STREAM
/// names our stderr, as under systemd; otherwise to stderr. `level` is an spdlog level name
/// ("debug", "info", "warning", ...). Throws std::invalid_argument for an unknown level.
void setup_logging(const std::string& level);

/// `s` made safe for a one-line log message, exactly as dumpctl shows it: escape_for_display()
/// (util/text.h), which escapes control characters, backslashes, bytes that are not valid UTF-8,
/// C1 controls, line separators and bidi overrides. Crashing processes choose their comm and argv.
std::string escape_for_log(const std::string& s);

}  // namespace coredumpd
