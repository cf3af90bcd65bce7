// Counters of what the daemon did, for logs, sd_notify STATUS= and tests.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <string>

#include "daemon/report/outcome.h"

namespace coredumpd {

/// Process-wide counters, one per Outcome; updated atomically from any thread.
class Stats {
 public:
  /// Counts one `outcome`. The only place a counter changes.
  void count(Outcome outcome) { ++counters_[static_cast<std::size_t>(outcome)]; }

  /// How often `outcome` was counted.
  std::uint64_t get(Outcome outcome) const { return counters_[static_cast<std::size_t>(outcome)].load(); }

  /// One line for sd_notify STATUS= and the shutdown log: "stored N, truncated N, ...", the
  /// outcomes with a summary label (outcome.h), in kOutcomes' order.
  std::string summary() const {
    std::string line;
    for (const auto& o : kOutcomes) {
      if (o.summary.empty()) continue;
      if (!line.empty()) line += ", ";
      line += o.summary;
      line += ' ';
      line += std::to_string(get(o.outcome));
    }
    return line;
  }

 private:
  std::array<std::atomic<std::uint64_t>, kOutcomeCount> counters_{};
};

}  // namespace coredumpd
