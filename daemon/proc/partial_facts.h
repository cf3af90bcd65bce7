// The facts of one handshake as the collectors publish them, shared between the collector thread
// and the session (issue 20.2): a /proc read that stalls past the handshake deadline must not take
// with it what the collectors before it had already found.
#pragma once

#include <mutex>
#include <set>
#include <string>
#include <utility>

#include "daemon/proc/collect.h"

namespace coredumpd {

/// Moves every field `delta` set into `into`: strings, lists and optionals that are non-empty
/// replace `into`'s, the JSON objects (proc, errors, timings_us) are merged key by key. `verified`
/// and `missed` are left alone (PartialFacts owns them).
void merge_facts(HandshakeFacts& into, HandshakeFacts&& delta);

/// One handshake's facts, filled collector by collector. Thread-safe: the collector thread calls
/// publish() and finish(); the session calls snapshot() at its deadline, or take() once finished.
class PartialFacts {
 public:
  /// Merges what collector `name` found and marks it finished.
  void publish(const std::string& name, HandshakeFacts&& delta);
  /// Records why collector `name` did not run (it stays missed): errors[name] = `why`.
  void note_error(const std::string& name, std::string why);
  /// The collection is over; `verified` as HandshakeFacts::verified.
  void finish(bool verified);
  /// True once finish() was called.
  bool finished() const;
  /// A copy of what was published so far, with `missed` listing every collector of
  /// handshake_collector_names() not yet finished; each of those without an error of its own gets
  /// errors[name] = `why`. Cheap enough for once per handshake: the copy is taken under the lock.
  HandshakeFacts snapshot(const std::string& why) const;
  /// Moves the facts out (for the end of the collection; later calls see empty facts), `missed`
  /// filled as by snapshot().
  HandshakeFacts take(const std::string& why);
  /// Calls fn(const HandshakeFacts&) on what was published so far, under the lock: for a collector
  /// that depends on an earlier one (locks reads the fds).
  template <class Fn>
  auto read(Fn&& fn) const {
    std::lock_guard lock(mu_);
    return std::forward<Fn>(fn)(facts_);
  }

 private:
  void fill_missed(HandshakeFacts& f, const std::string& why) const;

  mutable std::mutex mu_;
  HandshakeFacts facts_;
  std::set<std::string> done_;
  bool finished_ = false;
};

}  // namespace coredumpd
