// `dumpctl vacuum`: delete cores until retention limits hold.
#include <chrono>
#include <optional>

#include "cli/dumpctl.h"
#include "cli/format.h"
#include "cli/json_output.h"
#include "cli/store_commands.h"
#include "store/index.h"
#include "store/vacuum.h"
#include "util/text.h"

namespace coredumpd::cli {

namespace {

std::uint64_t size_arg(const std::string& value, const char* option) {
  const auto n = parse_size(value);
  if (!n) {
    throw DumpctlError(std::string("invalid ") + option + " size '" + escape_for_display(value) +
                       "' (want bytes, or a number with K, M, G or T: 500M, 2G)");
  }
  return *n;
}

RetentionLimits limits_from(const VacuumOptions& o) {
  RetentionLimits l;
  if (o.max_use) l.max_use_bytes = size_arg(*o.max_use, "--max-use");
  if (o.max_use_per_uid) l.max_use_per_uid_bytes = size_arg(*o.max_use_per_uid, "--max-use-per-uid");
  if (o.keep_free) {
    if (o.keep_free->find('%') != std::string::npos) {
      l.keep_free_percent = parse_percent(*o.keep_free);
      if (!l.keep_free_percent) {
        throw DumpctlError("invalid --keep-free percentage '" + escape_for_display(*o.keep_free) +
                           "' (want more than 0% and less than 100%)");
      }
    } else {
      l.keep_free_bytes = size_arg(*o.keep_free, "--keep-free");
    }
  }
  const auto duration_arg = [](const std::string& text, const char* flag) {
    auto d = parse_duration(text);
    if (!d) {
      throw DumpctlError(std::string("invalid ") + flag + " duration '" + escape_for_display(text) +
                         "' (want seconds, or units s, min, h, d, w: 7d, 12h, 1d 6h)");
    }
    return *d;
  };
  if (o.max_age) l.max_age = duration_arg(*o.max_age, "--max-age");
  if (o.max_core_age) l.max_core_age = duration_arg(*o.max_core_age, "--max-core-age");
  if (!l.any()) {
    throw DumpctlError(
        "nothing to do: give at least one of --max-use, --keep-free, --max-age, --max-core-age, --max-use-per-uid");
  }
  return l;
}

nlohmann::json result_json(const VacuumResult& r) {
  auto removed = nlohmann::json::array();
  for (const auto& v : r.removed) {
    removed.push_back({
        {"id", v.id},
        {"uid", v.uid},
        {"rule", v.rule},
        {"timestamp_us", v.timestamp_us},
        {"bytes", v.bytes},
        {"disk_bytes", v.disk_bytes},
        {"reason", vacuum_reason_name(v.reason)},
        {"row_deleted", v.row_deleted},
        {"file_missing", v.file_missing},
        {"not_regular", v.not_regular},
    });
  }
  return {
      {"dry_run", r.dry_run},       {"removed", std::move(removed)},
      {"bytes_removed", r.bytes_removed}, {"unmet", r.unmet},
      {"errors", r.errors},
  };
}

void print_text(const VacuumResult& r, const Io& io) {
  const char* verb = r.dry_run ? "Would delete" : "Deleted";
  std::uint64_t rows = 0;
  for (const auto& v : r.removed) {
    io.out << verb << ' ' << v.id << ": uid " << v.uid;
    if (!v.rule.empty()) io.out << ", rule " << escape_for_display(v.rule);
    io.out << ", " << format_timestamp(v.timestamp_us, false);
    if (v.bytes > 0) io.out << ", " << format_size(v.bytes);
    io.out << " (" << vacuum_reason_name(v.reason) << ')';
    if (v.row_deleted) io.out << " with its record";
    if (v.file_missing && v.bytes > 0) io.out << " [core file was already gone]";
    if (v.not_regular) io.out << " [not a regular file: the entry itself was unlinked]";
    io.out << '\n';
    if (v.row_deleted) ++rows;
  }
  io.out << (r.dry_run ? "Would free " : "Freed ") << format_size(r.bytes_removed) << " ("
         << r.bytes_removed << " bytes) from " << r.removed.size()
         << (r.removed.size() == 1 ? " dump" : " dumps");
  if (rows > 0) io.out << ", " << rows << (rows == 1 ? " record" : " records") << " deleted";
  io.out << ".\n";
}

}  // namespace

int cmd_vacuum(const GlobalOptions& g, const VacuumOptions& o, const Io& io) {
  const RetentionLimits limits = limits_from(o);
  // A read-only open first: it refuses a directory without an index instead of creating one.
  std::optional<Index> index;
  index.emplace(g.store, /*writable=*/false);
  if (!o.dry_run) {
    index.reset();
    index.emplace(g.store, /*writable=*/true);
  }
  const UniqueFd dir = open_store_dir(g.store);
  const VacuumResult r =
      vacuum(*index, dir.get(), limits, /*keep_id=*/"", std::chrono::system_clock::now(), o.dry_run);

  if (o.json) {
    print_json(result_json(r), io);
  } else {
    print_text(r, io);
    for (const auto& u : r.unmet) io.err << "dumpctl: warning: " << escape_for_display(u) << '\n';
    for (const auto& e : r.errors) io.err << "dumpctl: " << escape_for_display(e) << '\n';
  }
  return r.errors.empty() && io.out ? 0 : 1;
}

}  // namespace coredumpd::cli
