#include "store/record_facts.h"

#include <cstdint>
#include <string_view>

#include "store/record_extras.h"

namespace coredumpd {

std::string json_bytes_at(const nlohmann::json& obj, const char* key) {
  if (!obj.is_object()) return "";
  const auto it = obj.find(key);
  if (it == obj.end()) return "";
  return bytes_from_json(*it).value_or("");
}

std::string json_integer_at(const nlohmann::json& obj, const char* key) {
  if (!obj.is_object()) return "";
  const auto it = obj.find(key);
  if (it == obj.end()) return "";
  if (it->is_number_unsigned()) return std::to_string(it->get<std::uint64_t>());
  if (it->is_number_integer()) return std::to_string(it->get<std::int64_t>());
  return "";
}

const nlohmann::json& container_facts(const DumpRecord& r) {
  static const nlohmann::json kNull;
  if (!r.extra.is_object()) return kNull;
  const auto it = r.extra.find(extras::kContainer);
  return it != r.extra.end() && it->is_object() ? *it : kNull;
}

std::string cgroup_path(const DumpRecord& r) {
  if (std::string p = json_bytes_at(container_facts(r), "cgroup_path"); !p.empty()) return p;
  std::size_t pos = 0;
  while (pos < r.cgroup.size()) {
    std::size_t nl = r.cgroup.find('\n', pos);
    if (nl == std::string::npos) nl = r.cgroup.size();
    const std::string_view line(r.cgroup.data() + pos, nl - pos);
    if (line.starts_with("0::")) return std::string(line.substr(3));
    pos = nl + 1;
  }
  return "";
}

std::string unit_of(const DumpRecord& r) { return json_bytes_at(container_facts(r), "unit"); }
std::string user_unit_of(const DumpRecord& r) { return json_bytes_at(container_facts(r), "user_unit"); }
std::string slice_of(const DumpRecord& r) { return json_bytes_at(container_facts(r), "slice"); }
std::string owner_uid_of(const DumpRecord& r) { return json_integer_at(container_facts(r), "owner_uid"); }

std::string session_of(const std::string& unit) {
  constexpr std::string_view kPrefix = "session-", kSuffix = ".scope";
  if (unit.size() <= kPrefix.size() + kSuffix.size() || !unit.starts_with(kPrefix) || !unit.ends_with(kSuffix)) return "";
  return unit.substr(kPrefix.size(), unit.size() - kPrefix.size() - kSuffix.size());
}

std::string cmdline_of(const DumpRecord& r) {
  std::string out;
  for (std::size_t i = 0; i < r.argv.size(); ++i) {
    if (i) out.push_back(' ');
    out += r.argv[i];
  }
  return out;
}

std::string rlimit_core_of(const DumpRecord& r) { return json_integer_at(r.extra, extras::kRlimitCore); }

}  // namespace coredumpd
