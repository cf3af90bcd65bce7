#include "cli/dump_source.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "cli/pending_records.h"
#include "cli/query_client.h"
#include "store/index.h"
#include "util/text.h"

namespace coredumpd::cli {

void DumpSource::scan(const RecordQuery& q, const std::function<bool(DumpRecord&&)>& each) {
  std::vector<DumpRecord> records = list();
  std::erase_if(records, [&](const DumpRecord& r) { return !record_matches(q, r); });
  if (q.limit && records.size() > *q.limit)
    records.erase(records.begin(), records.end() - static_cast<std::ptrdiff_t>(*q.limit));  // the newest
  if (q.newest_first) std::reverse(records.begin(), records.end());
  for (auto& r : records)
    if (!each(std::move(r))) return;
}

namespace {

/// The store read directly, as dumpctl always did, with the daemon's pending records (a core kept
/// in the fallback on /run is read from there until it is moved in: docs/EARLY_BOOT.md).
class StoreSource final : public DumpSource {
 public:
  StoreSource(const GlobalOptions& g, std::ostream& err) : g_(g), err_(err), index_(open_index_or_pending(g, err)) {}

  std::vector<DumpRecord> list() override {
    std::vector<DumpRecord> records = index_ ? index_->list() : std::vector<DumpRecord>{};
    add_pending(g_, err_, records);
    return records;
  }
  void scan(const RecordQuery& q, const std::function<bool(DumpRecord&&)>& each) override {
    std::vector<DumpRecord> pending = pending_selected(q);
    if (pending.empty()) {
      if (index_) index_->scan(q, each);
      return;
    }
    if (q.limit && !q.newest_first) {
      // The newest N of both, oldest first: at most N from each side, merged (pending records are few).
      std::vector<DumpRecord> merged;
      if (index_) index_->scan(q, [&](DumpRecord&& r) {
        merged.push_back(std::move(r));
        return true;
      });
      merge_pending(merged, std::move(pending));
      const std::size_t skip = merged.size() > *q.limit ? merged.size() - *q.limit : 0;
      for (auto it = merged.begin() + static_cast<std::ptrdiff_t>(skip); it != merged.end(); ++it)
        if (!each(std::move(*it))) return;
      return;
    }
    // Streamed: each pending record goes out before the first index record it precedes (ties:
    // the index's first, as add_pending() sorts them), in the asked order.
    if (q.newest_first) std::reverse(pending.begin(), pending.end());
    const auto before = [&](const DumpRecord& p, const DumpRecord& r) {
      return q.newest_first ? p.timestamp_us >= r.timestamp_us : p.timestamp_us < r.timestamp_us;
    };
    std::size_t next = 0, delivered = 0;
    bool stopped = false;
    const auto give = [&](DumpRecord&& r) {
      stopped = (q.limit && delivered >= *q.limit) || !each(std::move(r));
      ++delivered;
      return !stopped;
    };
    if (index_) index_->scan(q, [&](DumpRecord&& r) {
      while (next < pending.size() && before(pending[next], r))
        if (!give(std::move(pending[next++]))) return false;
      return give(std::move(r));
    });
    while (!stopped && next < pending.size()) give(std::move(pending[next++]));
  }
  std::optional<DumpRecord> get(const std::string& id) override {
    if (index_)
      if (auto r = index_->get(id)) return r;
    for (auto& r : list())
      if (r.id == id) return std::move(r);
    return std::nullopt;
  }
  CoreStatus core_status(const DumpRecord& r) override { return cli::core_status(core_dir_of(g_, r), r); }
  void require_core(const DumpRecord& r) override { require_core_file(core_dir_of(g_, r), r); }
  OpenCore open_core(const DumpRecord& r) override {
    OpenCore c;
    c.path = require_core_file(core_dir_of(g_, r), r);
    c.shown = escape_for_display(*c.path);
    c.compression = r.compression;
    c.fd.reset(::open(c.path->c_str(), O_RDONLY | O_CLOEXEC));
    if (!c.fd) throw DumpctlError("cannot open core file " + c.shown + ": " + std::strerror(errno));
    return c;
  }
  std::optional<std::string> core_location(const DumpRecord& r) const override {
    return core_file_path(core_dir_of(g_, r), r);
  }
  SourceKind kind() const override { return SourceKind::Store; }
  /// Null in early boot, when the store is not mounted yet and only pending records exist.
  const Index* index() const override { return index_.get(); }

