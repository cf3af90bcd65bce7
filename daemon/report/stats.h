// Counters of what the daemon did, for logs, sd_notify STATUS= and tests.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

namespace coredumpd {

/// Process-wide counters; every field is updated atomically from any thread.
struct Stats {
  std::atomic<std::uint64_t> accepted{0};         ///< connections accepted
  std::atomic<std::uint64_t> impostors{0};        ///< peers refused: not a crashing task
  std::atomic<std::uint64_t> bad_requests{0};     ///< malformed or missing coredump_req
  std::atomic<std::uint64_t> handshake_timeouts{0};
  std::atomic<std::uint64_t> refused_by_kernel{0};  ///< non-REQACK markers
  std::atomic<std::uint64_t> stored{0};           ///< cores stored complete
  std::atomic<std::uint64_t> truncated{0};        ///< cores stored truncated
  std::atomic<std::uint64_t> failed{0};           ///< dumps that ended in Failed
  std::atomic<std::uint64_t> rejected{0};         ///< REJECT acked by policy
  std::atomic<std::uint64_t> metadata_only{0};
  std::atomic<std::uint64_t> overloaded{0};        ///< crashes turned away by max_concurrent_dumps
  std::atomic<std::uint64_t> store_unavailable{0}; ///< crashes rejected: store read-only/removed/full
  std::atomic<std::uint64_t> rate_limited{0};      ///< crashes made metadata-only by a rule's rate_limit
  std::atomic<std::uint64_t> forwarded{0};         ///< crashes delivered to a receiver (action forward)
  std::atomic<std::uint64_t> forward_fallbacks{0}; ///< forwards that failed: the host handled the crash itself
  std::atomic<std::uint64_t> forwarded_in{0};      ///< crashes received from a forwarder (accept_forwarded)

  /// One line for sd_notify STATUS= and the shutdown log.
  std::string summary() const {
    return "stored " + std::to_string(stored) + ", truncated " + std::to_string(truncated) + ", failed " +
           std::to_string(failed) + ", rejected " + std::to_string(rejected) + ", impostors " +
           std::to_string(impostors) + ", bad requests " + std::to_string(bad_requests) + ", overloaded " +
           std::to_string(overloaded) + ", store unavailable " + std::to_string(store_unavailable) +
           ", rate limited " + std::to_string(rate_limited) + ", forwarded " +
           std::to_string(forwarded) + ", forward fallbacks " + std::to_string(forward_fallbacks) + ", received forwarded " +
           std::to_string(forwarded_in);
  }
};

}  // namespace coredumpd
