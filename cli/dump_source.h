// Where dumpctl's records and cores come from: the store read directly (root, or the store's
// owner) or the daemon's query service (everyone else), behind one interface for list, info, dump,
// debug and signatures.
#pragma once

#include <sys/types.h>

#include <functional>
#include <memory>
#include <ostream>
#include <optional>
#include <string>
#include <vector>

#include "cli/core_file.h"
#include "cli/dumpctl.h"
#include "store/dump_record.h"
#include "store/index.h"
#include "store/record_query.h"

namespace coredumpd::cli {

/// Which source a command reads.
enum class SourceKind {
  Store,    ///< the index and core files under GlobalOptions::store
  Service,  ///< the query service at GlobalOptions::query_socket
};

/// The source for `g` when dumpctl runs with effective uid `euid`: --query-socket given: the
/// service; else --store given: the store (whoever can read it); else root reads the store and
/// everyone else asks the service (the store is root's: 0750/0640).
SourceKind choose_source(const GlobalOptions& g, uid_t euid);

/// Records and cores, from one place.
class DumpSource {
 public:
  virtual ~DumpSource() = default;

  /// Every dump the reader may see, oldest first, without analysis (a report may be 1 MiB).
  /// Throws IndexError / DumpctlError.
  virtual std::vector<DumpRecord> list() = 0;
  /// Calls `each` with every record `q` selects (record_matches(), its limit and order), until
  /// `each` returns false. The default filters list() in memory; the store's index and the
  /// service answer it without holding every record (store/record_query.h). Throws like list().
  virtual void scan(const RecordQuery& q, const std::function<bool(DumpRecord&&)>& each);
  /// The dump with full id `id`, analysis included; std::nullopt if it is gone (or not the reader's).
  virtual std::optional<DumpRecord> get(const std::string& id) = 0;
  /// The COREFILE column for `r` (the service's client cannot stat the store: it trusts the record).
  virtual CoreStatus core_status(const DumpRecord& r) = 0;
  /// Checks that `r` has a usable core, before any output is created. Throws DumpctlError (the
  /// dump has no stored core: its state and reason; a file missing from the store).
  virtual void require_core(const DumpRecord& r) = 0;
  /// Opens the core of `r`. Throws DumpctlError / QueryRefused.
  virtual OpenCore open_core(const DumpRecord& r) = 0;
  /// Where `r`'s core is stored, for `info` (a path in the store; std::nullopt when it has none or
  /// the reader cannot know it).
  virtual std::optional<std::string> core_location(const DumpRecord& r) const = 0;
  /// Which kind this is.
  virtual SourceKind kind() const = 0;
  /// The index, when this source reads the store (list's --container narrowing, the pending
  /// journal beside it); nullptr for the service.
  virtual const Index* index() const { return nullptr; }
};

/// The source choose_source() picks for `g`, opened: the index (read-only), or a connection to the
/// service. Throws IndexError, QueryUnreachable (the daemon is not running), DumpctlError.
std::unique_ptr<DumpSource> open_source(const GlobalOptions& g, std::ostream& err);

/// The store source itself (tests, and commands that need the index directly): g.store's index,
/// or null in early boot (open_index_or_pending()), and g.pending_dir's records; notes on `err`.
std::unique_ptr<DumpSource> open_store_source(const GlobalOptions& g, std::ostream& err);

/// The service source itself: connects to `socket`. Throws QueryUnreachable / DumpctlError.
std::unique_ptr<DumpSource> open_service_source(const std::string& socket);

}  // namespace coredumpd::cli