 private:
  /// The pending journal's records that `q` selects and the index does not hold yet, oldest first.
  std::vector<DumpRecord> pending_selected(const RecordQuery& q) {
    std::vector<DumpRecord> pending;
    add_pending(g_, err_, pending);
    std::erase_if(pending, [&](const DumpRecord& r) { return !record_matches(q, r) || (index_ && index_->get(r.id)); });
    return pending;
  }
  /// Sorts `pending` (oldest first) into `records` (oldest first), after index records of equal time.
  static void merge_pending(std::vector<DumpRecord>& records, std::vector<DumpRecord> pending) {
    const auto mid = records.insert(records.end(), std::make_move_iterator(pending.begin()),
                                    std::make_move_iterator(pending.end()));
    std::inplace_merge(records.begin(), mid, records.end(),
                       [](const DumpRecord& a, const DumpRecord& b) { return a.timestamp_us < b.timestamp_us; });
  }

  GlobalOptions g_;
  std::ostream& err_;
  std::unique_ptr<Index> index_;
};

/// The daemon's query service: the dumps the kernel made as this user (peer_may_see()).
class ServiceSource final : public DumpSource {
 public:
  explicit ServiceSource(const std::string& socket) : client_(socket) {}

  std::vector<DumpRecord> list() override { return client_.list(); }
  void scan(const RecordQuery& q, const std::function<bool(DumpRecord&&)>& each) override { client_.scan(q, each); }
  std::optional<DumpRecord> get(const std::string& id) override {
    try {
      return client_.get(id);
    } catch (const QueryRefused& e) {
      if (e.code == QueryErrorCode::NotFound) return std::nullopt;
      throw;
    }
  }
  // The file is the daemon's to stat; a core it lost shows when it is asked for.
  CoreStatus core_status(const DumpRecord& r) override { return core_status_of(r, true); }
  void require_core(const DumpRecord& r) override {
    if (r.state == DumpState::Complete || r.state == DumpState::Truncated) return;  // the daemon decides
    std::string why = state_name(r.state);
    if (!r.reason.empty()) why += ": " + escape_for_display(r.reason);
    throw DumpctlError("coredump " + escape_for_display(r.id) + " has no stored core (" + why + ")");
  }
  OpenCore open_core(const DumpRecord& r) override {
    ReceivedCore got = client_.core(r.id);
    if (got.record.compression != kCompressionZstd && got.record.compression != kCompressionNone) {
      throw DumpctlError("coredump " + escape_for_display(r.id) + ": unsupported compression '" +
                         escape_for_display(got.record.compression) + "'");
    }
    OpenCore c;
    c.fd = std::move(got.fd);
    c.compression = got.record.compression;
    c.shown = "of coredump " + escape_for_display(r.id) + " (sent by coredumpd)";
    return c;
  }
  std::optional<std::string> core_location(const DumpRecord&) const override { return std::nullopt; }
  SourceKind kind() const override { return SourceKind::Service; }

 private:
  QueryClient client_;
};

}  // namespace

SourceKind choose_source(const GlobalOptions& g, uid_t euid) {
  if (g.query_socket_given) return SourceKind::Service;
  if (g.store_given) return SourceKind::Store;
  return euid == 0 ? SourceKind::Store : SourceKind::Service;
}

std::unique_ptr<DumpSource> open_source(const GlobalOptions& g, std::ostream& err) {
  if (choose_source(g, ::geteuid()) == SourceKind::Service) return open_service_source(g.query_socket);
  return open_store_source(g, err);
}

std::unique_ptr<DumpSource> open_store_source(const GlobalOptions& g, std::ostream& err) {
  return std::make_unique<StoreSource>(g, err);
}

std::unique_ptr<DumpSource> open_service_source(const std::string& socket) {
  return std::make_unique<ServiceSource>(socket);
}

}  // namespace coredumpd::cli
