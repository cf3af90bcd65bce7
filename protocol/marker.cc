#include "protocol/marker.h"

#include <array>

namespace coredumpd::protocol {

namespace {

/// What each known marker means, indexed by its value (enum coredump_mark is dense from 0).
struct KnownMarker {
  std::string_view name;
  std::string_view reason;
};
constexpr std::array<KnownMarker, 5> kKnownMarkers{{
    {"REQACK", "kernel accepted the ack"},
    {"MINSIZE", "kernel refused the ack: its size is below the minimum (or too small for a requested feature)"},
    {"MAXSIZE", "kernel refused the ack: its size exceeds the request's size_ack"},
    {"UNSUPPORTED", "kernel refused the ack: unknown mask bit, non-zero spare or unsupported memory types"},
    {"CONFLICTING",
     "kernel refused the ack: conflicting mask bits (not exactly one mode, or a broken dependency)"},
}};
static_assert(static_cast<std::size_t>(Marker::CONFLICTING) + 1 == kKnownMarkers.size());

}  // namespace

MarkerResult interpret_marker(std::uint32_t raw) {
  MarkerResult r;
  r.raw = raw;
  if (raw < kKnownMarkers.size()) {
    r.accepted = static_cast<Marker>(raw) == Marker::REQACK;
    r.name = kKnownMarkers[raw].name;
    r.reason = kKnownMarkers[raw].reason;
    return r;
  }
  r.name = "UNKNOWN";
  r.reason = "kernel sent unknown marker " + std::to_string(raw) + "; treated as a refusal";
  return r;
}

}  // namespace coredumpd::protocol
