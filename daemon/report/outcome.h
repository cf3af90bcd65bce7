// What became of a connection or a dump: the outcomes the daemon counts (stats.h).
#pragma once

#include <array>
#include <cstddef>
#include <string_view>

namespace coredumpd {

/// An outcome the daemon counts. Most end a session or a dump (one per crash); the ones marked
/// "on the way" are counted when they happen and the crash still ends with an outcome of its own
/// (a rate-limited crash is also MetadataOnly, a forward fallback also Stored, Truncated, ...).
enum class Outcome : std::size_t {
  Accepted,          ///< on the way: a connection was accepted
  Stored,            ///< a core stored complete
  Truncated,         ///< a core stored truncated
  Failed,            ///< a dump that ended in Failed
  Rejected,          ///< REJECT acked (by policy, an unavailable store or overload) and taken by the kernel
  MetadataOnly,      ///< USERSPACE acked and taken: a record without a core
  Impostor,          ///< a peer refused: not a crashing task
  BadRequest,        ///< a malformed or missing coredump_req, or one no valid ack answers
  HandshakeTimeout,  ///< the handshake deadline passed (on the way while collecting or forwarding)
  RefusedByKernel,   ///< no REQACK marker after the ack
  HungUp,            ///< the peer went away mid-handshake, in a step none of the above covers
  Overloaded,        ///< on the way: turned away by max_concurrent_dumps
  StoreUnavailable,  ///< on the way: REJECT acked because the store is read-only, removed or full
  RateLimited,       ///< on the way: made metadata-only by a rule's rate_limit
  Forwarded,         ///< delivered to a receiver (action forward)
  ForwardFallback,   ///< on the way: a forward failed and the host handled the crash itself
  ForwardedIn,       ///< on the way: a crash received from a forwarder (accept_forwarded)
  Journaled,         ///< on the way: the index could not take a record; it waits in the pending journal
  RecordLost,        ///< on the way: neither the index nor the pending journal took a record
  KeptInFallback,    ///< on the way: the store could not take a core; it went to the fallback on /run
  FallbackMoved,     ///< on the way: a core kept in the fallback was moved into the store
  // After the store (daemon/analyze/): what became of a stored core's analysis.
  Analyzed,             ///< on the way: an analysis report ("ok") was recorded
  AnalysisUnavailable,  ///< on the way: recorded as "analysis unavailable" (analyzer failed, timed out, ...)
  AnalysisQueueFull,    ///< on the way: the analysis queue was full; recorded as unavailable
  AnalysisNotRecorded,  ///< on the way: the index could not take the analysis (read-only, gone, error)
  // The crash's journal entry (daemon/journal/), once its record is final.
  JournalWritten,       ///< on the way: journald took the entry
  JournalFailed,        ///< on the way: the entry was not sent (journald refused it, or its queue was full)
  // The upload to S3 and the fleet index (daemon/upload/), after the record is final.
  Uploaded,        ///< on the way: a dump's upload was confirmed (objects in S3, row in the fleet index)
  UploadRetried,   ///< on the way: an upload attempt failed; the dump stays queued for another
  UploadDeferred,  ///< on the way: the upload queue was full; the dump waits in the index to be queued
  UploadPeerDown,  ///< on the way: S3 or the fleet index became unavailable; its breaker opened (daemon/upload/peer_backoff.h)
  // The query service (daemon/query/): requests of users, not crashes.
  QueryServed,   ///< a query answered with "ok": true
  QueryRefused,  ///< a query answered with an error, or a client dropped by a limit (busy, too large, timeouts)
  Deleted,       ///< a dump (core and row) deleted on a user's request through the query service
};

inline constexpr std::size_t kOutcomeCount = static_cast<std::size_t>(Outcome::Deleted) + 1;

/// One row per Outcome, in the enum's order.
struct OutcomeInfo {
  Outcome outcome;
  std::string_view name;     ///< snake_case, for logs
  std::string_view summary;  ///< its label in Stats::summary(); empty: not shown there
};

/// The names of the outcomes. Stats::summary() lists the labelled ones in this order.
inline constexpr std::array<OutcomeInfo, kOutcomeCount> kOutcomes = {{
    {Outcome::Accepted, "accepted", ""},
    {Outcome::Stored, "stored", "stored"},
    {Outcome::Truncated, "truncated", "truncated"},
    {Outcome::Failed, "failed", "failed"},
    {Outcome::Rejected, "rejected", "rejected"},
    {Outcome::MetadataOnly, "metadata_only", ""},
    {Outcome::Impostor, "impostor", "impostors"},
    {Outcome::BadRequest, "bad_request", "bad requests"},
    {Outcome::HandshakeTimeout, "handshake_timeout", ""},
    {Outcome::RefusedByKernel, "refused_by_kernel", ""},
    {Outcome::HungUp, "hung_up", ""},
    {Outcome::Overloaded, "overloaded", "overloaded"},
    {Outcome::StoreUnavailable, "store_unavailable", "store unavailable"},
    {Outcome::RateLimited, "rate_limited", "rate limited"},
    {Outcome::Forwarded, "forwarded", "forwarded"},
    {Outcome::ForwardFallback, "forward_fallback", "forward fallbacks"},
    {Outcome::ForwardedIn, "forwarded_in", "received forwarded"},
    {Outcome::Journaled, "journaled", ""},
    {Outcome::RecordLost, "record_lost", ""},
    {Outcome::KeptInFallback, "kept_in_fallback", "kept in fallback"},
    {Outcome::FallbackMoved, "fallback_moved", "moved from fallback"},
    {Outcome::Analyzed, "analyzed", "analyzed"},
    {Outcome::AnalysisUnavailable, "analysis_unavailable", "analysis unavailable"},
    {Outcome::AnalysisQueueFull, "analysis_queue_full", "analysis queue full"},
    {Outcome::AnalysisNotRecorded, "analysis_not_recorded", "analysis not recorded"},
    {Outcome::JournalWritten, "journal_written", "journal entries written"},
    {Outcome::JournalFailed, "journal_failed", "journal entries failed"},
    {Outcome::Uploaded, "uploaded", "uploaded"},
    {Outcome::UploadRetried, "upload_retried", "upload retries"},
    {Outcome::UploadDeferred, "upload_deferred", "uploads deferred"},
    {Outcome::UploadPeerDown, "upload_peer_down", "upload outages"},
    {Outcome::QueryServed, "query_served", ""},
    {Outcome::QueryRefused, "query_refused", ""},
    {Outcome::Deleted, "deleted", ""},
}};

consteval bool outcomes_in_order() {
  for (std::size_t i = 0; i < kOutcomes.size(); ++i)
    if (static_cast<std::size_t>(kOutcomes[i].outcome) != i) return false;
  return true;
}
static_assert(outcomes_in_order(), "kOutcomes must list every Outcome once, in the enum's order");

/// The outcome's snake_case name.
constexpr std::string_view outcome_name(Outcome o) { return kOutcomes[static_cast<std::size_t>(o)].name; }

}  // namespace coredumpd
