// Building a coredump_ack from what the kernel offered and what policy wants
// (docs/PROTOCOL.md §4.3–§4.5, §6.1).
//
// Invariants of every ack built here (the kernel's own validation, docs/PROTOCOL.md §4.5, would
// refuse otherwise):
//  - only bits the kernel offered in req.mask are set;
//  - exactly one of KERNEL/USERSPACE/REJECT;
//  - 16 <= size <= req.size_ack, spare == 0, memory_types == 0 unless MEMORY_TYPES is acked;
//  - dependencies hold: SPARSE => RECORDS => KERNEL, MEMORY_TYPES => KERNEL && size >= 24,
//    CLOSE_FILES => not REJECT.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "protocol/wire.h"

namespace coredumpd::protocol {

/// Which of the three mutually exclusive modes an ack carries.
enum class Mode { Kernel, Userspace, Reject };

/// Name of a mode as shown to users ("kernel", "userspace", "reject").
std::string_view mode_name(Mode mode);

/// What policy wants for one crash. Each optional feature is requested only if also offered.
struct Wants {
  Mode mode = Mode::Kernel;
  bool wait = true;          ///< park the task after the dump (needs KERNEL or USERSPACE)
  bool records = false;      ///< COREDUMP_RECORDS
  bool sparse = false;       ///< COREDUMP_SPARSE (implies records)
  bool close_files = false;  ///< COREDUMP_CLOSE_FILES
  std::optional<std::uint64_t> memory_types;  ///< COREDUMP_MEMORY_TYPES selection, if any
};

/// What happened to one optional flag in the negotiation.
enum class FlagOutcome {
  NotOffered,        ///< the kernel did not offer it: never sent
  DeclinedByPolicy,  ///< offered, but policy (or a dependency) did not want it
  Granted,           ///< offered and set in the ack (the kernel answered REQACK)
};

/// Name of a flag outcome as shown by dumpctl ("granted", "not offered", "declined by policy").
std::string_view flag_outcome_name(FlagOutcome outcome);

/// The result of negotiating one crash: the ack to send and a record of the decisions.
struct Negotiation {
  coredump_ack ack{};           ///< zeroed beyond ack.size; send exactly ack.size bytes of it
  Mode mode = Mode::Reject;     ///< the mode actually acked (may differ from Wants when not offered)
  std::uint64_t offered = 0;    ///< req.mask
  std::uint64_t unknown = 0;    ///< offered bits this build does not know (ignored, logged once)
  FlagOutcome wait = FlagOutcome::NotOffered;
  FlagOutcome records = FlagOutcome::NotOffered;
  FlagOutcome sparse = FlagOutcome::NotOffered;
  FlagOutcome close_files = FlagOutcome::NotOffered;
  FlagOutcome memory_types = FlagOutcome::NotOffered;
  std::string note;             ///< why a wanted mode or flag was not used, empty otherwise
};

/// Builds the ack for `req` under `wants`. `close_files_bit` is the value of COREDUMP_CLOSE_FILES on
/// this host (COREDUMP_CLOSE_FILES_DEFAULT unless configured). Returns std::nullopt and sets `error`
/// only if the kernel offered none of KERNEL/USERSPACE/REJECT, or size_ack < 16: no valid ack exists.
std::optional<Negotiation> negotiate(const coredump_req& req, const Wants& wants,
                                     std::uint64_t close_files_bit, std::string& error);

/// The exact bytes to send for `ack`: the first ack.size bytes of the struct (ack.size <= 24).
std::span<const std::byte> ack_bytes(const coredump_ack& ack);

/// The kernel's first check on an ack, made on the peeked 4-byte size field alone (docs/PROTOCOL.md §4.5 step 2):
/// MINSIZE if size < 16, MAXSIZE if size > req.size_ack, std::nullopt if the size is acceptable.
std::optional<Marker> kernel_size_verdict(const coredump_req& req, std::uint32_t size_field);

/// The marker the kernel answers for a complete ack of `ack_wire.size()` == its size field bytes that
/// passed kernel_size_verdict(): steps 4–7 of docs/PROTOCOL.md §4.5 in 6.17/6.18 order, then the RFC additions
/// for the bits the kernel offered. `close_files_bit` as for negotiate(). Used by the fake kernel and
/// by the daemon as a self-check before sending.
Marker kernel_ack_verdict(const coredump_req& req, std::span<const std::byte> ack_wire,
                          std::uint64_t close_files_bit);

}  // namespace coredumpd::protocol
