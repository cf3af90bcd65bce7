// The "upload" section of the configuration: where the daemon's upload room (daemon/upload/)
// sends records and cores (an S3 endpoint) and the fleet index (PostgreSQL). Plain settings; what
// is sent of each crash is its rule's "upload" key (Policy::upload).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace coredumpd {

/// A rule's "upload": what of a crash leaves the host.
enum class UploadMode {
  None,                ///< nothing
  Metadata,            ///< the record (JSON) and the fleet index row
  Core,                ///< the record, the row and the stored core (.zst or raw)
  CoreIfNewSignature,  ///< the core only when no host's crash of its signature has one (FleetIndex)
};

/// "none", "metadata", "core", "core-if-new-signature".
const char* upload_mode_name(UploadMode m);

/// A byte a host id may hold: letters, digits, '.', '_' and '-' (one plain segment of an object key).
constexpr bool is_host_id_byte(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
         c == '-';
}
/// "." and "..": host ids a URL would resolve away (<endpoint>/<bucket>/../<id> is another bucket).
constexpr bool is_dot_segment(std::string_view h) { return h == "." || h == ".."; }

/// "upload": {...}: the uploader. Off while endpoint is "".
struct UploadSettings {
  std::string endpoint;              ///< S3 base URL ("http://127.0.0.1:7480"); "" = no uploads
  std::string bucket = "coredumpd";
  std::string region = "us-east-1";
  /// Root-only INI file ([default] aws_access_key_id/aws_secret_access_key); "": the AWS
  /// variables, then the AWS shared credentials file (s3/s3_client.h).
  std::string credentials_file;
  std::string host_id;               ///< this host in keys and the fleet index; "": the hostname
  std::uint64_t max_bytes_per_second = 0;  ///< bandwidth per upload, 0 = unbounded
  int concurrency = 2;               ///< uploads at once (one thread and connection each)
  int queue = 10000;                 ///< dumps waiting; more wait in the index to be queued later
  std::uint64_t part_bytes = std::uint64_t{8} << 20;  ///< multipart part size (S3: >= 5 MiB)
  std::string fleet_conninfo;        ///< libpq connection string of the fleet index; "": none
  std::chrono::seconds max_backoff{300};  ///< longest wait between attempts of one dump
};

}  // namespace coredumpd
