// A JSON array written an element at a time, byte for byte as nlohmann::json::dump() writes the
// whole array: a listing of thousands of records never holds them all as JSON values.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "cli/dumpctl.h"

namespace coredumpd::cli {

/// Writes "[", the elements, "]\n" to io.out, as print_json() would write the array: `indent`
/// spaces per level (< 0: compact, one line), \u escapes on a terminal (io.out_is_tty), invalid
/// UTF-8 replaced by U+FFFD.
class JsonArrayWriter {
 public:
  explicit JsonArrayWriter(const Io& io, int indent = 2) : io_(io), indent_(indent) {}
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
