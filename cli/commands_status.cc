// `dumpctl status`: gathers what would make the machine lose dumps and prints it.
#include "cli/commands_status.h"

#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>

#include "cli/format.h"
#include "cli/info_details.h"
#include "cli/json_output.h"
#include "cli/query_client.h"
#include "cli/store_commands.h"
#include "store/index.h"
#include "store/usage.h"
#include "util/text.h"

namespace coredumpd::cli {

namespace {

std::optional<std::string> read_core_pattern() {
  std::ifstream in("/proc/sys/kernel/core_pattern");
  std::string line;
  if (!in || !std::getline(in, line)) return std::nullopt;
  return line;
}

/// Usage computed here from the index (root, daemon down), in the shape the daemon reports.
nlohmann::json local_usage(const std::string& store) {
  const Index index(store, /*writable=*/false);
  const UniqueFd dir = open_store_dir(store);
  const UsageReport rep = usage(index, dir.get());
  nlohmann::json j = {{"source", "local"}, {"bytes", rep.total.bytes}, {"cores", rep.total.cores}, {"rows", rep.rows},
                      {"filesystem", nullptr}, {"limits", nullptr}};
  if (rep.filesystem)
    j["filesystem"] = {{"total_bytes", rep.filesystem->total_bytes}, {"free_bytes", rep.filesystem->free_bytes}};
  return j;
}

std::optional<std::uint64_t> uint_at(const nlohmann::json& j, const char* key) {
  if (!j.is_object()) return std::nullopt;
  const auto it = j.find(key);
  if (it == j.end() || !it->is_number_unsigned()) return std::nullopt;
  return it->get<std::uint64_t>();
}

void find_problems(StatusReport& r) {
  auto lose = [&](std::string text) { r.problems.push_back({true, std::move(text)}); };
  if (!r.kernel.socket_mode)
    lose("kernel " + escape_for_display(r.kernel.release) + " cannot hand crashes to a socket (" + r.kernel.why + ")");
  const std::string want = "@@" + r.kernel_socket;
  if (!r.core_pattern) {
    lose("cannot read /proc/sys/kernel/core_pattern");
  } else if (!r.pattern_ours) {
    lose("core_pattern is " + escape_for_display(*r.core_pattern) + ", not " + escape_for_display(want) +
         ": crashes do not reach coredumpd");
  }
  const std::string sock = escape_for_display(r.kernel_socket);
  if (r.socket.error) {
    if (!r.daemon) lose("cannot check the kernel socket " + sock + " (" + *r.socket.error + ") and coredumpd is not running");
  } else if (!r.socket.exists) {
    lose("the kernel socket " + sock + " does not exist: the kernel has nowhere to send crashes");
  } else if (!r.socket.is_socket) {
    lose(sock + " is not a socket");
  } else if (r.socket.listening == false) {
    lose("nothing listens on the kernel socket " + sock);
  }
  if (!r.daemon) {
    const bool held = r.socket.listening == true;  // socket activation: systemd holds it
    r.problems.push_back({false, r.daemon_error + (held ? "; the kernel socket is listening, so crashes are still taken" : "")});
  }
  const auto bytes = uint_at(r.store_usage, "bytes");
  const auto max_use =
      r.store_usage.is_object() ? uint_at(r.store_usage.value("limits", nlohmann::json()), "max_use_bytes") : std::nullopt;
  if (bytes && max_use && *bytes > *max_use)
    r.problems.push_back({false, "stored cores use " + format_size(*bytes) + ", over the limit of " + format_size(*max_use)});
}

std::string daemon_line(const StatusReport& r) {
  if (!r.daemon && r.daemon_down && r.socket.listening == true)
    return "no query service (its kernel socket is listening: socket activation, or a coredumpd without one)";
  if (!r.daemon) return r.daemon_down ? "not running" : "not answering (see the warning below)";
  const QueryStatus& d = *r.daemon;
  std::string s = "running (pid " + std::to_string(d.pid) + ", version " + escape_for_display(d.version);
  if (d.started_us > 0) s += ", since " + format_timestamp(d.started_us, false);
  return s + ")";
}

/// One retention limit of the daemon's store_usage.limits ("max_use_bytes": 4294967296 reads
/// "max_use 4.0G", "max_core_age_s": 259200 reads "max_core_age 3d").
std::string limit_text(const std::string& key, const nlohmann::json& v) {
  std::string name = key;
  if (key.ends_with("_bytes") && v.is_number_unsigned()) {
    name.resize(name.size() - 6);
    return escape_for_display(name) + " " + format_size(v.get<std::uint64_t>());
  }
  if (key.ends_with("_s") && v.is_number_integer()) {
    name.resize(name.size() - 2);
    const auto sec = v.get<std::int64_t>();
    const std::string d = sec % 86400 == 0 ? std::to_string(sec / 86400) + "d"
                          : sec % 3600 == 0 ? std::to_string(sec / 3600) + "h"
                                            : std::to_string(sec) + "s";
    return escape_for_display(name) + " " + d;
  }
  return escape_for_display(name) + " " + sanitize_json_text(v.dump());
}

std::string usage_text(const nlohmann::json& u) {
  if (!u.is_object()) return "unknown (the daemon is not running; root can read the store)";
  if (const auto e = u.find("error"); e != u.end() && e->is_string()) return "unknown: " + escape_for_display(e->get<std::string>());
  std::vector<std::string> lines;
  const auto b = uint_at(u, "bytes");
  const auto c = uint_at(u, "cores");
  if (b || c) lines.push_back((b ? format_size(*b) : std::string("?")) + (c ? " in " + std::to_string(*c) + " cores" : ""));
  else lines.push_back("not reported");
  const nlohmann::json limits = u.value("limits", nlohmann::json());
  std::string l;
  if (limits.is_object()) {
    for (const auto& [k, v] : limits.items()) {
      if (v.is_null()) continue;
      l += (l.empty() ? "" : ", ") + limit_text(k, v);
    }
  }
  lines.push_back("limits: " + (l.empty() ? std::string("unknown (the daemon's configuration sets them)") : l));
  const nlohmann::json fs = u.value("filesystem", nlohmann::json());
  if (const auto total = uint_at(fs, "total_bytes"), free = uint_at(fs, "free_bytes"); total && free)
    lines.push_back("filesystem: " + format_size(*free) + " free of " + format_size(*total));
  std::string s;
  for (const auto& line : lines) s += (s.empty() ? "" : "\n") + line;
  return s;
}

}  // namespace

StatusReport gather_status(const GlobalOptions& g) {
  StatusReport r;
  r.query_socket = g.query_socket;
  try {
    QueryClient client(g.query_socket, std::chrono::seconds(5));
    r.daemon = client.status();
  } catch (const QueryUnreachable& e) {
    r.daemon_down = true;
    r.daemon_error = e.what();
  } catch (const std::exception& e) {
    r.daemon_error = e.what();
  }
  r.kernel = probe_kernel_support();
  r.core_pattern = read_core_pattern();
  if (r.daemon && !r.daemon->kernel_socket.empty()) {
    r.kernel_socket = r.daemon->kernel_socket;
  } else if (const auto p = r.core_pattern ? pattern_socket(*r.core_pattern) : std::nullopt) {
    r.kernel_socket = *p;
  } else {
    r.kernel_socket = kDefaultKernelSocket;
  }
  r.pattern_ours = r.core_pattern && *r.core_pattern == "@@" + r.kernel_socket;
  r.socket = probe_socket(r.kernel_socket);
  if (r.daemon) {
    r.store_usage = r.daemon->store_usage;
  } else if (::geteuid() == 0) {
    try {
      r.store_usage = local_usage(g.store);
    } catch (const std::exception& e) {
      r.store_usage = {{"source", "local"}, {"error", e.what()}};
    }
  }
  find_problems(r);
  return r;
}

nlohmann::json status_json(const StatusReport& r) {
  nlohmann::json daemon = {{"running", r.daemon.has_value()}, {"query_socket", bytes_to_json(r.query_socket)}};
  if (r.daemon) {
    daemon["status"] = to_json(*r.daemon);
  } else {
    daemon["error"] = r.daemon_error;
  }
  nlohmann::json problems = nlohmann::json::array();
  bool loses = false;
  for (const auto& p : r.problems) {
    problems.push_back({{"text", p.text}, {"loses_dumps", p.loses_dumps}});
    loses = loses || p.loses_dumps;
  }
  return {
      {"daemon", daemon},
      {"kernel",
       {{"release", r.kernel.release},
        {"core_modes", r.kernel.core_modes ? nlohmann::json(*r.kernel.core_modes) : nlohmann::json(nullptr)},
        {"socket_mode", r.kernel.socket_mode},
        {"why", r.kernel.why}}},
      {"core_pattern",
       {{"value", r.core_pattern ? bytes_to_json(*r.core_pattern) : nlohmann::json(nullptr)},
        {"ours", r.pattern_ours},
        {"kernel_socket", bytes_to_json(r.kernel_socket)},
        {"socket_exists", r.socket.exists},
        {"socket_is_socket", r.socket.is_socket},
        {"socket_listening", r.socket.listening ? nlohmann::json(*r.socket.listening) : nlohmann::json(nullptr)},
        {"socket_error", r.socket.error ? nlohmann::json(*r.socket.error) : nlohmann::json(nullptr)}}},
      {"store", r.store_usage},
      {"counters", r.daemon ? r.daemon->counters : nlohmann::json(nullptr)},
      {"problems", problems},
      {"loses_dumps", loses},
  };
}

int cmd_status(const GlobalOptions& g, const StatusOptions& o, const Io& io) {
  const StatusReport r = gather_status(g);
  bool loses = false;
  for (const auto& p : r.problems) loses = loses || p.loses_dumps;
  const int rc = loses ? kStatusLosesDumps : 0;
  if (o.json) {
    print_json(status_json(r), io);
    return rc;
  }
  std::ostream& out = io.out;
  print_info_field(out, "Daemon", daemon_line(r));
  if (r.daemon) {
    print_info_field(out, "Activation", escape_for_display(r.daemon->activation));
    print_info_field(out, "Store", escape_for_display(r.daemon->store));
    print_info_field(out, "Analysis", r.daemon->analysis_enabled ? "enabled" : "disabled");
    print_info_field(out, "Journal", r.daemon->journal_enabled ? "enabled" : "disabled");
  }
  print_info_field(out, "Query Socket", escape_for_display(r.query_socket));
  print_info_field(out, "Kernel", escape_for_display(r.kernel.release) + " (" +
                                      (r.kernel.socket_mode ? "\"@@\" supported: " : "no \"@@\": ") + r.kernel.why + ")");
  print_info_field(out, "Core Pattern",
                   r.core_pattern ? escape_for_display(*r.core_pattern) + (r.pattern_ours ? " (coredumpd)" : " (not coredumpd)")
                                  : "unreadable");
  std::string sock = escape_for_display(r.kernel_socket);
  if (r.socket.error) sock += " (cannot check: " + *r.socket.error + ")";
  else if (!r.socket.exists) sock += " (missing)";
  else if (!r.socket.is_socket) sock += " (not a socket)";
  else if (r.socket.listening) sock += *r.socket.listening ? " (listening)" : " (not listening)";
  print_info_field(out, "Kernel Socket", sock);
  print_info_field(out, "Store Usage", usage_text(r.store_usage));
  if (r.daemon && r.daemon->counters.is_object() && !r.daemon->counters.empty()) {
    std::string c;
    for (const auto& [k, v] : r.daemon->counters.items())
      c += (c.empty() ? "" : "\n") + escape_for_display(k) + " " + v.dump();
    print_info_field(out, "Counters", c);
  }
  for (const auto& p : r.problems)
    io.err << "dumpctl: " << (p.loses_dumps ? "warning: dumps will be lost: " : "warning: ") << p.text << '\n';
  return out ? rc : 1;
}

}  // namespace coredumpd::cli
