// `dumpctl fleet`: the crashes of every host, from the fleet index in PostgreSQL
// (fleet/fleet_index.h) and the cores in S3 (s3/s3_client.h) that the daemons' uploaders filled
// (issue 26 item 3). Built into dumpctl-fleet (cli/fleet/main.cc), which dumpctl execs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/dumpctl.h"
#include "fleet/fleet_index.h"
#include "s3/s3_client.h"

namespace CLI {
class App;
}

namespace coredumpd::cli {

/// The options of `dumpctl fleet` and its verbs. -S/-U/-n/-o/--json are dumpctl's own (SelectOptions).
struct FleetOptions {
  std::string database;        ///< --database CONNINFO; "" = upload.fleet_conninfo of the configuration
  std::string config;          ///< --config FILE; "" = kDefaultDaemonConfig (may be absent)
  std::string endpoint;        ///< --endpoint URL (fetch); "" = upload.endpoint
  std::string bucket;          ///< --bucket NAME (fetch); "" = upload.bucket
  std::string region;          ///< --region (fetch); "" = upload.region, else us-east-1
  std::string signature;       ///< crashes: the signature or a unique hex prefix
  std::string dump_id;         ///< fetch: the dump id or a unique prefix
};

/// Default row counts when -n is not given.
inline constexpr std::size_t kFleetTopRows = 20;
inline constexpr std::size_t kFleetCrashRows = 100;

/// `fleet top`: the signatures with most crashes in [-S, -U] (default: all time), at most -n
/// (default kFleetTopRows): COUNT, HOSTS, FIRST, LAST, SIGNATURE (12 hex), VERSIONS, TEXT; or a
/// JSON array of {signature, signature_text, count, hosts, first_us, last_us, versions}. Returns 0,
/// or 1 with "No crash signatures found." on `err` when none. Throws FleetIndexError, DumpctlError.
int cmd_fleet_top(FleetIndex& index, const SelectOptions& sel, const Io& io);

/// `fleet crashes SIGNATURE`: its crashes, newest first, at most -n (default kFleetCrashRows):
/// TIME, HOST, ID, SIG, EXE, STATE; or a JSON array (fleet_record_json()). Returns 0, or 1 with
/// "No crashes found." when none.
int cmd_fleet_crashes(FleetIndex& index, const std::string& signature, const SelectOptions& sel, const Io& io);

/// `fleet fetch DUMP-ID` for its record `r` (FleetIndex::find_dump()): downloads the core from S3
/// (S3Client::get_object_to_fd()) into a private temporary file beside the output (or in $TMPDIR,
/// default /var/tmp), checks its size against the index's core_bytes, and writes it, decompressed
/// when its key ends in ".zst" (stream_core_fd(), as `dumpctl dump`), to `output` (sparse, under a
/// temporary name renamed into place) or to `io.out` when `output` is "" or "-" (refused on a
/// terminal). A line saying what was fetched goes to `io.err`; with --json and -o FILE, an object
/// {dump_id, host_id, object_key, output, bytes} goes to `io.out` instead. Returns 0. Throws
/// DumpctlError when the crash has no core in S3 (its state is named), the download fails (HTTP
/// status and S3's message), the size differs, or the core is not valid zstd.
int cmd_fleet_fetch(const FleetRecord& r, const S3Location& where, const S3Credentials& creds,
                    const std::string& output, JsonMode json, const Io& io);

/// Throws DumpctlError "crash ID of HOST has no core in S3 (state STATE)" unless `r` is "uploaded"
/// with an object key.
void require_fleet_core(const FleetRecord& r);

/// One crash as `fleet crashes --json` prints it: the FleetRecord's fields by their names, the
/// time as "time" (µs since the epoch), byte strings that are not UTF-8 as byte arrays.
nlohmann::json fleet_record_json(const FleetRecord& r);

/// Registers `fleet` (verbs top, crashes, fetch) on a dumpctl CLI11 app and runs it when parsed
/// (dumpctl-fleet's; dumpctl has a placeholder that execs it, cli/fleet_launch.h).
class FleetCommands : public ExtraVerb {
 public:
  /// Adds the subcommand to `app` (which must outlive this object).
  explicit FleetCommands(CLI::App& app);
  FleetCommands(const FleetCommands&) = delete;  // CLI11 holds pointers to the option members
  FleetCommands& operator=(const FleetCommands&) = delete;
  /// The exit code of the parsed fleet verb, or std::nullopt if `fleet` was not given. `sel` and
  /// `output` are dumpctl's -S/-U/-n/--json and -o.
  std::optional<int> run(const SelectOptions& sel, const std::string& output, const Io& io) const override;

 private:
  CLI::App* fleet_ = nullptr;
  CLI::App* top_ = nullptr;
  CLI::App* crashes_ = nullptr;
  CLI::App* fetch_ = nullptr;
  FleetOptions opts_;
};

}  // namespace coredumpd::cli
