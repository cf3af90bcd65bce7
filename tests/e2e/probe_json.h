// `coredumpd --probe` for the e2e tests that read what the kernel supports (promises_e2e_test,
// coredump_code_e2e_test). Needs COREDUMPD_BIN (e2e_test() defines it).
#pragma once

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>

#include "tests/support/test_support.h"

namespace coredumpd::test {

/// Runs `coredumpd --probe` on `store` (no configuration file) and returns its JSON; records a
/// failure and returns an empty object if it exits non-zero or prints no JSON.
inline nlohmann::json probe(const std::string& store) {
  const auto [st, out] = run_capture({COREDUMPD_BIN, "--probe", "--store", store, "--config", "/nonexistent"});
  EXPECT_EQ(st.exit_code(), 0) << out;
  try {
    return nlohmann::json::parse(out);
  } catch (const nlohmann::json::exception& e) {
    ADD_FAILURE() << "--probe printed no JSON (" << e.what() << "):\n" << out;
    return nlohmann::json::object();
  }
}

}  // namespace coredumpd::test
