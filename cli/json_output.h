// Printing JSON the same way from every dumpctl command.
#pragma once

#include <nlohmann/json.hpp>

#include "cli/dumpctl.h"

namespace coredumpd::cli {

/// Writes `j` pretty-printed (2-space indent) and a newline to `io.out`. On a terminal
/// (`io.out_is_tty`) every non-ASCII character is written as a \u escape, so that no C1 control or
/// bidi override reaches the terminal; otherwise UTF-8 is written as is. Invalid UTF-8 in strings
/// (only possible inside a record's `extra`) is replaced by U+FFFD instead of throwing.
void print_json(const nlohmann::json& j, const Io& io);

}  // namespace coredumpd::cli
