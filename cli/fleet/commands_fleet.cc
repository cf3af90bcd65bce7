// `dumpctl fleet top` and `fleet crashes`, and the wiring of `fleet` (fetch: cli/fleet_fetch.cc).

// GCC 12 at -O2: the false "potential null pointer dereference" of CLI11 2.1's inlined
// std::string (see cli/dumpctl.cc); before every include.
#pragma GCC diagnostic ignored "-Wnull-dereference"

#include "cli/fleet/commands_fleet.h"

#include <CLI/CLI.hpp>

#include <limits>

#include "cli/fleet/fleet_settings.h"
#include "cli/fleet_launch.h"
#include "cli/format.h"
#include "cli/json_output.h"
#include "cli/table.h"
#include "store/dump_record.h"
#include "util/text.h"

namespace coredumpd::cli {

namespace {

std::string joined(const std::vector<std::string>& v, std::size_t max) {
  if (v.empty()) return "-";
  std::string out;
  for (std::size_t i = 0; i < v.size() && i < max; ++i) out += (i ? "," : "") + escape_for_display(v[i]);
  if (v.size() > max) out += " (+" + std::to_string(v.size() - max) + ")";
  return out;
}

}  // namespace

nlohmann::json fleet_record_json(const FleetRecord& r) {
  auto build_ids = nlohmann::json::array();
  for (const auto& b : r.build_ids) build_ids.push_back(bytes_to_json(b));
  return {{"host_id", bytes_to_json(r.host_id)}, {"machine_id", bytes_to_json(r.machine_id)},
          {"dump_id", bytes_to_json(r.dump_id)}, {"time", r.timestamp_us},
          {"exe", bytes_to_json(r.exe)}, {"comm", bytes_to_json(r.comm)}, {"signal", r.signal},
          {"signature", bytes_to_json(r.signature)}, {"signature_text", bytes_to_json(r.signature_text)},
          {"build_ids", std::move(build_ids)}, {"package", bytes_to_json(r.package)},
          {"container", bytes_to_json(r.container)}, {"object_key", bytes_to_json(r.object_key)},
          {"record_key", bytes_to_json(r.record_key)}, {"core_bytes", r.core_bytes}, {"state", bytes_to_json(r.state)}};
}

int cmd_fleet_top(FleetIndex& index, const SelectOptions& sel, const Io& io) {
  const std::int64_t since = sel.since ? parse_time_option(*sel.since, "--since") : 0;
  const std::int64_t until =
      sel.until ? parse_time_option(*sel.until, "--until") : std::numeric_limits<std::int64_t>::max();
  if (since > until) throw DumpctlError("--since must be before --until");
  const auto top = index.top_signatures(since, until, sel.max_rows.value_or(kFleetTopRows));
  if (sel.json != JsonMode::Off) {
    auto arr = nlohmann::json::array();
    for (const auto& s : top) {
      auto versions = nlohmann::json::array();
      for (const auto& v : s.versions) versions.push_back(bytes_to_json(v));
      arr.push_back({{"signature", bytes_to_json(s.signature)}, {"signature_text", bytes_to_json(s.signature_text)},
                     {"count", s.count}, {"hosts", s.hosts}, {"first_us", s.first_us}, {"last_us", s.last_us},
                     {"versions", std::move(versions)}});
    }
    print_json(arr, io, sel.json);
    return 0;
  }
  if (top.empty()) {
    io.err << "No crash signatures found.\n";
    return 1;
  }
  std::vector<std::vector<std::string>> rows;
  for (const auto& s : top)
    rows.push_back({std::to_string(s.count), std::to_string(s.hosts), format_timestamp(s.first_us, false),
                    format_timestamp(s.last_us, false), escape_for_display(s.signature.substr(0, 12)),
                    joined(s.versions, 3), escape_for_display(s.signature_text)});
  print_table({{"COUNT", true}, {"HOSTS", true}, {"FIRST"}, {"LAST"}, {"SIGNATURE"}, {"VERSIONS"}, {"TEXT"}}, rows,
              io.out, TableStyle{sel.legend, {}});
  return io.out ? 0 : 1;
}

int cmd_fleet_crashes(FleetIndex& index, const std::string& signature, const SelectOptions& sel, const Io& io) {
  const auto crashes = index.crashes_of(signature, sel.max_rows.value_or(kFleetCrashRows));
  if (sel.json != JsonMode::Off) {
    auto arr = nlohmann::json::array();
    for (const auto& r : crashes) arr.push_back(fleet_record_json(r));
    print_json(arr, io, sel.json);
    return 0;
  }
  if (crashes.empty()) {
    io.err << "No crashes found.\n";
    return 1;
  }
  std::vector<std::vector<std::string>> rows;
  for (const auto& r : crashes)
    rows.push_back({format_timestamp(r.timestamp_us, false), escape_for_display(r.host_id),
                    escape_for_display(r.dump_id), std::to_string(r.signal),
                    escape_for_display(r.exe.empty() ? "[" + r.comm + "]" : r.exe), escape_for_display(r.state)});
  print_table({{"TIME"}, {"HOST"}, {"ID"}, {"SIG", true}, {"EXE"}, {"STATE"}}, rows, io.out,
              TableStyle{sel.legend, {}});
  return io.out ? 0 : 1;
}

FleetCommands::FleetCommands(CLI::App& app) {
  fleet_ = app.add_subcommand("fleet", kFleetDescription);
  fleet_->require_subcommand(1);
  fleet_->add_option("--database", opts_.database,
                     "libpq connection string of the fleet index (default: upload.fleet_conninfo of the configuration)");
  fleet_->add_option("--config", opts_.config,
                     std::string("the daemon's configuration file to read upload.* from (default ") +
                         kDefaultDaemonConfig + ")");
  fleet_->add_option("--endpoint", opts_.endpoint, "fetch: S3 endpoint URL (default: upload.endpoint)");
  fleet_->add_option("--bucket", opts_.bucket, "fetch: S3 bucket (default: upload.bucket)");
  fleet_->add_option("--region", opts_.region, "fetch: S3 region (default: upload.region, else us-east-1)");
  top_ = fleet_->add_subcommand("top", "The signatures with most crashes over the fleet in -S..-U, at most -n (20)");
  crashes_ = fleet_->add_subcommand("crashes", "The crashes of one signature on every host, newest first");
  crashes_->add_option("SIGNATURE", opts_.signature, "the signature's hash or a unique prefix")->required();
  fetch_ = fleet_->add_subcommand("fetch", "Download a crash's core from S3 (decompressed) to -o FILE or standard output");
  fetch_->add_option("DUMP-ID", opts_.dump_id, "the dump id or a unique prefix (fleet crashes lists them)")->required();
}

std::optional<int> FleetCommands::run(const SelectOptions& sel, const std::string& output, const Io& io) const {
  if (!*fleet_) return std::nullopt;
  const bool config_given = !opts_.config.empty();
  FleetSettings s = read_fleet_settings(config_given ? opts_.config : kDefaultDaemonConfig, config_given);
  if (!opts_.database.empty()) s.database = opts_.database;
  if (s.database.empty())
    throw DumpctlError("no fleet database: give --database CONNINFO or set upload.fleet_conninfo in " +
                       escape_for_display(config_given ? opts_.config : kDefaultDaemonConfig));
  FleetIndex index(s.database);
  if (*top_) return cmd_fleet_top(index, sel, io);
  if (*crashes_) return cmd_fleet_crashes(index, opts_.signature, sel, io);

  const std::optional<FleetRecord> r = index.find_dump(opts_.dump_id);
  if (!r) throw DumpctlError("no crash " + escape_for_display(opts_.dump_id) + " in the fleet index");
  require_fleet_core(*r);  // before asking for S3 settings the crash would not need
  if (!opts_.endpoint.empty()) s.s3.endpoint = opts_.endpoint;
  if (!opts_.bucket.empty()) s.s3.bucket = opts_.bucket;
  if (!opts_.region.empty()) s.s3.region = opts_.region;
  if (s.s3.region.empty()) s.s3.region = "us-east-1";
  if (s.s3.endpoint.empty() || s.s3.bucket.empty())
    throw DumpctlError("no S3 bucket: give --endpoint and --bucket or set upload.endpoint and upload.bucket");
  std::string why;
  const std::optional<S3Credentials> creds = load_s3_credentials(s.credentials_file, &why);
  if (!creds) throw DumpctlError("no S3 credentials: " + why);
  return cmd_fleet_fetch(*r, s.s3, *creds, output, sel.json, io);
}

}  // namespace coredumpd::cli
