// One dump's place in the upload queue (schema version 4, table `uploads`): what the daemon's
// upload room (daemon/upload/) sends of it to S3 and the fleet index, and how far it got. The
// row is the queue: durable in the index, so a restart, an outage or a full queue loses nothing.
#pragma once

#include <cstdint>
#include <string>

namespace coredumpd {

/// The queue's states, in the order a row goes through them; each step is idempotent (same keys,
/// same multipart upload id), so redoing one after a restart duplicates nothing.
namespace upload_state {
inline constexpr const char* kQueued = "queued";    ///< nothing sent yet, or the core is on its way
inline constexpr const char* kRecord = "record";    ///< the core is in S3 (or not wanted); the record JSON next
inline constexpr const char* kFleet = "fleet";      ///< objects sent; the fleet index row next
inline constexpr const char* kDone = "done";        ///< everything confirmed
inline constexpr const char* kSkipped = "skipped";  ///< nothing to send (rule "none", dump gone)
}  // namespace upload_state

/// A row of `uploads`.
struct UploadRow {
  std::string id;            ///< the dump's id (dumps.id)
  /// What is sent: "metadata" (record only), "core" (record and core), "core-if-new-signature"
  /// (until decided: then rewritten "core" or "metadata").
  std::string mode;
  std::string state = upload_state::kQueued;
  std::string upload_id;     ///< the S3 multipart upload in progress, "" if none
  std::string object_key;    ///< S3 key of the core ("" when none is sent)
  std::string record_key;    ///< S3 key of the record JSON
  std::uint64_t core_bytes = 0;   ///< bytes of the core object once confirmed
  std::int64_t attempts = 0;      ///< failed attempts so far (back-off)
  std::int64_t next_try_us = 0;   ///< not before this time (UTC µs)
  std::string last_error;         ///< the last attempt's error, "" after a success
  std::int64_t queued_us = 0;     ///< when it was queued (UTC µs)
  std::int64_t done_us = 0;       ///< when it reached done or skipped, 0 before
};

}  // namespace coredumpd
