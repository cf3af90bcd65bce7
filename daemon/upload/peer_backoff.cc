#include "daemon/upload/peer_backoff.h"

#include <algorithm>
#include <random>

namespace coredumpd::upload {

namespace {

std::int64_t monotonic_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

PeerBackoff::PeerBackoff(Clock clock, Jitter jitter) : clock_(std::move(clock)), jitter_(std::move(jitter)) {
  if (!clock_) clock_ = monotonic_us;
  if (!jitter_) {
    // Called with mu_ held: the generator needs no lock of its own.
    jitter_ = [gen = std::minstd_rand(std::random_device{}())]() mutable {
      return std::uniform_real_distribution<double>(0.0, 1.0)(gen);
    };
  }
}

std::int64_t PeerBackoff::delay_us(int failures, std::chrono::seconds max_backoff) {
  const std::int64_t max_s = std::max<std::int64_t>(max_backoff.count(), 1);
  const std::int64_t s = failures >= 20 ? max_s : std::min<std::int64_t>(std::int64_t{1} << (failures - 1), max_s);
  // Half fixed, half random: the hosts of a fleet that lost the same endpoint do not all probe it
  // in the same second when it returns.
  const double j = std::clamp(jitter_(), 0.0, 1.0);
  return static_cast<std::int64_t>(static_cast<double>(s * 1'000'000) * (0.5 + 0.5 * j));
}

PeerBackoff::Admit PeerBackoff::admit() {
  std::lock_guard lock(mu_);
  if (!open_) return Admit::Pass;
  if (probe_out_ || clock_() < next_probe_us_) return Admit::Wait;
  probe_out_ = true;
  return Admit::Probe;
}

bool PeerBackoff::admits() const {
  std::lock_guard lock(mu_);
  return !open_ || (!probe_out_ && clock_() >= next_probe_us_);
}

std::int64_t PeerBackoff::wait_us() const {
  std::lock_guard lock(mu_);
  if (!open_) return 0;
  if (probe_out_) return -1;
  return std::max<std::int64_t>(next_probe_us_ - clock_(), 0);
}

bool PeerBackoff::open() const {
  std::lock_guard lock(mu_);
  return open_;
}

PeerBackoff::Change PeerBackoff::report(PeerAnswer answer, bool probe, std::chrono::seconds max_backoff) {
  std::lock_guard lock(mu_);
  Change change;
  if (probe) probe_out_ = false;
  switch (answer) {
    case PeerAnswer::None:
      break;  // a probe given back: its time is still due, the next admit() probes
    case PeerAnswer::Answered:
      // Any answer, the probe's or a request's sent before it opened, proves the peer is back.
      if (open_) {
        change.kind = Change::Kind::Closed;
        change.open_us = clock_() - opened_us_;
        change.probes = failures_ - 1;
        open_ = false;
        failures_ = 0;
      }
      break;
    case PeerAnswer::Unavailable:
      if (!open_) {
        open_ = true;
        failures_ = 1;
        opened_us_ = clock_();
        next_probe_us_ = opened_us_ + delay_us(failures_, max_backoff);
        change.kind = Change::Kind::Opened;
      } else if (probe) {
        ++failures_;
        next_probe_us_ = clock_() + delay_us(failures_, max_backoff);
      }
      // else: a request sent before it opened failed late; it is open already.
      break;
  }
  return change;
}

bool PeerBackoff::reset() {
  std::lock_guard lock(mu_);
  const bool was = open_;
  open_ = false;
  failures_ = 0;
  return was;
}

}  // namespace coredumpd::upload
