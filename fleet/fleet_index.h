// CONTRACT (issue 26), written before its implementation: helper "fleet" implements it in
// fleet/fleet_index.cc (room coredumpd_fleet: util, store; libpq); helper "uploader" calls
// upsert() from the daemon's upload room. Change it only with a reason, said in the commit.
//
// The fleet index: one PostgreSQL table of crashes from every host, for `dumpctl fleet`. The
// cores and records themselves are objects in S3 (s3/s3_client.h); the table holds their keys.
#pragma once

#include <cstdint>
#include <exception>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace coredumpd {

/// One crash as the fleet sees it. (host_id, dump_id) is the key: a second upsert of the same
/// pair updates `state` and `object_key` and never adds a row.
struct FleetRecord {
  std::string host_id;     ///< configured host name, or the hostname
  std::string machine_id;  ///< /etc/machine-id (32 hex)
  std::string dump_id;     ///< the local store's id (DumpRecord::id)
  std::int64_t timestamp_us = 0;  ///< crash time, UTC µs
  std::string exe;
  std::string comm;
  int signal = 0;
  std::string signature;             ///< hex SHA-256 (analysis/), empty before analysis
  std::string signature_text;        ///< its readable frames, e.g. "crash!f <- crash!main"
  std::vector<std::string> build_ids;  ///< hex, main executable first
  std::string package;               ///< .note.package or "" (the "version" column of fleet top)
  std::string container;             ///< container name or ""
  std::string object_key;            ///< S3 key of the core, "" if not uploaded (metadata only)
  std::string record_key;            ///< S3 key of the record JSON
  std::uint64_t core_bytes = 0;      ///< uploaded object's size
  /// "metadata" (record only), "uploading", "uploaded" (core in S3), "skipped" (rule or known
  /// signature), "failed"
  std::string state;
};

/// One line of `dumpctl fleet top`: a signature over a time window.
struct FleetSignature {
  std::string signature;
  std::string signature_text;
  std::uint64_t count = 0;
  std::uint64_t hosts = 0;
  std::int64_t first_us = 0;
  std::int64_t last_us = 0;
  std::vector<std::string> versions;  ///< distinct packages (or exe build-ids when no package)
};

/// A fleet index failure, with libpq's message. `unreachable`: the server itself could not be
/// reached or the connection was lost (and reconnecting failed), as opposed to a statement the
/// server refused (a lock or statement timeout, a constraint): the uploader's breaker tells them apart.
class FleetIndexError : public std::exception {
 public:
  explicit FleetIndexError(std::string what, bool unreachable = false) : what_(std::move(what)), unreachable_(unreachable) {}
  const char* what() const noexcept override { return what_.c_str(); }
  bool unreachable() const noexcept { return unreachable_; }
 private:
  std::string what_;
  bool unreachable_ = false;
};

/// A connection to the fleet database (libpq `conninfo`, e.g. "host=/tmp/pg dbname=fleet").
/// The constructor connects and applies the schema's migrations (a table of versions; each
/// migration in one transaction, under pg_advisory_xact_lock so hosts starting together do not
/// race). Throws FleetIndexError on connection or SQL errors, with libpq's message.
/// Not thread-safe: one per thread.
class FleetIndex {
 public:
  explicit FleetIndex(const std::string& conninfo);
  ~FleetIndex();
  FleetIndex(const FleetIndex&) = delete;
  FleetIndex& operator=(const FleetIndex&) = delete;

  /// A check made about once a second while a statement waits for the server (fleet/pg_exec.h):
  /// when it returns true the statement throws FleetIndexError "... cancelled", and this object is
  /// to be destroyed. For a daemon that stops while the server hangs. Not during the constructor's
  /// connect (connect_timeout) and migrations (lock_timeout, statement_timeout).
  void set_cancel(std::function<bool()> cancelled);

  /// Insert or update (INSERT ... ON CONFLICT (host_id, dump_id) DO UPDATE): idempotent.
  void upsert(const FleetRecord& r);
  /// True if any host has a crash with this signature whose core was uploaded (for the
  /// `core-if-new-signature` rule: send the core only when the fleet has none).
  bool signature_has_core(const std::string& signature);
  /// Signatures with crashes in [since_us, until_us], most crashes first, at most `limit`.
  std::vector<FleetSignature> top_signatures(std::int64_t since_us, std::int64_t until_us, std::size_t limit);
  /// Crashes of one signature (hex prefix accepted), newest first, at most `limit`.
  std::vector<FleetRecord> crashes_of(const std::string& signature, std::size_t limit);
  /// One crash by dump id (prefix accepted; nullopt if none; FleetIndexError if ambiguous).
  std::optional<FleetRecord> find_dump(const std::string& dump_id);

 private:
  struct Impl;
  Impl* impl_;
};

}  // namespace coredumpd
