// Sends one stored core to S3: in one request below a part's size, else as a multipart upload
// that a restart resumes (ListParts tells what the store already holds; only the rest is sent).
#pragma once

#include <cstdint>
#include <functional>
#include <stop_token>

#include "s3/s3_client.h"
#include "store/upload_row.h"

namespace coredumpd::upload {

/// Sends bytes [0, size) of `fd` as object row.object_key. A multipart upload's id is kept in
/// row.upload_id and `persist(row)` is called as soon as it exists (before any part is sent), so
/// that a daemon killed mid-upload resumes the same upload; it is cleared once completed. An
/// upload the store no longer knows (aborted, expired) is started again; one completed before a
/// kill is recognised by the object's size (HEAD). On success row.core_bytes = size. The error of
/// the first failed request otherwise (a stop: "cancelled"). `persist` may throw (IndexError):
/// it passes through.
S3Result send_core(S3Client& s3, int fd, std::uint64_t size, std::uint64_t part_bytes, UploadRow& row,
                   const std::function<void(const UploadRow&)>& persist, std::stop_token stop);

}  // namespace coredumpd::upload
