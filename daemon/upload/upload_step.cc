#include "daemon/upload/upload_step.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "daemon/upload/core_sender.h"
#include "daemon/upload/upload_object.h"
#include "store/core_accounting.h"
#include "util/unique_fd.h"

namespace coredumpd::upload {

namespace {

using namespace upload_state;

StepResult step(StepResult::Kind kind) { return StepResult{kind, {}, true}; }

StepResult failed(std::string error, bool retryable, PeerAnswer answer = PeerAnswer::None) {
  return StepResult{StepResult::Kind::Failed, std::move(error), retryable, answer};
}

StepResult answered(StepResult::Kind kind) { return StepResult{kind, {}, true, PeerAnswer::Answered}; }

// The endpoint itself is unavailable (transport error: refused, reset, timed out, DNS; or 5xx,
// 429 SlowDown), not one object refused (a 4xx, which the row's own back-off handles).
PeerAnswer answer_of(const S3Result& r) {
  if (!r.ok && r.retryable && (r.http_status == 0 || r.http_status >= 500 || r.http_status == 429))
    return PeerAnswer::Unavailable;
  return r.ok || r.http_status != 0 ? PeerAnswer::Answered : PeerAnswer::None;  // 0: cancelled, a local read
}

StepResult fleet_failed(Connections& conn, const FleetIndexError& e) {
  conn.fleet.reset();  // reconnect at the next attempt (a restarted server)
  return failed(e.what(), true,  // "fleet index: ..." already
                e.unreachable() ? PeerAnswer::Unavailable : PeerAnswer::Answered);
}

// The worker's S3 client for settings `s`, made (credentials read again) when there is none or
// the settings changed. std::nullopt-like: nullptr with *why set when the credentials fail.
S3Client* s3_of(Connections& conn, const UploadSettings& s, std::stop_token stop, std::string* why) {
  const std::string key = s.endpoint + "\n" + s.bucket + "\n" + s.region + "\n" + s.credentials_file + "\n" +
                          std::to_string(s.max_bytes_per_second);
  if (conn.s3 && conn.s3_settings == key) return conn.s3.get();
  conn.s3.reset();
  conn.bucket_ready = false;
  auto creds = load_s3_credentials(s.credentials_file, why);
  if (!creds) {
    *why = "S3 credentials: " + *why;
    return nullptr;
  }
  conn.s3 = std::make_unique<S3Client>(S3Location{s.endpoint, s.region, s.bucket}, std::move(*creds), s.max_bytes_per_second);
  conn.s3->set_cancel([stop] { return stop.stop_requested(); });
  conn.s3_settings = key;
  return conn.s3.get();
}

FleetIndex& fleet_of(Connections& conn, const UploadSettings& s, std::stop_token stop) {
  if (!conn.fleet || conn.fleet_conninfo != s.fleet_conninfo) {
    conn.fleet.reset();
    conn.fleet = std::make_unique<FleetIndex>(s.fleet_conninfo);  // throws FleetIndexError
    // A server that stops answering mid-statement must not hold the daemon's stop.
    conn.fleet->set_cancel([stop] { return stop.stop_requested(); });
    conn.fleet_conninfo = s.fleet_conninfo;
  }
  return *conn.fleet;
}

// A failed S3 request: a 4xx (a wrong credential, a bucket of someone else) makes the client
// suspect, so the next attempt reads the credentials again.
StepResult s3_failed(Connections& conn, const S3Result& r) {
  if (!r.retryable) conn.s3.reset();
  return failed(r.error, r.retryable, answer_of(r));
}

void finish(UploadRow& row, const char* state, std::int64_t now_us) {
  row.state = state;
  row.done_us = now_us;
  row.last_error.clear();
}

}  // namespace

Peer next_peer(const UploadRow& row, const UploadSettings& s) {
  if (row.state == kFleet) return Peer::Fleet;
  if (row.state == kQueued && row.mode == upload_mode_name(UploadMode::CoreIfNewSignature) && !s.fleet_conninfo.empty())
    return Peer::Fleet;
  return Peer::S3;
}

StepResult run_step(UploadRow& row, const Config& c, Index& index, int store_dirfd, Stats& stats, Connections& conn,
                    std::stop_token stop, std::int64_t now_us) {
  const UploadSettings& s = c.upload;
  const auto rec = index.get(row.id);
  if (!rec) {  // removed (retention's max_age, dumpctl delete) before it could be sent
    std::string aborted;
    PeerAnswer abort_answer = PeerAnswer::None;
    if (!row.upload_id.empty()) {
      // A multipart upload begun for it: nothing else would ever free its stored parts. One try;
      // a store's lifecycle rule (AbortIncompleteMultipartUpload) is the backstop.
      std::string why;
      S3Client* s3 = s3_of(conn, s, stop, &why);
      const S3Result r = s3 ? s3->abort_multipart(row.object_key, row.upload_id) : S3Result{false, 0, false, why};
      abort_answer = answer_of(r);
      aborted = r.ok || r.http_status == 404 ? "; its multipart upload aborted"
                                             : "; aborting its multipart upload " + row.upload_id + " failed: " + r.error;
      row.upload_id.clear();
    }
    finish(row, kSkipped, now_us);
    row.last_error = "the dump is no longer in the index" + aborted;
    index.save_upload(row);
    StepResult done = step(StepResult::Kind::Done);
    done.answer = abort_answer;
    return done;
  }
  const HostIdentity host = host_identity(s);
  if (row.record_key.empty()) row.record_key = record_key(host.host_id, *rec);

  if (row.mode == upload_mode_name(UploadMode::CoreIfNewSignature)) {
    // The signature comes from the analysis: wait for it (bounded: an analysis that never ends
    // must not hold the core back for ever), then ask the fleet whether it has a core of it.
    const std::int64_t wait_us = (c.analysis.timeout.count() + 60) * 1'000'000;
    if (!holds_core(*rec)) {
      row.mode = upload_mode_name(UploadMode::Metadata);
    } else if (rec->signature.empty() && rec->analysis.is_null() && c.analysis.enabled && now_us - row.queued_us < wait_us) {
      row.next_try_us = now_us + 2'000'000;
      index.save_upload(row);
      return step(StepResult::Kind::Later);
    } else if (rec->signature.empty() || s.fleet_conninfo.empty()) {
      row.mode = upload_mode_name(UploadMode::Core);
    } else {
      try {
        row.mode = upload_mode_name(fleet_of(conn, s, stop).signature_has_core(rec->signature) ? UploadMode::Metadata : UploadMode::Core);
      } catch (const FleetIndexError& e) {
        return fleet_failed(conn, e);
      }
      index.save_upload(row);
      return answered(StepResult::Kind::Progress);
    }
    index.save_upload(row);
    return step(StepResult::Kind::Progress);
  }

  if (row.state == kQueued || row.state == kRecord) {
    std::string why;
    S3Client* s3 = s3_of(conn, s, stop, &why);
    if (!s3) return failed(why, false);
    bool sent = false;  // a request of this step answered: for the breaker
    if (!conn.bucket_ready) {
      const S3Result b = s3->create_bucket();
      if (!b.ok) return s3_failed(conn, b);
      conn.bucket_ready = sent = true;
    }
    if (row.state == kQueued) {
      row.object_key.clear();
      if (row.mode == upload_mode_name(UploadMode::Core) && holds_core(*rec)) {
        UniqueFd fd(::openat(store_dirfd, rec->path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
        struct stat st {};
        if (!fd && errno != ENOENT) return failed("opening the core " + rec->path + ": " + std::strerror(errno), true);
        if (fd && ::fstat(fd.get(), &st) != 0) return failed("fstat of the core: " + std::string(std::strerror(errno)), true);
        if (fd) {  // else gone (retention, dumpctl): the record alone goes
          row.object_key = core_key(host.host_id, *rec);
          const S3Result r = send_core(*s3, fd.get(), static_cast<std::uint64_t>(st.st_size), s.part_bytes, row,
                                       [&index](const UploadRow& r2) { index.save_upload(r2); }, stop);
          if (!r.ok) {
            index.save_upload(row);  // keeps a new multipart id even when a part failed
            return s3_failed(conn, r);
          }
          sent = true;
        }
      }
      row.state = kRecord;
      row.last_error.clear();
      index.save_upload(row);
      return sent ? answered(StepResult::Kind::Progress) : step(StepResult::Kind::Progress);
    }
    const S3Result r = s3->put_object(row.record_key, record_body(host, *rec, row.object_key), "application/json");
    if (!r.ok) return s3_failed(conn, r);
    if (s.fleet_conninfo.empty()) {
      finish(row, kDone, now_us);
      index.save_upload(row);
      stats.count(Outcome::Uploaded);
      return answered(StepResult::Kind::Done);
    }
    row.state = kFleet;
    row.last_error.clear();
    index.save_upload(row);
    return answered(StepResult::Kind::Progress);
  }

  if (row.state == kFleet) {
    const char* state = !row.object_key.empty() ? "uploaded"
                        : mode_for(c, *rec) == UploadMode::CoreIfNewSignature && holds_core(*rec) ? "skipped"
                                                                                                  : "metadata";
    try {
      fleet_of(conn, s, stop).upsert(fleet_record_of(host, *rec, row, state));
    } catch (const FleetIndexError& e) {
      return fleet_failed(conn, e);
    }
    finish(row, kDone, now_us);
    index.save_upload(row);
    stats.count(Outcome::Uploaded);
    return answered(StepResult::Kind::Done);
  }
  finish(row, kSkipped, now_us);
  row.last_error = "unknown upload state \"" + row.state + "\"";
  index.save_upload(row);
  return step(StepResult::Kind::Done);
}

}  // namespace coredumpd::upload
