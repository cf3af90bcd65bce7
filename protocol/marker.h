// Turning the kernel's 4-byte marker into a typed result (docs/PROTOCOL.md §4.6).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "protocol/wire.h"

namespace coredumpd::protocol {

/// The meaning of a marker the kernel sent after our ack.
struct MarkerResult {
  std::uint32_t raw = 0;   ///< the value as received
  bool accepted = false;   ///< true only for COREDUMP_MARK_REQACK (0)
  std::string_view name;   ///< "REQACK", "MINSIZE", ..., or "UNKNOWN" for values >= 5
  std::string reason;      ///< one human-readable sentence: what the kernel refused and why
};

/// Interprets a marker value. Values >= 5 are unknown and treated as a refusal (docs/PROTOCOL.md §4.6).
/// After any refusal the kernel produces no dump and the task dies without WCOREDUMP.
MarkerResult interpret_marker(std::uint32_t raw);

}  // namespace coredumpd::protocol
