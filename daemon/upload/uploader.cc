#include "daemon/upload/uploader.h"

#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <utility>

#include <spdlog/spdlog.h>

#include "daemon/report/log_limiter.h"
#include "daemon/upload/upload_object.h"
#include "daemon/upload/upload_step.h"
#include "util/time.h"

namespace coredumpd::upload {

namespace {

// How often an idle worker looks for work it was not woken for (a back-off ending, a reload).
constexpr auto kPoll = std::chrono::seconds(5);

// One line per kind of failure per minute: an endpoint down or a wrong credential fails every
// dump in turn, and the first line says all there is to say.
LogLimiter& upload_log_limiter() {
  static LogLimiter limiter(1, std::chrono::seconds(60));
  return limiter;
}

// SCHED_IDLE and the idle I/O class: an upload reads the store only when nothing else wants the
// CPU or the disk (as the analysis, daemon/analyze/).
void lower_priority() {
  const sched_param idle{};
  if (const int err = ::pthread_setschedparam(::pthread_self(), SCHED_IDLE, &idle); err != 0)
    spdlog::warn("an upload thread cannot run at idle CPU priority (error {})", err);
  constexpr int kWhoProcess = 1, kClassIdle = 3, kClassShift = 13;  // <linux/ioprio.h>; who 1 + tid 0: this thread
  if (::syscall(SYS_ioprio_set, kWhoProcess, 0, kClassIdle << kClassShift) != 0)
    spdlog::warn("an upload thread cannot use the idle I/O class");
}

std::int64_t backoff_us(std::int64_t attempts, std::chrono::seconds max) {
  const std::int64_t s = attempts >= 20 ? max.count() : std::min<std::int64_t>(std::int64_t{1} << (attempts - 1), max.count());
  return std::max<std::int64_t>(s, 1) * 1'000'000;
}

}  // namespace

Uploader::Uploader(Index& index, int store_dirfd, Stats& stats, ConfigSource config, int threads)
    : index_(index), store_dirfd_(store_dirfd), stats_(stats), config_(std::move(config)) {
  threads = std::clamp(threads, 1, 16);
  for (int i = 0; i < threads; ++i) workers_.emplace_back([this](std::stop_token stop) { work(stop); });
}

Uploader::~Uploader() { stop(); }

void Uploader::wake() noexcept {
  {
    std::lock_guard lock(mu_);
    ++wakes_;
  }
  cv_.notify_all();
}

void Uploader::stop() {
  {
    std::lock_guard lock(mu_);
    if (stopped_) return;
    stopped_ = true;
  }
  for (auto& w : workers_) w.request_stop();
  cv_.notify_all();
  for (auto& w : workers_)
    if (w.joinable()) w.join();
}

void Uploader::fill(const Config& c, std::int64_t now_us) {
  if (origin_us_ < 0) origin_us_ = index_.upload_origin(now_us);
  const std::size_t waiting = index_.uploads_waiting();
  const auto limit = static_cast<std::size_t>(c.upload.queue);
  // One more than the room: a candidate beyond it means the queue is full and dumps wait.
  const auto ids = index_.upload_candidates(origin_us_, limit > waiting ? limit - waiting + 1 : 1);
  std::size_t queued = 0;
  for (const auto& id : ids) {
    if (waiting + queued >= limit) {
      stats_.count(Outcome::UploadDeferred);
      if (upload_log_limiter().allow("upload queue full"))
        spdlog::warn("upload queue full ({} waiting): later dumps wait in the index until it drains", waiting + queued);
      break;
    }
    const auto r = index_.get(id);
    if (!r) continue;
    UploadRow row;
    row.id = id;
    row.queued_us = now_us;
    const UploadMode mode = mode_for(c, *r);
    row.mode = upload_mode_name(mode == UploadMode::None ? UploadMode::Metadata : mode);
    if (mode == UploadMode::None) {  // a row all the same: the dump is looked at once
      row.state = upload_state::kSkipped;
      row.done_us = now_us;
      row.last_error = "rule \"upload\": \"none\"";
    }
    if (index_.add_upload(row) && mode != UploadMode::None) ++queued;
  }
}

std::optional<UploadRow> Uploader::claim(const Config& c, std::int64_t now_us, std::int64_t* soonest_us) {
  std::size_t want = 0;
  {
    std::lock_guard lock(mu_);
    want = claimed_.size() + 1;
  }
  // A peer that is down: its rows stay as they are, the others (the other peer's steps) go on.
  const bool s3 = s3_gate_.admits(), fleet = fleet_gate_.admits();
  const auto take = [&](const UploadRow& r) { return next_peer(r, c.upload) == Peer::S3 ? s3 : fleet; };
  for (auto& row : index_.due_uploads(now_us, want, take)) {
    std::lock_guard lock(mu_);
    if (claimed_.contains(row.id)) continue;
    claimed_.insert(row.id);
    return std::move(row);
  }
  index_.uploads_waiting(soonest_us);
  return std::nullopt;
}

void Uploader::release(const std::string& id) {
  std::lock_guard lock(mu_);
  claimed_.erase(id);
}

void Uploader::on_gate(Peer p, const PeerBackoff::Change& change, const std::string& reason, const Config& c) {
  const char* name = p == Peer::S3 ? "the S3 endpoint" : "the fleet index";
  if (change.kind == PeerBackoff::Change::Kind::Opened) {
    stats_.count(Outcome::UploadPeerDown);
    std::size_t waiting = 0;
    try {
      waiting = index_.uploads_waiting();
    } catch (const std::exception&) {  // the count is for the log line only
    }
    spdlog::warn("upload: {} is unavailable ({}); {} dump(s) waiting: uploads to it pause, one probe request after "
                 "1, 2, 4, ... s (at most {} s)",
                 name, reason, waiting, c.upload.max_backoff.count());
  } else if (change.kind == PeerBackoff::Change::Kind::Closed) {
    spdlog::info("upload: {} is available again after {:.1f} s ({} failed probe(s)); the queue drains", name,
                 static_cast<double>(change.open_us) / 1e6, change.probes);
    wake();
  }
}

void Uploader::follow_settings(const UploadSettings& s) {
  const std::string s3 = s.endpoint + "\n" + s.bucket + "\n" + s.region;
  bool s3_changed = false, fleet_changed = false;
  {
    std::lock_guard lock(mu_);
    s3_changed = std::exchange(s3_peer_, s3) != s3;
    fleet_changed = std::exchange(fleet_peer_, s.fleet_conninfo) != s.fleet_conninfo;
  }
  if (s3_changed && s3_gate_.reset()) spdlog::info("upload: the S3 settings changed; the new endpoint is tried at once");
  if (fleet_changed && fleet_gate_.reset())
    spdlog::info("upload: upload.fleet_conninfo changed; the fleet index is tried at once");
}

void Uploader::work(std::stop_token stop) {
  ::pthread_setname_np(::pthread_self(), "cd-upload");
  lower_priority();
  Connections conn;
  bool warned_readonly = false;
  std::int64_t index_failures = 0;  // in a row: the index refused to record a step
  while (!stop.stop_requested()) {
    const auto config = config_();
    const std::int64_t now = now_epoch_us();
    std::optional<UploadRow> row;
    std::int64_t soonest = 0;
    std::uint64_t seen_wakes = 0;
    {
      std::lock_guard lock(mu_);
      seen_wakes = wakes_;
    }
    // The index outside mu_: wake() is called from the dump threads and must not wait for SQLite.
    if (!config->upload.endpoint.empty()) {
      follow_settings(config->upload);
      try {
        if (!index_.writable()) throw IndexError("the index is read-only");
        // One filler at a time (no two queue the same candidates); any idle worker may be it.
        if (std::unique_lock fl(fill_mu_, std::try_to_lock); fl) fill(*config, now);
        row = claim(*config, now, &soonest);
        warned_readonly = false;
      } catch (const std::exception& e) {
        if (!warned_readonly) spdlog::warn("upload queue: {}; retrying", e.what());
        warned_readonly = true;
      }
    }
    if (!row) {
      auto wait = std::chrono::duration_cast<std::chrono::microseconds>(kPoll);
      if (soonest > now) wait = std::min(wait, std::chrono::microseconds(soonest - now));
      // Rows held back by a breaker are due already: wait for its next probe, not for them.
      for (const Peer p : {Peer::S3, Peer::Fleet})
        if (const std::int64_t g = gate(p).wait_us(); g > 0) wait = std::min(wait, std::chrono::microseconds(g));
      std::unique_lock lock(mu_);
      cv_.wait_for(lock, stop, wait, [&] { return wakes_ != seen_wakes; });
      continue;
    }
    // Steps until the row is done, must wait, or fails.
    try {
      for (int steps = 0; steps < 8 && !stop.stop_requested(); ++steps) {
        // Each step asks its peer's breaker: a row whose record went to S3 waits for a fleet
        // index that is down without being charged an attempt, and is not taken again until it is back.
        const Peer peer = next_peer(*row, config->upload);
        const PeerBackoff::Admit admit = gate(peer).admit();
        if (admit == PeerBackoff::Admit::Wait) break;
        const bool probe = admit == PeerBackoff::Admit::Probe;
        StepResult r;
        try {
          r = run_step(*row, *config, index_, store_dirfd_, stats_, conn, stop, now_epoch_us());
        } catch (...) {
          if (probe) gate(peer).report(PeerAnswer::None, true, config->upload.max_backoff);  // the probe given back
          throw;
        }
        on_gate(peer, gate(peer).report(r.answer, probe, config->upload.max_backoff), r.error, *config);
        if (probe && r.answer == PeerAnswer::None) wake();  // another worker may probe at once
        if (r.kind == StepResult::Kind::Progress) continue;
        if (r.kind == StepResult::Kind::Failed && !stop.stop_requested()) {
          ++row->attempts;
          const std::int64_t delay = backoff_us(row->attempts, config->upload.max_backoff);
          row->next_try_us = now_epoch_us() + delay;
          row->last_error = r.error;
          index_.save_upload(*row);
          stats_.count(Outcome::UploadRetried);
          // The same failure for every dump: logged once a window, by kind (refused or not).
          const char* kind = r.retryable ? "upload failed" : "upload refused";
          if (upload_log_limiter().allow(kind))
            spdlog::error("upload of dump {} {} (attempt {}, next in {} s): {}{}", row->id,
                          r.retryable ? "failed" : "refused", row->attempts, delay / 1'000'000, r.error,
                          r.retryable ? "" : "; check upload.endpoint, upload.bucket and the credentials. "
                                              "The local core and record are kept");
        }
        break;
      }
      index_failures = 0;
    } catch (const std::exception& e) {  // the index failed: the row stays as last saved
      if (upload_log_limiter().allow("upload index error")) spdlog::error("upload of dump {}: {}", row->id, e.what());
      // Its step is done again from there, and may already have reached S3 (a full store refuses
      // the row after the PUT): wait as for a failed request, not take it again at once.
      ++index_failures;
      release(row->id);
      std::unique_lock lock(mu_);
      cv_.wait_for(lock, stop, std::chrono::microseconds(backoff_us(index_failures, config->upload.max_backoff)),
                   [] { return false; });
      continue;
    }
    release(row->id);
  }
}

}  // namespace coredumpd::upload
