#include "cli/match.h"

#include <algorithm>

#include "cli/dumpctl.h"
#include "cli/format.h"
#include "util/text.h"

namespace coredumpd::cli {

namespace {

/// The newest record satisfying `pred`, or nullptr. Records are oldest first, so scan backwards.
template <typename Pred>
const DumpRecord* newest(const std::vector<DumpRecord>& records, Pred pred) {
  for (auto it = records.rbegin(); it != records.rend(); ++it) {
    if (pred(*it)) return &*it;
  }
  return nullptr;
}

}  // namespace

const DumpRecord& select_dump(const std::vector<DumpRecord>& records,
                              const std::optional<std::string>& match) {
  if (records.empty()) throw DumpctlError("no coredumps found");
  if (!match) return records.back();
  const std::string& m = *match;
  const auto no_match = [&] {
    return DumpctlError("no coredump matches '" + escape_for_display(m) + "'");
  };
  if (m.empty()) throw no_match();

  if (const auto* r = newest(records, [&](const DumpRecord& d) { return d.id == m; })) return *r;

  if (all_digits(m)) {
    const auto pid = [&]() -> std::optional<std::int64_t> {
      try {
        return std::stoll(m);
      } catch (const std::exception&) {
        return std::nullopt;  // out of range: cannot be a PID
      }
    }();
    if (pid) {
      if (const auto* r = newest(records, [&](const DumpRecord& d) { return d.pid == *pid; })) {
        return *r;
      }
    }
  }

  std::size_t prefix_matches = 0;
  if (!m.empty() && std::all_of(m.begin(), m.end(), is_hex_digit)) {
    const std::string lower = lower_hex(m);
    const DumpRecord* found = nullptr;
    for (const auto& d : records) {
      if (d.id.compare(0, lower.size(), lower) == 0) {
        found = &d;
        ++prefix_matches;
      }
    }
    if (prefix_matches == 1) return *found;
  }

  if (m.find('/') != std::string::npos) {
    const auto* r = newest(
        records, [&](const DumpRecord& d) { return d.exe == m || d.exe == m + " (deleted)"; });
    if (r) return *r;
  }

  if (const auto* r = newest(records, [&](const DumpRecord& d) { return d.comm == m; })) return *r;

  if (prefix_matches > 1) {
    throw DumpctlError("id prefix '" + escape_for_display(m) + "' is ambiguous: it matches " +
                       std::to_string(prefix_matches) + " coredumps");
  }
  throw no_match();
}

}  // namespace coredumpd::cli
