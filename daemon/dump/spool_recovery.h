// A core received in full survives a daemon crash: once its stream has ended, the spool is made
// durable and linked into the store as ".spool-<id>", with a manifest ".spool-<id>.json" beside it
// (written last, atomically: it is the end-of-stream marker). Both go once the dump is indexed.
// At the next start, each manifest's spool is compressed and stored as the dump would have been,
// off the accept path, and its record marked recovered (extras::kRecovered). A dump killed while
// its stream was still coming has no names in the store (its spool is an O_TMPFILE) and stays
// interrupted, as before.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "daemon/policy/compression_options.h"
#include "store/dump_record.h"

namespace coredumpd {

class Spool;
struct DumpContext;
struct Config;

/// What the next start needs to finish a dump whose stream ended: the manifest's contents.
struct SpoolManifest {
  static constexpr int kFormat = 1;
  std::string id;                 ///< the record's id (32 hex chars)
  std::uint64_t received = 0;     ///< core bytes the kernel sent (DumpRecord::core_size)
  std::uint64_t spooled = 0;      ///< of them, in the spool file (its exact st_size)
  DumpState state = DumpState::Complete;  ///< Complete or Truncated, as the drain's report says
  std::string reason;             ///< why Truncated; "" otherwise
  bool uncompressed = false;      ///< the sampler said incompressible: kept raw as "<id>.core"
  int level = 3;                  ///< the policy's zstd level
  std::optional<int> signal;      ///< from the core's notes
  std::optional<std::int64_t> crashing_tid_ns;
  nlohmann::json extra = nlohmann::json::object();  ///< the record's extras at the end of the stream
};

/// The manifest as JSON, and back. from_json returns std::nullopt (with `error` set) for anything
/// not written by to_json of this format: a wrong format number, a bad id, a missing field.
nlohmann::json manifest_to_json(const SpoolManifest& m);
std::optional<SpoolManifest> manifest_from_json(const nlohmann::json& j, std::string& error);

/// ".spool-<id>" and ".spool-<id>.json": the names of a kept spool and its manifest in the store.
std::string spool_file_name(const std::string& id);
std::string manifest_file_name(const std::string& id);

/// Makes `spool` (flushed, its input not yet closed) durable and keeps it for the next start:
/// fsync, link as spool_file_name(), then the manifest (written to a temporary name, fsynced,
/// renamed, directory fsynced). Returns "" on success, else why not: no manifest is left then,
/// but the spool's name may be; forget_kept_spool() removes it.
std::string keep_spool_for_recovery(Spool& spool, int store_dirfd, const SpoolManifest& m);

/// Removes the kept spool and manifest of `id`, if any (the manifest first). Not fsynced: a name
/// left by a crash is removed at the next start (a spool without a manifest, or a manifest of a
/// dump the index has as final).
void forget_kept_spool(int store_dirfd, const std::string& id);

/// Stores the kept spool of `m` from `store_dirfd` as its core file, as the dump would have:
/// "<id>.zst" compressed with `options` (the manifest's level), or "<id>.core" if `m.uncompressed`.
/// Replaces a file of that name left by the crash (never indexed). Returns the stored file's size
/// in bytes. Throws StoreError (core_writer.h) if the spool is missing or shorter than m.spooled,
/// or on I/O errors; nothing is left under the core's name then.
std::uint64_t store_kept_spool(int store_dirfd, const SpoolManifest& m, CompressionOptions options);

/// At start-up, after the index has marked unfinished dumps interrupted: finds the kept spools,
/// removes those nobody can finish (no manifest, no record, a record already final), says in each
/// remaining record that it is being recovered, and posts their recovery to ctx.compressors, so
/// the daemon listens at once. Each recovery holds `in_flight` (the server's count of dumps a stop
/// waits for) until it is done. Logs what it finds and what becomes of each. Never throws
/// (index errors are logged).
void start_spool_recovery(DumpContext& ctx, const Config& config, std::atomic<int>& in_flight);

/// Tests only (coredumpd --enable-test-hooks --test-hold-before-store): the compress stage of
/// every dump stops for good once its stream has ended and its spool is kept, before its core file
/// is committed: a daemon then killed has been stopped while compressing.
void set_hold_before_store(bool hold);
bool hold_before_store();

}  // namespace coredumpd
