#include "daemon/query/query_answers.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <exception>
#include <system_error>

#include <spdlog/spdlog.h>

#include "store/record_json.h"
#include "store/usage.h"

namespace coredumpd {

namespace {

using nlohmann::json;

std::string ok_line(json j) { return j.dump(-1, ' ', false, json::error_handler_t::replace) + '\n'; }

QueryReply error(QueryErrorCode code, std::string message) {
  return QueryReply::line(query_error_line({code, std::move(message)}), false);
}

QueryReply not_found() { return error(QueryErrorCode::NotFound, "no such dump"); }

json usage_json(const UsageReport& u) {
  json j = {{"bytes", u.total.bytes}, {"cores", u.total.cores}, {"rows", u.rows},
            {"vacuumed_rows", u.vacuumed_rows}, {"states", u.states}};
  if (u.filesystem) j["filesystem"] = {{"total_bytes", u.filesystem->total_bytes}, {"free_bytes", u.filesystem->free_bytes}};
  return j;
}

}  // namespace

QueryReply QueryReply::line(std::string text, bool ok, UniqueFd fd) {
  QueryReply r;
  r.ok_ = ok;
  r.pending_ = std::move(text);
  r.fd_ = std::move(fd);
  return r;
}

QueryReply QueryReply::list(std::shared_ptr<const Index> index, IndexScan scan) {
  QueryReply r;
  r.pending_ = ok_line({{"ok", true}, {"op", "list"}});
  r.index_ = std::move(index);
  r.scan_ = std::move(scan);
  r.trailer_due_ = true;
  return r;
}

std::string QueryReply::next_chunk(std::size_t max_bytes) {
  // Pages are small (a record with its /proc capture may be 100 KB), so a chunk overshoots
  // max_bytes by at most a page.
  const std::size_t page_rows = scan_.query.with_extra ? kListPageRowsWithExtra : kListPageRows;
  while (trailer_due_ && pending_.size() < max_bytes && !scan_.done) {
    try {
      index_->scan_page(scan_, page_rows, [&](DumpRecord&& r) {
        r.analysis = nullptr;  // scan() leaves it null; said again, since the protocol promises it
        pending_ += ok_line(record_envelope(r));
        ++sent_;
      });
    } catch (const std::exception& e) {
      pending_ += query_error_line({QueryErrorCode::Internal, std::string("cannot read the store: ") + e.what()});
      trailer_due_ = false;
      ok_ = false;
      index_.reset();
    }
  }
  if (trailer_due_ && scan_.done && pending_.size() < max_bytes) {
    pending_ += ok_line({{"end", true}, {"count", sent_}});
    trailer_due_ = false;
    index_.reset();
  }
  return std::exchange(pending_, std::string());
}

UniqueFd open_core_file(int dirfd, const std::string& name) {
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos ||
      name.find('\0') != std::string::npos) {
    errno = EINVAL;
    return UniqueFd();
  }
  return UniqueFd(::openat(dirfd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC | O_NONBLOCK));
}

QueryDeleteFn store_deleter(Index& index, int store_dirfd, std::mutex& mu, Stats* stats) {
  return [&index, store_dirfd, &mu, stats](const std::string& id,
                                           const std::function<bool(const DumpRecord&)>& may_delete) {
    DeleteOutcome out;
    {
      const std::lock_guard lock(mu);  // retention's lock: a vacuum() never runs beside this
      out = delete_dump(index, store_dirfd, id, may_delete);
    }
    if (out.status == DeleteStatus::Deleted) {
      if (stats) stats->count(Outcome::Deleted);
      spdlog::info("query: dump {} deleted on request (uid {}, core {}{})", id, out.record.uid,
                   out.path.empty() ? "none" : out.path, out.file_missing ? ", already missing" : "");
    } else if (out.status == DeleteStatus::Failed) {
      spdlog::warn("query: delete of dump {} failed: {}", id, out.error);
    }
    return out;
  };
}

