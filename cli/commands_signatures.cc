// `dumpctl signatures`: dumps grouped by crash signature, as fleet crash servers show them.
#include <algorithm>
#include <map>
#include <set>

#include "cli/analysis_commands.h"
#include "cli/dump_source.h"
#include "cli/format.h"
#include "cli/json_output.h"
#include "cli/record_container.h"
#include "cli/table.h"
#include "util/text.h"

namespace coredumpd::cli {

namespace {

/// What EXECUTABLES shows of a dump: its exe's file name, or "[comm]" when the exe is unknown.
std::string executable_name(const DumpRecord& r) {
  std::string exe = r.exe;
  constexpr std::string_view kDeleted = " (deleted)";
  if (exe.ends_with(kDeleted)) exe.resize(exe.size() - kDeleted.size());
  if (exe.empty()) return r.comm.empty() ? "-" : "[" + r.comm + "]";
  const std::size_t slash = exe.rfind('/');
  return slash == std::string::npos ? exe : exe.substr(slash + 1);
}

/// "a, b, c" for at most `max` names, then " (+N)".
std::string name_list(const std::vector<std::string>& names, std::size_t max, bool escape) {
  if (names.empty()) return "-";
  std::string out;
  for (std::size_t i = 0; i < names.size() && i < max; ++i)
    out += (i ? "," : "") + (escape ? escape_for_display(names[i]) : names[i]);
  if (names.size() > max) out += " (+" + std::to_string(names.size() - max) + ")";
  return out;
}

}  // namespace

std::vector<SignatureGroup> group_signatures(const std::vector<DumpRecord>& records) {
  struct Acc {
    SignatureGroup g;
    std::set<std::string> exes, containers;
  };
  std::map<std::string, Acc> by_hash;
  for (const auto& r : records) {
    if (r.signature.empty()) continue;
    Acc& a = by_hash[r.signature];
    if (a.g.count == 0) {
      a.g.signature = r.signature;
      a.g.first_us = a.g.last_us = r.timestamp_us;
    }
    ++a.g.count;
    a.g.first_us = std::min(a.g.first_us, r.timestamp_us);
    if (r.timestamp_us >= a.g.last_us) {
      a.g.last_us = r.timestamp_us;
      a.g.text = r.signature_text;  // the newest analysis words it
    }
    a.g.ids.push_back(r.id);
    a.exes.insert(executable_name(r));
    if (const std::string c = container_short(r); c != "-") a.containers.insert(c);
  }
  std::vector<SignatureGroup> groups;
  for (auto& [hash, a] : by_hash) {
    a.g.executables.assign(a.exes.begin(), a.exes.end());
    a.g.containers.assign(a.containers.begin(), a.containers.end());
    groups.push_back(std::move(a.g));
  }
  std::sort(groups.begin(), groups.end(), [](const SignatureGroup& a, const SignatureGroup& b) {
    if (a.count != b.count) return a.count > b.count;
    if (a.last_us != b.last_us) return a.last_us > b.last_us;
    return a.signature < b.signature;
  });
  return groups;
}

int cmd_signatures(const GlobalOptions& g, const SignaturesOptions& o, const Io& io) {
  const std::optional<std::int64_t> since = o.since ? std::optional(parse_time_option(*o.since, "--since")) : std::nullopt;
  const std::optional<std::int64_t> until = o.until ? std::optional(parse_time_option(*o.until, "--until")) : std::nullopt;
  std::vector<DumpRecord> records = open_source(g)->list();  // the signature columns, not the reports
  std::erase_if(records, [&](const DumpRecord& r) {
    return (since && r.timestamp_us < *since) || (until && r.timestamp_us > *until);
  });
  const auto groups = group_signatures(records);

  if (o.json) {
    auto arr = nlohmann::json::array();
    for (const auto& s : groups) {
      auto exes = nlohmann::json::array(), containers = nlohmann::json::array();
      for (const auto& e : s.executables) exes.push_back(bytes_to_json(e));
      for (const auto& c : s.containers) containers.push_back(c);  // already escaped by container_short()
      arr.push_back({{"signature", s.signature}, {"signature_text", bytes_to_json(s.text)}, {"count", s.count},
                     {"first_us", s.first_us}, {"last_us", s.last_us}, {"executables", std::move(exes)},
                     {"containers", std::move(containers)}, {"ids", s.ids}});
    }
    print_json(arr, io);
    return 0;
  }
  if (groups.empty()) {
    io.err << "No crash signatures found.\n";
    return 1;
  }
  std::vector<std::vector<std::string>> rows;
  for (const auto& s : groups) {
    rows.push_back({std::to_string(s.count), format_timestamp(s.first_us, false), format_timestamp(s.last_us, false),
                    escape_for_display(s.signature.substr(0, 12)), name_list(s.executables, 3, true),
                    name_list(s.containers, 3, false), escape_for_display(s.text)});
  }
  print_table({{"COUNT", true}, {"FIRST"}, {"LAST"}, {"SIGNATURE"}, {"EXECUTABLES"}, {"CONTAINERS"}, {"TEXT"}}, rows,
              io.out);
  const auto unsigned_dumps = static_cast<std::size_t>(
      std::count_if(records.begin(), records.end(), [](const DumpRecord& r) { return r.signature.empty(); }));
  if (unsigned_dumps != 0)
    io.err << unsigned_dumps << " dumps have no signature (not analysed, or the analysis found no frame)\n";
  return io.out ? 0 : 1;
}

}  // namespace coredumpd::cli
