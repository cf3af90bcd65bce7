// dumpctl's side of the daemon's query service (store/query_protocol.h): how a user who is not root
// lists their own dumps and receives a core as a passed descriptor.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "cli/dumpctl.h"
#include "store/dump_record.h"
#include "store/query_protocol.h"
#include "store/record_query.h"
#include "util/unique_fd.h"

namespace coredumpd::cli {

/// The daemon answered a request with {"ok":false,...}. what() is the message dumpctl prints
/// (query_refusal_message()); `code` is the reply's code when it was a known one.
class QueryRefused : public DumpctlError {
 public:
  QueryRefused(std::optional<QueryErrorCode> c, const std::string& what) : DumpctlError(what), code(c) {}
  std::optional<QueryErrorCode> code;
};

/// The service could not be reached at all (nothing listens: ENOENT, ECONNREFUSED, ...).
/// what() is one line naming the socket and saying that root can read the store directly.
class QueryUnreachable : public DumpctlError {
 public:
  QueryUnreachable(int e, const std::string& what) : DumpctlError(what), error(e) {}
  int error;  ///< connect(2)'s errno
};

/// The line dumpctl prints for a refusal with `code` and the daemon's `message` (escaped here):
/// "not_found" says the dump does not exist or is not the user's, "busy" to try again later, ...
std::string query_refusal_message(std::optional<QueryErrorCode> code, const std::string& message);

/// The core of a dump as the daemon sent it: its record and the stored file, open read-only, bytes
/// as stored (record.compression says how).
struct ReceivedCore {
  DumpRecord record;
  UniqueFd fd;
};

/// One connection to the query service. Requests are answered in order, one at a time; every read
/// and write is bounded by `timeout` (SO_RCVTIMEO/SO_SNDTIMEO), so a stalled daemon cannot hang
/// dumpctl. Not thread-safe.
class QueryClient {
 public:
  /// The longest reply line accepted (a record's extra holds maps and /proc files: generous), bytes.
  static constexpr std::size_t kMaxReplyBytes = 64u << 20;

  /// Connects to the AF_UNIX stream socket at `path`. Throws QueryUnreachable (ENOENT,
  /// ECONNREFUSED: the daemon is not running) or DumpctlError (a path too long, EACCES...).
  explicit QueryClient(const std::string& path, std::chrono::milliseconds timeout = std::chrono::seconds(30));

  /// {"op":"list"}: the records the peer may see, oldest first, without analysis. Checks the
  /// trailer's count. Throws QueryRefused, DumpctlError (a malformed reply, a hang-up, a timeout).
  std::vector<DumpRecord> list();
  /// {"op":"list"} with `q`: calls `each` with every record the daemon sends, as it reads them (one
  /// reply line at a time: nothing is collected). When `each` returns false the rest of the reply
  /// is read and dropped, so the connection stays usable. Checks the trailer's count. Throws like
  /// list().
  void scan(const RecordQuery& q, const std::function<bool(DumpRecord&&)>& each);
  /// {"op":"get"} for full id `id`: the record with its analysis. Throws like list().
  DumpRecord get(const std::string& id);
  /// {"op":"core"} for full id `id`: the record and its core's descriptor. Throws like list(), also
  /// when the reply carries no descriptor.
  ReceivedCore core(const std::string& id);
  /// {"op":"status"}. Throws like list().
  QueryStatus status();
  /// {"op":"delete"} for full id `id`: the daemon removes the dump's core and row if the peer owns
  /// it (peer_may_delete()). Returns whether its core file was already gone. Throws like list()
  /// (QueryRefused "not_found" for a dump that is not the peer's, "in_progress").
  bool remove(const std::string& id);

  /// The socket's path, as given.
  const std::string& path() const { return path_; }

 private:
  void send(const QueryRequest& r);
  /// The next reply line (without '\n'); a descriptor received on the way is kept in fd_.
  std::string read_line();
  /// Reads a line that must be {"ok":true,"op":op}; a refusal throws QueryRefused.
  nlohmann::json read_reply(const char* op);

  std::string path_;
  UniqueFd sock_;
  std::string buf_;  ///< bytes received after the last line returned
  UniqueFd fd_;      ///< the last descriptor received, until core() takes it
};

}  // namespace coredumpd::cli
