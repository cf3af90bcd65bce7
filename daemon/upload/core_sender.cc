#include "daemon/upload/core_sender.h"

#include <map>

#include <spdlog/spdlog.h>
#include <vector>

namespace coredumpd::upload {

namespace {

// The object is there with the expected size: a completion we did not see confirmed (killed
// between the store's answer and our own record of it).
bool already_complete(S3Client& s3, const std::string& key, std::uint64_t size) {
  std::uint64_t have = 0;
  return s3.head_object(key, &have).ok && have == size;
}

}  // namespace

S3Result send_core(S3Client& s3, int fd, std::uint64_t size, std::uint64_t part_bytes, UploadRow& row,
                   const std::function<void(const UploadRow&)>& persist, std::stop_token stop) {
  if (size < part_bytes) {
    S3Result r = s3.put_object_from_fd(row.object_key, fd, 0, size);
    if (r.ok) row.core_bytes = size;
    return r;
  }
  for (int round = 0; round < 2; ++round) {
    std::map<int, S3Client::Part> have;
    if (!row.upload_id.empty()) {
      std::vector<S3Client::Part> listed;
      S3Result l = s3.list_parts(row.object_key, row.upload_id, &listed);
      if (!l.ok && l.http_status == 404) {
        if (already_complete(s3, row.object_key, size)) {
          row.upload_id.clear();
          row.core_bytes = size;
          return S3Result{true, 200, false, {}};
        }
        row.upload_id.clear();  // aborted or expired: start again below
      } else if (!l.ok) {
        return l;
      } else {
        for (auto& p : listed) have[p.number] = std::move(p);
        spdlog::info("resuming the upload of {}: {} part(s) of {} already stored", row.object_key, have.size(),
                     (size + part_bytes - 1) / part_bytes);
      }
    }
    if (row.upload_id.empty()) {
      S3Result c = s3.create_multipart(row.object_key, &row.upload_id);
      if (!c.ok) return c;
      try {
        persist(row);
      } catch (...) {
        // Not recorded (a full or read-only store), so never resumed nor aborted later: abort it
        // now (one try), or each retry would leave one more upload whose parts are kept for ever.
        (void)s3.abort_multipart(row.object_key, row.upload_id);
        row.upload_id.clear();
        throw;
      }
    }
    const int parts = static_cast<int>((size + part_bytes - 1) / part_bytes);
    std::vector<S3Client::Part> done;
    bool gone = false;
    for (int n = 1; n <= parts; ++n) {
      if (stop.stop_requested()) return S3Result{false, 0, false, "cancelled"};
      const std::uint64_t off = static_cast<std::uint64_t>(n - 1) * part_bytes;
      const std::uint64_t len = std::min(part_bytes, size - off);
      if (const auto it = have.find(n); it != have.end() && it->second.size == len && !it->second.etag.empty()) {
        done.push_back(it->second);
        continue;
      }
      S3Client::Part p{n, "", len};
      S3Result u = s3.upload_part(row.object_key, row.upload_id, n, fd, off, len, &p.etag);
      if (!u.ok && u.http_status == 404) {  // the upload went away meanwhile
        gone = true;
        break;
      }
      if (!u.ok) return u;
      done.push_back(std::move(p));
    }
    if (gone) {
      row.upload_id.clear();
      continue;
    }
    S3Result fin = s3.complete_multipart(row.object_key, row.upload_id, done);
    if (!fin.ok && fin.http_status == 404 && already_complete(s3, row.object_key, size)) fin = S3Result{true, 200, false, {}};
    if (!fin.ok) return fin;
    row.upload_id.clear();
    row.core_bytes = size;
    return fin;
  }
  return S3Result{false, 0, true, "the multipart upload of " + row.object_key + " vanished twice"};
}

}  // namespace coredumpd::upload
