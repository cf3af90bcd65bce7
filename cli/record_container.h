// The container of a stored dump, as dumpctl shows and filters it. coredumpd stores what it
// identified (to_json(ContainerInfo), daemon/policy/container.h) in the record's extra["container"].
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "store/dump_record.h"

namespace coredumpd::cli {

/// The record's container object (extra["container"]), or null when none was recorded (records
/// written before container identification, or by a handshake cut short before it).
nlohmann::json record_container(const DumpRecord& r);

/// True if `ref` names the record's container, with the semantics of a rule's "container"
/// condition (container_ref_matches()): its key ("docker:<id>", "nspawn:web", "host"), its name, or
/// an id prefix of at least 12 characters. A record without container object matches nothing.
bool record_in_container(const DumpRecord& r, const std::string& ref);

/// The short form for the CONTAINER column: the container's name, else the first 12 characters of
/// its id, else its key ("pidns:<inode>" for an unrecognised container); "-" for the host, for a
/// plain systemd unit (not a container) and when nothing was recorded. Escaped for display.
std::string container_short(const DumpRecord& r);

}  // namespace coredumpd::cli
