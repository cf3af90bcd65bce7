#include "daemon/handshake/daemon_status.h"

#include <fcntl.h>
#include <unistd.h>

#include "daemon/policy/config.h"
#include "daemon/report/outcome.h"
#include "store/core_accounting.h"
#include "store/retention_limits.h"
#include "util/unique_fd.h"

#ifndef COREDUMPD_VERSION
#error "COREDUMPD_VERSION (CMake PROJECT_VERSION) must be defined"
#endif

namespace coredumpd {

namespace {

using nlohmann::json;

template <typename T>
json optional_json(const std::optional<T>& v) {
  return v ? json(*v) : json(nullptr);
}

json limits_json(const Config& c) {
  const RetentionLimits r = effective_retention(c);
  std::optional<std::uint64_t> fs_total;
  if (UniqueFd dir(::open(c.store_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)); dir) {
    if (auto space = fs_space(dir.get())) fs_total = space->total_bytes;
  }
  const SpaceLimits space = resolve_space_limits(r, fs_total);
  json j = {{"max_use_bytes", optional_json(space.max_use_bytes)},
            {"keep_free_bytes", optional_json(space.keep_free_bytes)},
            {"max_use_per_uid_bytes", optional_json(r.max_use_per_uid_bytes)},
            {"max_age_s", r.max_age ? json(r.max_age->count()) : json(nullptr)},
            {"max_core_age_s", r.max_core_age ? json(r.max_core_age->count()) : json(nullptr)}};
  if (!r.max_use_per_rule_bytes.empty()) j["max_use_per_rule_bytes"] = r.max_use_per_rule_bytes;
  return j;
}

}  // namespace

QueryStatus daemon_status(Server& server, const std::string& query_socket, std::int64_t started_us) {
  const auto config = server.config();
  QueryStatus s;
  s.version = COREDUMPD_VERSION;
  s.pid = ::getpid();
  s.started_us = started_us;
  s.activation = server.socket_activated() ? "socket" : "direct";
  s.kernel_socket = config->socket_path;
  s.query_socket = query_socket;
  s.store = config->store_dir;
  s.analysis_enabled = config->analysis.enabled;
  s.journal_enabled = false;  // no journal entries yet (issue 23 part 1 sets this)
  for (const auto& o : kOutcomes) s.counters[std::string(o.name)] = server.stats().get(o.outcome);
  s.store_usage["limits"] = limits_json(*config);
  return s;
}

}  // namespace coredumpd
