// Shared by the configuration unit tests: one document parsed as the file "test.json", or its error.
#pragma once

#include <string>
#include <utility>

#include "daemon/policy/config.h"

namespace coredumpd::unit {

/// The built-in defaults with the test hooks on (coredumpd --enable-test-hooks): a "testing" section loads.
inline Config with_test_hooks() {
  Config c;
  c.test_hooks = true;
  return c;
}

/// `text` applied over `base` (the built-in defaults); errors name the file "test.json".
inline Config parse(const std::string& text, Config base = Config{}) {
  return apply_config_json("test.json", text, std::move(base));
}

/// The ConfigError parse() throws for `text` ("test.json: <key>: <reason>"), or "" if it is accepted.
inline std::string error_of(const std::string& text, Config base = Config{}) {
  try {
    parse(text, std::move(base));
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

}  // namespace coredumpd::unit
