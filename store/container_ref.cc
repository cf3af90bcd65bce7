#include "store/container_ref.h"

namespace coredumpd {

bool container_ref_matches(std::string_view ref, std::string_view key, std::string_view name, std::string_view id) {
  if (ref.empty()) return false;
  if (ref == key || (!name.empty() && ref == name)) return true;
  return !id.empty() && ref.size() >= kMinContainerIdPrefix && id.starts_with(ref);
}

}  // namespace coredumpd
