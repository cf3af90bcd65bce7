// The query service's wire format (daemon/query/ serves it, dumpctl speaks it): how a user who is
// not root reaches the dumps of their own processes. Pure functions: no I/O here.
//
// Transport: an AF_UNIX SOCK_STREAM socket (kDefaultQuerySocket). The client sends one request per
// line, a JSON object of at most kMaxRequestBytes including the '\n'; the daemon answers each with
// one or more lines, in order, then waits for the next request or the hang-up:
//
//   {"op":"list"[,"since_us":N][,"until_us":N][,"matches":[{"field":F,"value":V},...]]
//    [,"limit":N][,"newest_first":B][,"with_extra":B]}    (a RecordQuery, store/record_query.h)
//       -> {"ok":true,"op":"list"}              header
//          {"record":…,"rule":…,...}           one record_envelope() per visible dump the query
//          ...                                  selects, in its order (oldest first by default),
//                                               without "analysis" (it may be 1 MiB); "extra"
//                                               reduced to the small facts when with_extra is false
//          {"end":true,"count":N}              trailer: N envelopes were sent
//       The daemon reads the index a page at a time as the client reads the reply; if the store
//       fails midway, an error line takes the trailer's place.
//   {"op":"get","id":"<32 hex>"}
//       -> {"ok":true,"op":"get","dump":<record_envelope(), with analysis>}
//   {"op":"core","id":"<32 hex>"}
//       -> {"ok":true,"op":"core","dump":<record_envelope()>}   with the stored core file open
//          read-only attached to this line's first byte (SCM_RIGHTS, util/fd_passing.h); the bytes
//          are as stored: r.compression says how ("zstd" or "none", store/dump_record.h)
//   {"op":"delete","id":"<32 hex>"}
//       -> {"ok":true,"op":"delete","dump":<record_envelope()>,"file_missing":B}
//          the daemon removed the dump's core file and its row (store/delete_dump.h); only a dump
//          the peer owns (peer_may_delete()); "file_missing": its core was already gone
//   {"op":"status"}
//       -> {"ok":true,"op":"status","status":{…}}    QueryStatus fields (below), to anyone
//   anything refused
//       -> {"ok":false,"error":"<one line>","code":"<QueryErrorCode name>"}
//
// A client resolves short ids itself from a list (it sees only its own dumps, so a prefix can never
// reveal another user's id); the daemon takes full ids only. A dump the peer may not see is
// answered exactly as one that does not exist ("not_found"), so ids of other users' dumps cannot be
// probed.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include <nlohmann/json.hpp>

#include "store/dump_record.h"
#include "store/record_query.h"

