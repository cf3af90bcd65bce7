// What a session's crash gets: the policy chosen from the collected facts, and the checks before
// the ack that can turn a core into a metadata-only record or a REJECT (rate limit, store, load).
#include <spdlog/spdlog.h>

#include "daemon/dump/fallback_mover.h"
#include "daemon/dump/store_health.h"
#include "daemon/handshake/session.h"
#include "daemon/report/log_limiter.h"
#include "daemon/report/logging.h"
#include "store/record_extras.h"

namespace coredumpd {

void Session::decide() {
  record_.comm = facts_.comm;
  record_.exe = facts_.exe;
  record_.argv = facts_.argv;
  record_.cwd = facts_.cwd;
  record_.cgroup = facts_.cgroup;
  record_.hostname = facts_.hostname;
  if (!facts_.errors.empty()) record_.extra[extras::kCollectErrors] = facts_.errors;
  record_.extra[extras::kCollectTimingsUs] = facts_.timings_us;
  if (facts_.rlimit_core) record_.extra[extras::kRlimitCore] = *facts_.rlimit_core;

  record_.extra[extras::kProc] = facts_.proc;

  // Policy: the first matching rule, else the defaults; decided now, while the task is frozen.
  ContainerInputs inputs;
  inputs.cgroup = facts_.cgroup;
  inputs.namespaces = facts_.proc.value("namespaces", nlohmann::json::object());
  inputs.host_namespaces = ctx_.host_namespaces;
  inputs.status = facts_.status;
  inputs.uid_map = facts_.uid_map;
  inputs.gid_map = facts_.gid_map;
  inputs.hostname = facts_.hostname;
  const ContainerInfo container = identify_container(inputs);
  record_.extra[extras::kContainer] = to_json(container);
  const auto decision = select_policy(config_->defaults, config_->rules, record_, container);
  policy_ = decision.policy;
  rule_ = decision.rule;
  container_key_ = container_key(container);
  record_.extra[extras::kRule] = decision.rule;
  record_.rule = decision.rule;  // the index's columns; the extras stay for readers of the JSON
  record_.container_key = container_key_;
  if (policy_.capture_environ) {
    auto env = nlohmann::json::array();
    for (const auto& e : facts_.environ) env.push_back(bytes_to_json(e));
    record_.extra[extras::kEnviron] = std::move(env);
  }
  if (policy_.capture_thread_names && facts_.thread_names.is_object()) {
    record_.extra[extras::kThreadNames] = facts_.thread_names;
    if (!facts_.thread_names_incomplete.is_null()) record_.extra[extras::kThreadNamesIncomplete] = facts_.thread_names_incomplete;
  }
}

// The rule's rate limit, counted per (rule, container, executable): a crash beyond it gets a
// metadata-only record saying so and how many were suppressed, instead of a core.
void Session::apply_rate_limit(protocol::Wants& wants, std::string& why, const std::string& rule,
                               const std::string& container) {
  if (!policy_.rate_limit) return;
  const auto& limit = *policy_.rate_limit;
  const auto v = ctx_.rate_limiter.admit(rule, container, record_.exe, limit);
  if (v.admitted) return;
  ctx_.stats.count(Outcome::RateLimited);
  wants.mode = protocol::Mode::Userspace;
  wants.wait = false;
  why = "rate limit: over " + std::to_string(limit.burst) + " dumps in " + std::to_string(limit.interval.count()) +
        " s for rule \"" + rule + "\" in " + container + "; " + std::to_string(v.suppressed) +
        " suppressed since the last stored dump";
  record_.extra[extras::kRateLimited] = {{"rule", rule},
                                   {"container", container},
                                   {"burst", limit.burst},
                                   {"interval_s", limit.interval.count()},
                                   {"suppressed", v.suppressed},
                                   {"suppressed_total", v.suppressed_total}};
  if (log_limiter().allow("rate limit"))
    spdlog::warn("pid {} ({}): {}", record_.pid, escape_for_log(record_.exe), escape_for_log(why));
}

// A core the store cannot take, or one beyond capacity, must not make the kernel stream: decide
// before the ack. Checks are a couple of syscalls; a full store is the vacuum's business. Room for
// the dump in flight is the budget's (session_budget.cc).
//
// A store that cannot take it now sends the core to the fallback on /run (core_fallback.h) while
// that has room: in early boot the store's filesystem is often just not mounted yet.
void Session::refuse_core_if_unable(protocol::Wants& wants, std::string& why) {
  // A new dump is when a store that has appeared (mounted, created) is noticed at once: a few syscalls.
  reattach_store(ctx_);
  auto problem = store_problem(ctx_.store_dirfd);
  if (!problem) {
    if (ctx_.fallback && ctx_.fallback->used() > 0) request_store_check(ctx_);  // off this thread
    return;
  }
  std::optional<std::string> no_fallback =
      ctx_.fallback ? ctx_.fallback->problem() : std::optional<std::string>("no fallback directory");
  if (!no_fallback) {
    to_fallback_ = true;
    ctx_.stats.count(Outcome::KeptInFallback);
    record_.extra[extras::kFallback] = {{"dir", ctx_.fallback->dir()}, {"reason", *problem}, {"kept_us", record_.timestamp_us}};
    if (log_limiter().allow("core to fallback"))
      spdlog::warn("pid {} ({}) {}: {}: the core goes to the fallback {} until the store can take it", record_.pid,
                   escape_for_log(record_.exe), record_.signal ? signal_name(*record_.signal) : std::string("signal unknown"),
                   *problem, ctx_.fallback->dir());
    return;
  }
  ctx_.stats.count(Outcome::StoreUnavailable);
  wants.mode = protocol::Mode::Reject;
  why = *problem + "; " + *no_fallback;
  if (log_limiter().allow("store unavailable"))
    spdlog::error("pid {} ({}) {}: rejecting the core: {}; the record is kept", record_.pid, escape_for_log(record_.exe),
                  record_.signal ? signal_name(*record_.signal) : std::string("signal unknown"), why);
}

}  // namespace coredumpd
