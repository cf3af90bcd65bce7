// Shared by the configuration unit tests: one document parsed as the file "test.json", or its error.
#pragma once

#include <string>

#include "daemon/policy/config.h"

namespace coredumpd::unit {

/// `text` applied over the built-in defaults; errors name the file "test.json".
inline Config parse(const std::string& text) { return apply_config_json("test.json", text, Config{}); }

/// The ConfigError parse() throws for `text` ("test.json: <key>: <reason>"), or "" if it is accepted.
inline std::string error_of(const std::string& text) {
  try {
    parse(text);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

}  // namespace coredumpd::unit
