// The upload of final dumps to S3 and the fleet index, off the crash path: worker threads at idle
// CPU and I/O priority ("cd-upload") take the rows of the durable queue in the local index
// (store/upload_row.h) and send, per the rule's "upload" mode, the stored core (multipart,
// resumable), the record JSON, and the fleet index row, retrying with back-off.
#pragma once

#include <sys/types.h>

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "daemon/policy/config.h"
#include "daemon/report/stats.h"
#include "daemon/upload/peer_backoff.h"
#include "daemon/upload/upload_step.h"
#include "store/index.h"
#include "store/upload_row.h"

namespace coredumpd::upload {

/// The queue's workers. While S3 or the fleet index is down (PeerBackoff), they take no row for
/// it and one probe request at a time goes out: rows not tried keep their attempts and time.
/// Everything they need is read from the index at each step, so a restart,
/// an S3 or database outage, or a full queue loses nothing: what is not confirmed is tried again,
/// and each step (same object keys, same multipart upload id, the fleet upsert) is idempotent.
class Uploader {
 public:
  /// The configuration in force (called on any thread; must not block).
  using ConfigSource = std::function<std::shared_ptr<const Config>()>;

  /// Starts `threads` workers (upload.concurrency at start; 1..16). `index`, `stats` and the
  /// store directory `store_dirfd` must outlive this. Nothing is sent while upload.endpoint is "".
  Uploader(Index& index, int store_dirfd, Stats& stats, ConfigSource config, int threads);
  /// stop().
  ~Uploader();
  Uploader(const Uploader&) = delete;
  Uploader& operator=(const Uploader&) = delete;

  /// A dump became final, or its analysis ended: look for work now rather than at the next poll.
  /// Never blocks, never throws.
  void wake() noexcept;
  /// Stops the workers: a part on its way is cut short (its upload resumes at the next start).
  /// Idempotent.
  void stop();

 private:
  struct Worker;
  void work(std::stop_token stop);
  /// Queues final dumps that have no row yet, up to upload.queue waiting (fill_mu_ held).
  void fill(const Config& c, std::int64_t now_us);
  /// The next due row no other worker holds, claimed; std::nullopt if none.
  /// Rows whose peer's breaker is open are left (not an attempt).
  std::optional<UploadRow> claim(const Config& c, std::int64_t now_us, std::int64_t* soonest_us);
  void release(const std::string& id);
  /// The breaker of `p`.
  PeerBackoff& gate(Peer p) { return p == Peer::S3 ? s3_gate_ : fleet_gate_; }
  /// Logs and counts what a report to the breaker of `p` changed; wakes the workers when it closed.
  void on_gate(Peer p, const PeerBackoff::Change& change, const std::string& reason, const Config& c);
  /// Closes a gate whose peer's settings changed (a reload): the new endpoint is tried at once.
  void follow_settings(const UploadSettings& s);

  Index& index_;
  int store_dirfd_;
  Stats& stats_;
  ConfigSource config_;
  std::mutex mu_;                    ///< guards wakes_, claimed_, stopped_ (never held over SQLite)
  std::condition_variable_any cv_;
  std::uint64_t wakes_ = 0;          ///< bumped by wake()
  std::set<std::string> claimed_;    ///< rows being worked on
  std::mutex fill_mu_;               ///< one fill() at a time; guards origin_us_
  std::int64_t origin_us_ = -1;      ///< Index::upload_origin(), once known
  bool stopped_ = false;
  PeerBackoff s3_gate_;              ///< S3's breaker, shared by the workers
  PeerBackoff fleet_gate_;           ///< the fleet index's
  std::string s3_peer_, fleet_peer_;  ///< what each gate is about (settings), guarded by mu_
  std::vector<std::jthread> workers_;  ///< last: started once the rest exists
};

}  // namespace coredumpd::upload
