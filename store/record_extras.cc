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

std::optional<ShortCore> short_core_from_extra(const nlohmann::json& extra) {
  if (!extra.is_object()) return std::nullopt;
  const auto expected = extra.find(extras::kCoreExpectedBytes);
  const auto received = extra.find(extras::kCoreReceivedBytes);
  if (expected == extra.end() || received == extra.end() || !expected->is_number_unsigned() ||
      !received->is_number_unsigned())
    return std::nullopt;
  const ShortCore s{expected->get<std::uint64_t>(), received->get<std::uint64_t>()};
  if (s.expected <= s.received) return std::nullopt;
  return s;
}

}  // namespace coredumpd
