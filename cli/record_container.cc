#include "cli/record_container.h"

#include "cli/format.h"
#include "store/container_ref.h"
#include "store/record_extras.h"
#include "util/text.h"

namespace coredumpd::cli {

namespace {

// A byte-string field of the container object ("" when absent or malformed).
std::string field(const nlohmann::json& c, const char* name) {
  const auto it = c.find(name);
  if (it == c.end()) return {};
  return bytes_from_json(*it).value_or("");
}

}  // namespace

nlohmann::json record_container(const DumpRecord& r) {
  if (!r.extra.is_object()) return nullptr;
  const auto it = r.extra.find(extras::kContainer);
  if (it == r.extra.end() || !it->is_object()) return nullptr;
  return *it;
}

bool record_in_container(const DumpRecord& r, const std::string& ref) {
  const nlohmann::json c = record_container(r);
  if (c.is_null()) return false;
  return container_ref_matches(ref, field(c, extras::kContainerKey), field(c, extras::kContainerName), field(c, extras::kContainerId));
}

std::string container_short(const DumpRecord& r) {
  const nlohmann::json c = record_container(r);
  if (c.is_null()) return "-";
  if (const auto name = field(c, extras::kContainerName); !name.empty()) return escape_for_display(name);
  if (const auto id = field(c, extras::kContainerId); !id.empty()) return escape_for_display(id.substr(0, kMinContainerIdPrefix));
  const auto key = field(c, extras::kContainerKey);
  if (key.empty() || key == "host" || key.starts_with("systemd:")) return "-";
  return escape_for_display(key);
}

}  // namespace coredumpd::cli
