// What one dump becomes outside the host: its object keys in S3, the record JSON sent there, its
// row in the fleet index, and which "upload" mode its rule asks for.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "daemon/policy/config.h"
#include "fleet/fleet_index.h"
#include "store/dump_record.h"
#include "store/upload_row.h"

namespace coredumpd::upload {

/// This host as the fleet knows it.
struct HostIdentity {
  std::string host_id;     ///< upload.host_id, or the hostname
  std::string machine_id;  ///< /etc/machine-id, "" if unreadable
};

/// `s.host_id`, or this machine's hostname when it is ""; and /etc/machine-id.
HostIdentity host_identity(const UploadSettings& s);

/// "<host>/<dump id>/core.zst" ("core" for a core stored uncompressed): one key per dump, so that
/// sending it again replaces the object instead of adding one.
std::string core_key(const std::string& host_id, const DumpRecord& r);
/// "<host>/<dump id>/record.json".
std::string record_key(const std::string& host_id, const DumpRecord& r);

/// The record JSON: {"host_id", "machine_id", "record": to_json(r), "signature", "signature_text",
/// "analysis": the report or null, "core_key": the core's key or null}.
std::string record_body(const HostIdentity& host, const DumpRecord& r, const std::string& core_object_key);

/// The fleet index's row of `r`: keys, facts, the analysis' signature, build-ids (main executable
/// first) and package from the analysis' modules, the upload's keys and `state`.
FleetRecord fleet_record_of(const HostIdentity& host, const DumpRecord& r, const UploadRow& row, const std::string& state);

/// The "upload" mode of the rule that took dump `r` (by name; the defaults' when no rule of that
/// name is configured any more).
UploadMode mode_for(const Config& c, const DumpRecord& r);

}  // namespace coredumpd::upload
