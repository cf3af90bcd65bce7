#include "store/core_names.h"

#include <algorithm>
#include <string_view>

#include "store/dump_record.h"
#include "util/text.h"

namespace coredumpd {

namespace {

constexpr std::size_t kIdHexChars = 32;

bool all_lower_hex(const std::string& s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return is_lower_hex(c); });
}

}  // namespace

std::string core_file_id(const std::string& name) {
  for (const std::string_view ext : {kZstdExtension, kRawExtension}) {
    if (name.size() <= ext.size() || !name.ends_with(ext)) continue;
    std::string id = name.substr(0, name.size() - ext.size());
    return id.size() == kIdHexChars && all_lower_hex(id) ? id : std::string();
  }
  return {};
}

bool is_core_file_of(const std::string& id, const std::string& path) {
  return !id.empty() && core_file_id(path) == id;
}

}  // namespace coredumpd
