// What the query service answers (store/query_protocol.h), apart from the socket: a request and
// the peer's uid in, reply lines (and for "core" a descriptor) out. Runs on the query thread only,
// with an Index of its own (SQLite connections are per thread).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "daemon/report/stats.h"
#include "store/delete_dump.h"
#include "store/dump_record.h"
#include "store/index.h"
#include "store/query_protocol.h"
#include "util/unique_fd.h"

namespace coredumpd {

/// A reply in progress: lines to send, produced a chunk at a time so that a list of thousands of
/// records is never formatted at once, and the descriptor that goes with the first byte.
class QueryReply {
 public:
  /// Records a list reply reads from the index at a time: with the /proc captures (up to ~100 KB
  /// a record) and without (~1 KB): a reply holds about one chunk plus one page.
  static constexpr std::size_t kListPageRowsWithExtra = 4;
  static constexpr std::size_t kListPageRows = 64;

  /// A reply of one line (with its '\n'), a success or an error line (`ok`); `fd` >= 0 travels
  /// with its first byte.
  static QueryReply line(std::string text, bool ok, UniqueFd fd = UniqueFd());
  /// A list reply: header, one envelope per record `scan` selects, trailer. The records are read
  /// from `index` a page at a time as chunks are asked for (Index::scan_page(): no statement open
  /// between chunks), so a reply holds at most a page of records; a page that fails to read ends
  /// the reply with an error line instead of the trailer.
  static QueryReply list(std::shared_ptr<const Index> index, IndexScan scan);

  /// The next bytes to send, about `max_bytes` or fewer (whole lines); "" when the reply is done.
  std::string next_chunk(std::size_t max_bytes);
  /// The descriptor to attach to the first chunk (taken once; then empty).
  UniqueFd take_fd() { return std::move(fd_); }
  /// True when the reply succeeded ("ok": true), for the counters.
  bool ok() const { return ok_; }

 private:
  std::string pending_;                ///< formatted, not yet handed out
  std::shared_ptr<const Index> index_;  ///< list: where the pages come from
  IndexScan scan_;                     ///< list: where the scan is
  std::size_t sent_ = 0;               ///< list: envelopes formatted
  bool trailer_due_ = false;
  bool ok_ = true;
  UniqueFd fd_;
};

/// Removes dump `id` from the store if `may_delete(row)` agrees (store/delete_dump.h's
/// delete_dump()). Called on the query thread.
using QueryDeleteFn =
    std::function<DeleteOutcome(const std::string& id, const std::function<bool(const DumpRecord&)>& may_delete)>;

/// The daemon's QueryDeleteFn: delete_dump() on its writable `index` and `store_dirfd` (the
/// daemon's own, which is root's), holding `mu` (DumpContext::vacuum_mu: never beside a vacuum()),
/// logging what was deleted and counting Outcome::Deleted in `stats` (if set). All must outlive it.
QueryDeleteFn store_deleter(Index& index, int store_dirfd, std::mutex& mu, Stats* stats);

/// Answers requests from one store. Not thread-safe: the query thread owns it.
class QueryAnswers {
 public:
  /// `store_dir` is opened now (read-only, O_DIRECTORY): cores are opened relative to it. The
  /// index is opened at the first request that needs it (it may not exist yet), and again after a
  /// failure. `status` fills the status reply; "store_usage" gets this store's usage merged in.
  /// Throws std::system_error if the directory cannot be opened.
  /// `remove` answers "delete"; empty: every delete is refused ("internal": not available here).
  QueryAnswers(std::string store_dir, std::function<QueryStatus()> status, QueryDeleteFn remove = {});

  /// The reply to `request` from a peer with uid `peer_uid`, visibility by peer_may_see(): a dump
  /// the peer may not see is "not_found", like one that does not exist. Never throws.
  QueryReply answer(const QueryRequest& request, uid_t peer_uid);
  /// Replaces the status function.
  void set_status(std::function<QueryStatus()> status) { status_ = std::move(status); }

 private:
  QueryReply list(const ListRequest& r, uid_t peer_uid);
  QueryReply get(const std::string& id, uid_t peer_uid, bool with_core);
  QueryReply status();
  QueryReply remove(const std::string& id, uid_t peer_uid);
  std::shared_ptr<Index> index();  // throws IndexError

  std::string store_dir_;
  UniqueFd store_dirfd_;
  std::function<QueryStatus()> status_;
  QueryDeleteFn remove_;
  std::shared_ptr<Index> index_;  ///< shared with the list replies still reading from it
};

/// Opens core file `name` (DumpRecord::path) read-only in directory `dirfd`, refusing a name that
/// is empty, ".", "..", or holds '/' (the index is not trusted to name only its own files), and
/// symlinks (O_NOFOLLOW). Returns the descriptor or an empty one with errno set (EINVAL for a
/// refused name).
UniqueFd open_core_file(int dirfd, const std::string& name);

}  // namespace coredumpd
