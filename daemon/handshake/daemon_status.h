// What {"op":"status"} reports (store/query_protocol.h QueryStatus), from the running server:
// built here because it reads the server and its configuration, which the query room may not
// include; main() hands it to the query service.
#pragma once

#include <cstdint>
#include <string>

#include "daemon/handshake/server.h"
#include "store/query_protocol.h"

namespace coredumpd {

/// The daemon's status now: version, pid, start time, activation, sockets, store, what is enabled,
/// every Stats counter by outcome_name(), and the retention limits in force resolved against the
/// store's filesystem (store_usage.limits; the query service adds the usage itself). Any thread.
QueryStatus daemon_status(Server& server, const std::string& query_socket, std::int64_t started_us);

}  // namespace coredumpd
