// CONTRACT (issue 26), written before its implementation: helper "uploader" implements it in
// s3/s3_client.cc (room coredumpd_s3: util only, libcurl); helper "fleet" uses get_object() for
// `dumpctl fleet fetch`. Change it only with a reason, said in the commit.
//
// A client for the S3 API as Ceph's radosgw and AWS speak it: path-style URLs, SigV4 signed by
// libcurl (CURLOPT_AWS_SIGV4 "aws:amz:<region>:s3"), with the x-amz-content-sha256 header that
// libcurl 7.88 does not send itself (without it every request is answered 403).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace coredumpd {

/// Where the objects go. `endpoint` is a base URL ("http://127.0.0.1:7480", "https://s3.eu-west-1
/// .amazonaws.com"); objects are addressed path-style: <endpoint>/<bucket>/<key>.
struct S3Location {
  std::string endpoint;
  std::string region = "us-east-1";
  std::string bucket;
};

/// Credentials as AWS tools take them. load_s3_credentials() reads, first found wins: a root-only
/// file named in the configuration (INI like ~/.aws/credentials; refused if group/other can read
/// it), AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY[/AWS_SESSION_TOKEN], then the AWS shared
/// credentials file (AWS_SHARED_CREDENTIALS_FILE or ~/.aws/credentials, profile AWS_PROFILE or
/// "default").
struct S3Credentials {
  std::string access_key_id;
  std::string secret_access_key;
  std::string session_token;  ///< empty if none
};

/// The outcome of one request. `http_status` 0 means no HTTP answer (connect, DNS, timeout: see
/// `error`). `retryable` is true for transport errors, 5xx, 429 and 503 SlowDown; false for 4xx
/// (a wrong credential: 403, a missing bucket: 404), which back-off cannot fix.
struct S3Result {
  bool ok = false;
  long http_status = 0;
  bool retryable = false;
  std::string error;  ///< curl's message or the S3 <Code>: <Message> of the reply; empty if ok
};

/// One S3 connection (a CURL handle reused across requests: keep-alive). Not thread-safe: one per
/// thread. Bandwidth is bounded per client (max_bytes_per_second, 0 = unbounded).
class S3Client {
 public:
  S3Client(S3Location where, S3Credentials creds, std::uint64_t max_bytes_per_second = 0);
  ~S3Client();
  S3Client(const S3Client&) = delete;
  S3Client& operator=(const S3Client&) = delete;

  /// A check made during every transfer (from libcurl's progress callback, about once a second):
  /// when it returns true the request ends with error "cancelled" (not retryable). For a daemon
  /// that stops while a part is on its way.
  void set_cancel(std::function<bool()> cancelled);

  /// PUT Bucket (idempotent: an existing bucket owned by us is success).
  S3Result create_bucket();
  /// PUT `key` with `body` (small objects: records as JSON).
  S3Result put_object(const std::string& key, const std::string& body, const std::string& content_type);
  /// Bytes [offset, offset+length) of `fd` as one object (pread; fd's offset untouched).
  S3Result put_object_from_fd(const std::string& key, int fd, std::uint64_t offset, std::uint64_t length);
  /// HEAD `key`: its size in bytes in *size if it exists (http_status 404 and ok=false if not).
  S3Result head_object(const std::string& key, std::uint64_t* size);
  /// GET `key` into `fd` (written from its current offset). `max_bytes` > 0: a body longer than
  /// that ends the request (retryable, "larger than" in `error`) once that much is written: an
  /// endpoint that never stops sending cannot fill the disk. 0 = unbounded.
  S3Result get_object_to_fd(const std::string& key, int fd, std::uint64_t max_bytes = 0);
  /// DELETE `key`.
  S3Result delete_object(const std::string& key);

  // Multipart upload (parts of 5 MiB .. 5 GiB except the last). A resumed upload lists the parts
  // the store already holds and sends only the rest.
  /// Starts an upload; its id in *upload_id.
  S3Result create_multipart(const std::string& key, std::string* upload_id);
  /// Part `part_number` (1-based) = bytes [offset, offset+length) of fd; its ETag in *etag.
  S3Result upload_part(const std::string& key, const std::string& upload_id, int part_number, int fd,
                       std::uint64_t offset, std::uint64_t length, std::string* etag);
  struct Part {
    int number = 0;
    std::string etag;
    std::uint64_t size = 0;
  };
  /// The parts already stored for an upload (ListParts), in part order. 404 = the upload is gone.
  S3Result list_parts(const std::string& key, const std::string& upload_id, std::vector<Part>* parts);
  S3Result complete_multipart(const std::string& key, const std::string& upload_id, const std::vector<Part>& parts);
  S3Result abort_multipart(const std::string& key, const std::string& upload_id);

 private:
  struct Impl;
  Impl* impl_;
};

/// Reads credentials as S3Credentials says; `file` is the configured root-only file (may be empty).
/// std::nullopt with *why set when none is found or the file is readable by others.
std::optional<S3Credentials> load_s3_credentials(const std::string& file, std::string* why);

}  // namespace coredumpd
