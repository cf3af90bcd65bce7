#include "daemon/proc/partial_facts.h"

namespace coredumpd {

namespace {

template <class T>
void take_if_set(T& into, T& from) {
  if (!from.empty()) into = std::move(from);
}

template <class T>
void take_if_set(std::optional<T>& into, std::optional<T>& from) {
  if (from) into = std::move(from);
}

void merge_object(nlohmann::json& into, nlohmann::json& from) {
  if (!from.is_object() || from.empty()) return;
  if (!into.is_object()) into = nlohmann::json::object();
  for (auto& [key, value] : from.items()) into[key] = std::move(value);
}

}  // namespace

void merge_facts(HandshakeFacts& into, HandshakeFacts&& d) {
  take_if_set(into.comm, d.comm);
  take_if_set(into.exe, d.exe);
  take_if_set(into.argv, d.argv);
  take_if_set(into.cwd, d.cwd);
  take_if_set(into.cgroup, d.cgroup);
  take_if_set(into.hostname, d.hostname);
  take_if_set(into.threads, d.threads);
  take_if_set(into.rlimit_core, d.rlimit_core);
  take_if_set(into.estimated_core_bytes, d.estimated_core_bytes);
  take_if_set(into.environ, d.environ);
  take_if_set(into.status, d.status);
  take_if_set(into.uid_map, d.uid_map);
  take_if_set(into.gid_map, d.gid_map);
  if (!d.thread_names.is_null()) into.thread_names = std::move(d.thread_names);
  if (!d.thread_names_incomplete.is_null()) into.thread_names_incomplete = std::move(d.thread_names_incomplete);
  merge_object(into.proc, d.proc);
  merge_object(into.errors, d.errors);
  merge_object(into.timings_us, d.timings_us);
}

void PartialFacts::publish(const std::string& name, HandshakeFacts&& delta) {
  std::lock_guard lock(mu_);
  merge_facts(facts_, std::move(delta));
  done_.insert(name);
}

void PartialFacts::note_error(const std::string& name, std::string why) {
  std::lock_guard lock(mu_);
  facts_.errors[name] = std::move(why);
}

void PartialFacts::finish(bool verified) {
  std::lock_guard lock(mu_);
  facts_.verified = verified;
  if (!verified) facts_.errors["verify"] = "process behind the pidfd is gone; metadata may be incomplete";
  finished_ = true;
}

bool PartialFacts::finished() const {
  std::lock_guard lock(mu_);
  return finished_;
}

void PartialFacts::fill_missed(HandshakeFacts& f, const std::string& why) const {
  f.missed.clear();
  for (const char* name : handshake_collector_names()) {
    if (done_.contains(name)) continue;
    f.missed.emplace_back(name);
    if (!f.errors.contains(name)) f.errors[name] = why;
  }
}

HandshakeFacts PartialFacts::snapshot(const std::string& why) const {
  std::lock_guard lock(mu_);
  HandshakeFacts f = facts_;
  fill_missed(f, why);
  return f;
}

HandshakeFacts PartialFacts::take(const std::string& why) {
  std::lock_guard lock(mu_);
  HandshakeFacts f = std::move(facts_);
  facts_ = HandshakeFacts();
  fill_missed(f, why);
  return f;
}

}  // namespace coredumpd
