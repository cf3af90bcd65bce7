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
  GlobalOptions g_;
  std::ostream& err_;
  std::unique_ptr<Index> index_;
};

/// The daemon's query service: the dumps the kernel made as this user (peer_may_see()).
class ServiceSource final : public DumpSource {
 public:
  explicit ServiceSource(const std::string& socket) : client_(socket) {}

  std::vector<DumpRecord> list() override { return client_.list(); }
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
