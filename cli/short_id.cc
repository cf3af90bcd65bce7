#include "cli/short_id.h"

#include <algorithm>

namespace coredumpd::cli {

namespace {

std::size_t common_prefix(const std::string& a, const std::string& b) {
  const auto [ia, ib] = std::mismatch(a.begin(), a.end(), b.begin(), b.end());
  return static_cast<std::size_t>(ia - a.begin());
}

}  // namespace

ShortIds::ShortIds(std::vector<std::string> ids) : sorted_(std::move(ids)) {
  std::sort(sorted_.begin(), sorted_.end());
  sorted_.erase(std::unique(sorted_.begin(), sorted_.end()), sorted_.end());
}

std::string ShortIds::of(const std::string& id) const {
  // In sorted order, the ids sharing the longest prefix with `id` are its neighbours.
  const auto it = std::lower_bound(sorted_.begin(), sorted_.end(), id);
  std::size_t shared = 0;
  if (it != sorted_.end()) {
    // `it` is `id` itself, or the first id after it; skip itself.
    const auto next = (*it == id) ? std::next(it) : it;
    if (next != sorted_.end()) shared = std::max(shared, common_prefix(id, *next));
  }
  if (it != sorted_.begin()) shared = std::max(shared, common_prefix(id, *std::prev(it)));
  return id.substr(0, std::max(kMinShortId, shared + 1));
}

std::vector<std::string> ids_of(const std::vector<DumpRecord>& records) {
  std::vector<std::string> ids;
  ids.reserve(records.size());
  for (const auto& r : records) ids.push_back(r.id);
  return ids;
}

}  // namespace coredumpd::cli