QueryAnswers::QueryAnswers(std::string store_dir, std::function<QueryStatus()> status, QueryDeleteFn remove)
    : store_dir_(std::move(store_dir)), status_(std::move(status)), remove_(std::move(remove)) {
  store_dirfd_.reset(::open(store_dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!store_dirfd_) throw std::system_error(errno, std::generic_category(), "opening store " + store_dir_);
}

std::shared_ptr<Index> QueryAnswers::index() {
  if (!index_) index_ = std::make_shared<Index>(store_dir_, /*writable=*/false);
  return index_;
}

QueryReply QueryAnswers::answer(const QueryRequest& request, uid_t peer_uid) {
  try {
    if (const auto* l = std::get_if<ListRequest>(&request)) return list(*l, peer_uid);
    if (const auto* g = std::get_if<GetRequest>(&request)) return get(g->id, peer_uid, false);
    if (const auto* c = std::get_if<CoreRequest>(&request)) return get(c->id, peer_uid, true);
    if (const auto* d = std::get_if<DeleteRequest>(&request)) return remove(d->id, peer_uid);
    return status();
  } catch (const std::exception& e) {
    index_.reset();  // opened again at the next request: the store may come back
    return error(QueryErrorCode::Internal, std::string("cannot read the store: ") + e.what());
  }
}

QueryReply QueryAnswers::list(const ListRequest& r, uid_t peer_uid) {
  IndexScan scan;
  scan.query = r.query;
  scan.visible_to = peer_uid;
  return QueryReply::list(index(), std::move(scan));
}

QueryReply QueryAnswers::get(const std::string& id, uid_t peer_uid, bool with_core) {
  std::optional<DumpRecord> d = index()->get(id);
  if (!d || !peer_may_see(*d, peer_uid)) return not_found();
  if (!with_core) return QueryReply::line(ok_line({{"ok", true}, {"op", "get"}, {"dump", record_envelope(*d)}}), true);

  const bool has_core = (d->state == DumpState::Complete || d->state == DumpState::Truncated) && !d->path.empty();
  if (!has_core) {
    return error(QueryErrorCode::NoCore, std::string("dump ") + d->id + " has no stored core (" + state_name(d->state) +
                                             (d->reason.empty() ? "" : ": " + d->reason) + ")");
  }
  UniqueFd fd = open_core_file(store_dirfd_.get(), d->path);
  if (!fd) {
    if (errno == ENOENT)
      return error(QueryErrorCode::NoCore, "dump " + d->id + ": its core file is gone (removed by retention?)");
    return error(QueryErrorCode::Internal, "dump " + d->id + ": cannot open its core: " + std::strerror(errno));
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode))
    return error(QueryErrorCode::Internal, "dump " + d->id + ": its core is not a regular file");
  d->analysis = nullptr;
  return QueryReply::line(ok_line({{"ok", true}, {"op", "core"}, {"dump", record_envelope(*d)}}), true, std::move(fd));
}

QueryReply QueryAnswers::remove(const std::string& id, uid_t peer_uid) {
  if (!remove_) return error(QueryErrorCode::Internal, "this service cannot delete dumps");
  // Ownership is decided on the row read under the lock, right before the unlink.
  const DeleteOutcome out =
      remove_(id, [peer_uid](const DumpRecord& r) { return peer_may_delete(r, peer_uid); });
  switch (out.status) {
    case DeleteStatus::NotFound: return not_found();
    case DeleteStatus::InProgress: return error(QueryErrorCode::InProgress, "dump " + id + " is still being received");
    case DeleteStatus::Failed: return error(QueryErrorCode::Internal, out.error);
    case DeleteStatus::Deleted: break;
  }
  DumpRecord r = out.record;
  r.analysis = nullptr;
  return QueryReply::line(ok_line({{"ok", true}, {"op", "delete"}, {"dump", record_envelope(r)},
                                   {"file_missing", out.file_missing}}),
                          true);
}

QueryReply QueryAnswers::status() {
  QueryStatus s = status_ ? status_() : QueryStatus{};
  try {
    const json used = usage_json(usage(*index(), store_dirfd_.get()));
    for (const auto& [k, v] : used.items()) s.store_usage[k] = v;
  } catch (const std::exception& e) {
    index_.reset();
    s.store_usage["error"] = e.what();
  }
  return QueryReply::line(ok_line({{"ok", true}, {"op", "status"}, {"status", to_json(s)}}), true);
}

}  // namespace coredumpd
