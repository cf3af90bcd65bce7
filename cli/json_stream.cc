#include "cli/json_stream.h"

namespace coredumpd::cli {

void JsonArrayWriter::add(const nlohmann::json& element) {
  std::string text = element.dump(indent_, '\t', /*ensure_ascii=*/io_.out_is_tty, nlohmann::json::error_handler_t::replace);
  if (indent_ < 0) {
    io_.out << (any_ ? "," : "[") << text;
  } else {
    // One level deeper than dump() puts it; a dumped string never holds a raw newline.
    const std::string pad(static_cast<std::size_t>(indent_), '\t');
    std::string nested;
    nested.reserve(text.size() + text.size() / 8);
    for (const char c : text) {
      nested += c;
      if (c == '\n') nested += pad;
    }
    io_.out << (any_ ? ",\n" : "[\n") << pad << nested;
  }
  any_ = true;
}

void JsonArrayWriter::finish() {
  if (!any_) {
    io_.out << "[]\n";
  } else {
    io_.out << (indent_ < 0 ? "]\n" : "\n]\n");
  }
}

}  // namespace coredumpd::cli
