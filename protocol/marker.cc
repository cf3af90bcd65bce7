#include "protocol/marker.h"

namespace coredumpd::protocol {

MarkerResult interpret_marker(std::uint32_t raw) {
  MarkerResult r;
  r.raw = raw;
  switch (static_cast<Marker>(raw)) {
    case Marker::REQACK:
      r.accepted = true;
      r.name = "REQACK";
      r.reason = "kernel accepted the ack";
      return r;
    case Marker::MINSIZE:
      r.name = "MINSIZE";
      r.reason = "kernel refused the ack: its size is below the minimum (or too small for a requested feature)";
      return r;
    case Marker::MAXSIZE:
      r.name = "MAXSIZE";
      r.reason = "kernel refused the ack: its size exceeds the request's size_ack";
      return r;
    case Marker::UNSUPPORTED:
      r.name = "UNSUPPORTED";
      r.reason = "kernel refused the ack: unknown mask bit, non-zero spare or unsupported memory types";
      return r;
    case Marker::CONFLICTING:
      r.name = "CONFLICTING";
      r.reason = "kernel refused the ack: conflicting mask bits (not exactly one mode, or a broken dependency)";
      return r;
  }
  r.name = "UNKNOWN";
  r.reason = "kernel sent unknown marker " + std::to_string(raw) + "; treated as a refusal";
  return r;
}

}  // namespace coredumpd::protocol
