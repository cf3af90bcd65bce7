// `dumpctl du`: space used by stored cores, per uid and per policy rule.
#include <algorithm>
#include <cstdio>
#include <vector>

#include "cli/dumpctl.h"
#include "cli/format.h"
#include "cli/json_output.h"
#include "cli/store_commands.h"
#include "store/index.h"
#include "store/usage.h"
#include "util/text.h"

namespace coredumpd::cli {

namespace {

/// Groups of one kind, biggest first (ties: by key).
std::vector<std::pair<std::string, GroupUsage>> sorted_groups(
    const std::map<std::string, GroupUsage>& groups) {
  std::vector<std::pair<std::string, GroupUsage>> v(groups.begin(), groups.end());
  std::stable_sort(v.begin(), v.end(),
                   [](const auto& a, const auto& b) { return a.second.bytes > b.second.bytes; });
  return v;
}

/// How a group key is shown in the table: rules are escaped and the defaults get a name.
std::string shown_key(GroupKind k, const std::string& key) {
  if (k == GroupKind::Rule && key.empty()) return "(defaults)";
  return escape_for_display(key);
}

const char* column_title(GroupKind k) {
  switch (k) {
    case GroupKind::Uid: return "UID";
    case GroupKind::Rule: return "RULE";
  }
  return "GROUP";
}

void print_group_table(GroupKind k, const std::map<std::string, GroupUsage>& groups,
                       std::ostream& out) {
  const auto rows = sorted_groups(groups);
  std::size_t width = display_width(column_title(k));
  for (const auto& [key, u] : rows) width = std::max(width, display_width(shown_key(k, key)));
  const auto line = [&](const std::string& key, const std::string& cores, const std::string& size) {
    std::string s = key;
    s.append(width - display_width(key), ' ');
    std::string c = cores;
    if (c.size() < 7) c.insert(0, 7 - c.size(), ' ');
    std::string z = size;
    if (z.size() < 8) z.insert(0, 8 - z.size(), ' ');
    out << s << ' ' << c << ' ' << z << '\n';
  };
  line(column_title(k), "CORES", "SIZE");
  for (const auto& [key, u] : rows)
    line(shown_key(k, key), std::to_string(u.cores), format_size(u.bytes));
}

std::string percent(std::uint64_t part, std::uint64_t whole) {
  if (whole == 0) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%",
                static_cast<double>(part) * 100.0 / static_cast<double>(whole));
  return buf;
}

nlohmann::json usage_json(const UsageReport& rep, const std::string& store) {
  nlohmann::json j = {
      {"store", bytes_to_json(store)},
      {"cores", rep.total.cores},
      {"bytes", rep.total.bytes},
      {"rows", rep.rows},
      {"vacuumed_rows", rep.vacuumed_rows},
      {"states", rep.states},
      {"filesystem", nullptr},
  };
  if (rep.filesystem) {
    j["filesystem"] = {{"total_bytes", rep.filesystem->total_bytes},
                       {"free_bytes", rep.filesystem->free_bytes}};
  }
  for (const auto& [kind, groups] : rep.groups) {
    auto arr = nlohmann::json::array();
    for (const auto& [key, u] : sorted_groups(groups)) {
      nlohmann::json item;
      if (kind == GroupKind::Uid) {
        item["uid"] = std::stoll(key);  // group_key() wrote it with std::to_string
      } else {
        item[group_kind_name(kind)] = key;
      }
      item["cores"] = u.cores;
      item["bytes"] = u.bytes;
      arr.push_back(std::move(item));
    }
    j[std::string("by_") + group_kind_name(kind)] = std::move(arr);
  }
  return j;
}

}  // namespace

int cmd_du(const GlobalOptions& g, const DuOptions& o, const Io& io) {
  const Index index(g.store, /*writable=*/false);
  const UniqueFd dir = open_store_dir(g.store);
  const UsageReport rep = usage(index, dir.get());

  if (o.json) {
    print_json(usage_json(rep, g.store), io);
    return io.out ? 0 : 1;
  }
  auto& out = io.out;
  out << "Store: " << escape_for_display(g.store) << '\n';
  out << "Cores: " << rep.total.cores << ", " << format_size(rep.total.bytes) << " ("
      << rep.total.bytes << " bytes)\n";
  out << "Index: " << rep.rows << (rep.rows == 1 ? " record" : " records");
  if (rep.vacuumed_rows > 0) out << ", " << rep.vacuumed_rows << " with the core vacuumed";
  out << '\n';
  if (rep.filesystem) {
    out << "Filesystem: " << format_size(rep.filesystem->free_bytes) << " free of "
        << format_size(rep.filesystem->total_bytes) << " ("
        << percent(rep.filesystem->free_bytes, rep.filesystem->total_bytes) << " free)\n";
  }
  for (const auto& [kind, groups] : rep.groups) {
    if (groups.empty()) continue;
    out << '\n';
    print_group_table(kind, groups, out);
  }
  return io.out ? 0 : 1;
}

}  // namespace coredumpd::cli
