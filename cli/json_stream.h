// A JSON array written an element at a time, byte for byte as nlohmann::json::dump() writes the
// whole array: a listing of thousands of records never holds them all as JSON values.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "cli/dumpctl.h"

namespace coredumpd::cli {

/// Writes "[", the elements, "]\n" to io.out, as print_json() (cli/json_output.h) would write the
/// whole array in `mode` (Short: one line; Pretty, or Off: a tab per level), with \u escapes on a
/// terminal (io.out_is_tty) and invalid UTF-8 replaced by U+FFFD.
class JsonArrayWriter {
 public:
  JsonArrayWriter(const Io& io, JsonMode mode) : io_(io), indent_(mode == JsonMode::Short ? -1 : 1) {}
  /// Writes one element.
  void add(const nlohmann::json& element);
  /// Writes the closing bracket and a newline (for an empty array, "[]\n").
  void finish();

 private:
  const Io& io_;
  int indent_;
  bool any_ = false;
};

}  // namespace coredumpd::cli
