// One attempt at one queued dump: the steps of a row (store/upload_row.h), each idempotent, with
// the connections a worker keeps between attempts (S3, the fleet index).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>

#include "daemon/policy/config.h"
#include "daemon/upload/peer_backoff.h"
#include "daemon/report/stats.h"
#include "fleet/fleet_index.h"
#include "s3/s3_client.h"
#include "store/index.h"
#include "store/upload_row.h"

namespace coredumpd::upload {

/// A worker's connections, made on first use and again when the settings change or fail.
struct Connections {
  std::unique_ptr<S3Client> s3;
  std::string s3_settings;    ///< what s3 was made from (endpoint, bucket, region, file, bandwidth)
  bool bucket_ready = false;  ///< create_bucket() succeeded on this client
  std::unique_ptr<FleetIndex> fleet;
  std::string fleet_conninfo;
};

/// What one attempt came to.
struct StepResult {
  enum class Kind {
    Progress,  ///< the row moved on (saved); call again at once
    Done,      ///< the row is done or skipped (saved)
    Later,     ///< nothing failed, but it must wait (the analysis): next_try_us set, saved
    Failed,    ///< an attempt failed: `error`, `retryable`; the caller backs off and saves
  } kind = Kind::Progress;
  std::string error;
  bool retryable = true;
  PeerAnswer answer = PeerAnswer::None;  ///< what the peer of the step (next_peer()) did, for its breaker
};

/// The two peers of an upload, each with its own breaker: one down does not stop the other's steps.
enum class Peer { S3, Fleet };

/// The peer the next run_step() of `row` sends to, if it sends at all: the fleet index for the
/// "fleet" step and for a "core-if-new-signature" row not yet resolved (it asks the fleet first),
/// else S3.
Peer next_peer(const UploadRow& row, const UploadSettings& s);

/// Runs the next step of `row` (re-read from the index by the caller) with configuration `c`.
/// Saves the row after each step that moved it. Throws IndexError when the index fails.
StepResult run_step(UploadRow& row, const Config& c, Index& index, int store_dirfd, Stats& stats, Connections& conn,
                    std::stop_token stop, std::int64_t now_us);

}  // namespace coredumpd::upload
