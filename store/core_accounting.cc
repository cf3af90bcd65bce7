#include "store/core_accounting.h"

#include <sys/statvfs.h>

#include <cstring>

#include "store/record_extras.h"

namespace coredumpd {

std::string errno_text(int err) { return std::strerror(err); }

namespace {

// DumpRecord and RowSummary name these fields alike.
template <typename Row>
std::string group_key_of(GroupKind k, const Row& r) {
  switch (k) {
    case GroupKind::Uid: return std::to_string(r.uid);
    case GroupKind::Rule: return r.rule;
  }
  return {};
}

template <typename Row>
bool holds_core_of(const Row& r) {
  return (r.state == DumpState::Complete || r.state == DumpState::Truncated) && !r.path.empty();
}

}  // namespace

const char* group_kind_name(GroupKind k) {
  switch (k) {
    case GroupKind::Uid: return "uid";
    case GroupKind::Rule: return "rule";
  }
  return "unknown";
}

std::string group_key(GroupKind k, const DumpRecord& r) {
  return group_key_of(k, r);
}

std::string group_key(GroupKind k, const RowSummary& r) {
  return group_key_of(k, r);
}

bool holds_core(const DumpRecord& r) {
  return holds_core_of(r);
}

bool holds_core(const RowSummary& r) {
  return holds_core_of(r);
}

std::optional<std::string> vacuumed_reason(const DumpRecord& r) {
  if (!r.extra.is_object()) return std::nullopt;
  const auto it = r.extra.find(extras::kVacuumed);
  if (it == r.extra.end() || !it->is_object()) return std::nullopt;
  const auto reason = it->find(extras::kVacuumedReason);
  if (reason == it->end() || !reason->is_string()) return std::string("unknown");
  return reason->get<std::string>();
}

std::optional<FsSpace> fs_space(int dirfd) {
  struct statvfs sv {};
  if (::fstatvfs(dirfd, &sv) != 0) return std::nullopt;
  FsSpace s;
  s.total_bytes = static_cast<std::uint64_t>(sv.f_blocks) * sv.f_frsize;
  s.free_bytes = static_cast<std::uint64_t>(sv.f_bavail) * sv.f_frsize;
  return s;
}

}  // namespace coredumpd
