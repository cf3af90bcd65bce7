// Where `dumpctl fleet` finds the fleet: the PostgreSQL index and the S3 bucket, from its options
// or else from the daemon's configuration file (the same keys the daemon's uploader reads).
#pragma once

#include <string>

#include "s3/s3_client.h"

namespace coredumpd::cli {

/// The daemon's configuration file, when `--config` is not given.
inline constexpr const char* kDefaultDaemonConfig = "/etc/coredumpd/coredumpd.json";

/// The fleet settings of one host, as configured for its uploader.
struct FleetSettings {
  std::string database;          ///< libpq conninfo of the fleet index ("" if not configured)
  S3Location s3;                 ///< endpoint, region, bucket ("" when not configured)
  std::string credentials_file;  ///< root-only AWS-style credentials file, "" for the AWS defaults
};

/// Reads the "upload" object of the daemon's configuration file `path` (JSON with comments) and of
/// its drop-ins (`conf.d/*.json` beside it, in lexical order, each key replacing the one before, as
/// the daemon merges them): "fleet_conninfo", "endpoint", "region", "bucket", "credentials_file",
/// with the daemon's defaults (bucket "coredumpd", region "us-east-1"). A
/// missing file gives empty settings when `must_exist` is false (the default path on a host
/// without a daemon). Throws DumpctlError on a file that cannot be read or parsed, or a key that is
/// not a string.
FleetSettings read_fleet_settings(const std::string& path, bool must_exist);

}  // namespace coredumpd::cli
