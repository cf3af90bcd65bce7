// An endpoint-wide back-off (a circuit breaker) for one upload peer (S3, the fleet index), shared
// by the upload workers: while the peer is unavailable, the workers stop sending to it and one
// probe request at a time goes out after 1, 2, 4, ... s (at most upload.max_backoff_s, jittered),
// instead of every due row failing on its own back-off. The first answer closes it.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>

namespace coredumpd::upload {

/// What a request to a peer came to, for its breaker.
enum class PeerAnswer {
  None,         ///< no request reached the wire (local error, stop, credentials): says nothing
  Answered,     ///< the peer answered (success, or a per-object error such as 403/404)
  Unavailable,  ///< the peer itself is down: refused/reset/timed out, DNS, HTTP 5xx/429, a lost PostgreSQL connection
};

/// The breaker of one peer. Thread-safe. Closed: every request passes. Open: requests wait until
/// the back-off ends; then the first caller gets the one probe; its answer closes the breaker,
/// its failure opens it again for twice as long.
class PeerBackoff {
 public:
  using Clock = std::function<std::int64_t()>;  ///< monotonic time in µs
  using Jitter = std::function<double()>;       ///< a fraction in [0, 1)

  /// `clock` and `jitter` default to the steady clock (CLOCK_MONOTONIC) and a PRNG (tests inject their own).
  explicit PeerBackoff(Clock clock = {}, Jitter jitter = {});

  /// What admit() allows.
  enum class Admit {
    Pass,   ///< closed: send
    Probe,  ///< open and its back-off over: send, this is the one probe (report() it)
    Wait,   ///< open: do not send (not an attempt)
  };
  /// A change report() made, for the caller to log and count.
  struct Change {
    enum class Kind { None, Opened, Closed } kind = Kind::None;
    std::int64_t open_us = 0;  ///< Closed: how long it was open (µs)
    int probes = 0;            ///< Closed: the probes that failed while it was open
  };

  /// May a request go to the peer now? A Probe must be followed by exactly one report(…, true).
  Admit admit();
  /// Would admit() not answer Wait? Takes nothing (to choose which rows to claim).
  bool admits() const;
  /// µs until a probe may go (0 if one may now or it is closed; -1 while a probe is out).
  std::int64_t wait_us() const;
  /// True while open (requests wait or probe).
  bool open() const;

  /// The outcome of a request admitted with `probe` (Admit::Probe) or not. Unavailable opens a
  /// closed breaker (back-off 1 s) or, from the probe, doubles the back-off up to `max_backoff`;
  /// Answered closes it; None gives a probe back (another worker may probe at once).
  Change report(PeerAnswer answer, bool probe, std::chrono::seconds max_backoff);
  /// Closes it without a probe: the peer's settings changed (a reload with a corrected endpoint),
  /// so what it learned is about another peer. True if it was open. A probe out reports to it closed.
  bool reset();

 private:
  std::int64_t delay_us(int failures, std::chrono::seconds max_backoff);

  Clock clock_;
  Jitter jitter_;
  mutable std::mutex mu_;
  bool open_ = false;
  bool probe_out_ = false;
  int failures_ = 0;              ///< while open: 1 + the probes that failed
  std::int64_t opened_us_ = 0;    ///< clock_ when it opened
  std::int64_t next_probe_us_ = 0;
};

}  // namespace coredumpd::upload