namespace coredumpd {

/// Where the daemon serves queries unless configured otherwise, and where dumpctl looks. Outside
/// /run/coredumpd (0700, the kernel's socket stays root-only); the socket itself is 0666: who may
/// see what is decided per request from the peer's credentials, not by file permissions.
inline constexpr const char* kDefaultQuerySocket = "/run/coredumpd-query.socket";

/// Longest request line the daemon reads, '\n' included; a longer one is refused ("too_large")
/// and the connection closed.
inline constexpr std::size_t kMaxRequestBytes = 4096;

/// Why a request was refused: the "code" of an error line.
enum class QueryErrorCode {
  BadRequest,   ///< "bad_request": not JSON, not an object, unknown op, a field of the wrong type
  TooLarge,     ///< "too_large": a request over kMaxRequestBytes
  NotFound,     ///< "not_found": no such dump, or one the peer may not see (indistinguishable)
  NoCore,       ///< "no_core": the dump has no stored core (its state and reason are in the error)
  Busy,         ///< "busy": too many connections (in all, or of this uid); try again later
  Internal,     ///< "internal": the store could not be read (the error says why)
  InProgress,   ///< "in_progress": delete of a dump still being received; try again later
};

/// "bad_request", "too_large", ... as above.
const char* query_error_code_name(QueryErrorCode c);
/// The inverse of query_error_code_name(); std::nullopt for an unknown name.
std::optional<QueryErrorCode> parse_query_error_code(std::string_view name);

/// A list: the dumps `query` selects among those the peer may see. On the wire every member is
/// optional: "since_us"/"until_us" (integers, inclusive), "matches" (an array of {"field": string,
/// "value": bytes_to_json() of the value}), "limit" (integer >= 0), "newest_first" and
/// "with_extra" (booleans; with_extra defaults to true, as before the query was sent).
struct ListRequest {
  RecordQuery query;
};
struct GetRequest {
  std::string id;  ///< 32 lower-case hex chars
};
struct CoreRequest {
  std::string id;  ///< 32 lower-case hex chars
};
struct StatusRequest {};
struct DeleteRequest {
  std::string id;  ///< 32 lower-case hex chars
};

/// A parsed request.
using QueryRequest = std::variant<ListRequest, GetRequest, CoreRequest, StatusRequest, DeleteRequest>;

/// A refusal: its code and one line of text.
struct QueryError {
  QueryErrorCode code;
  std::string message;
};

/// Parses one request line (without its '\n'). Unknown keys are ignored; an id that is not 32
/// lower-case hex chars is BadRequest. Never throws: any input gives a request or a QueryError.
std::variant<QueryRequest, QueryError> parse_query_request(std::string_view line);

/// The request as one line (with its '\n'), for clients.
std::string query_request_line(const QueryRequest& r);

/// The error line, with its '\n'.
std::string query_error_line(const QueryError& e);

/// Whether the peer with uid `peer_uid` may see dump `r` and receive its core: root sees every
/// dump; any other uid only dumps of its own processes that the kernel dumped as that user and
/// that never changed credentials — r.uid == r.euid == peer_uid, r.gid == r.egid, and
/// extra.owner_may_read true (PIDFD_COREDUMP_USER without ..._ROOT, recorded at the handshake;
/// the rule systemd-coredump applies before granting the crashing user an ACL on the core: no
/// AT_SECURE, uid == euid, gid == egid). A record without owner_may_read is root's only.
bool peer_may_see(const DumpRecord& r, uid_t peer_uid);

/// Whether the peer with uid `peer_uid` may delete dump `r` through the service: the owner of a
/// dump is who may see it, peer_may_see(), and nobody else but root. Consequences, on purpose:
/// - a setuid or setgid program's dump (euid != uid, or the kernel's PIDFD_COREDUMP_ROOT) is
///   root's: the user who ran it can neither read it nor remove the record of its crash (it may
///   be the trace of an attack on that program);
/// - a container's process is owned by the uid the kernel reports in the daemon's user namespace:
///   its host uid. Root in a user-namespaced container maps to a subordinate uid (100000...), and
///   only a peer with that uid (`podman unshare`, a process inside the container reaching the
///   socket) owns its dumps; the container's owner (Owner UID, the user slice) does not;
/// - a dump recorded before owner_may_read existed is root's.
bool peer_may_delete(const DumpRecord& r, uid_t peer_uid);

/// What {"op":"status"} returns. Filled by the daemon (daemon/main.cc), printed by `dumpctl status`.
/// Serialised with to_json()/status_from_json() under the keys named like the fields.
struct QueryStatus {
  std::string version;             ///< coredumpd's version (CMake PROJECT_VERSION)
  std::int64_t pid = 0;            ///< the daemon's pid
  std::int64_t started_us = 0;     ///< UTC µs since the epoch when the daemon started
  std::string activation;          ///< "socket" (systemd passed the sockets) or "direct"
  std::string kernel_socket;       ///< the socket the kernel connects to (core_pattern "@@" + it)
  std::string query_socket;        ///< this socket's path
  std::string store;               ///< the store directory
  bool analysis_enabled = false;
  bool journal_enabled = false;
  /// Counters of daemon/report/stats.h by name ("stored": 12, ...), and anything else the daemon
  /// counts (queue lengths...), as a flat JSON object of numbers.
  nlohmann::json counters = nlohmann::json::object();
  /// Store usage and its limits as the daemon computes them (bytes; "limits" from retention).
  nlohmann::json store_usage = nlohmann::json::object();
};

nlohmann::json to_json(const QueryStatus& s);
/// Throws nlohmann::json::exception on a missing or mistyped field.
QueryStatus status_from_json(const nlohmann::json& j);

}  // namespace coredumpd
