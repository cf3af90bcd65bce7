#include "store/record_extras.h"

#include "store/dump_record.h"

namespace coredumpd {

std::string rule_from_extra(const nlohmann::json& extra) {
  if (!extra.is_object()) return {};
  const auto it = extra.find(extras::kRule);
  return it != extra.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::optional<std::string> container_key_from_extra(const nlohmann::json& extra) {
  if (!extra.is_object()) return std::nullopt;
  const auto c = extra.find(extras::kContainer);
  if (c == extra.end() || !c->is_object()) return std::nullopt;
  const auto key = c->find(extras::kContainerKey);
  if (key == c->end()) return std::string();
  return bytes_from_json(*key).value_or("");
}

}  // namespace coredumpd
