#include "protocol/negotiate.h"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cstring>

namespace coredumpd::protocol {

namespace {

/// The name at `value`'s position in `names` (the enums are dense from 0), "?" outside them.
template <typename Enum, std::size_t N>
std::string_view name_of(Enum value, const std::array<std::string_view, N>& names) {
  const auto i = static_cast<std::size_t>(value);
  return i < N ? names[i] : "?";
}

std::string hex(std::uint64_t v) {
  char buf[19] = "0x";
  auto [end, ec] = std::to_chars(buf + 2, buf + sizeof(buf), v, 16);
  (void)ec;
  return std::string(buf, end);
}

std::uint64_t mode_bit(Mode mode) {
  switch (mode) {
    case Mode::Kernel: return COREDUMP_KERNEL;
    case Mode::Userspace: return COREDUMP_USERSPACE;
    case Mode::Reject: return COREDUMP_REJECT;
  }
  return 0;
}

// Sets `bit` in the ack if it was offered and `want` holds; records the outcome.
FlagOutcome decide(std::uint64_t offered, std::uint64_t bit, bool want, std::uint64_t& ack_mask) {
  if (!(offered & bit)) return FlagOutcome::NotOffered;
  if (!want) return FlagOutcome::DeclinedByPolicy;
  ack_mask |= bit;
  return FlagOutcome::Granted;
}

}  // namespace

std::string_view mode_name(Mode mode) {
  static constexpr std::array<std::string_view, 3> kNames{"kernel", "userspace", "reject"};
  static_assert(static_cast<std::size_t>(Mode::Reject) + 1 == kNames.size());
  return name_of(mode, kNames);
}

std::string_view flag_outcome_name(FlagOutcome outcome) {
  static constexpr std::array<std::string_view, 3> kNames{"not offered", "declined by policy", "granted"};
  static_assert(static_cast<std::size_t>(FlagOutcome::Granted) + 1 == kNames.size());
  return name_of(outcome, kNames);
}

std::optional<Negotiation> negotiate(const coredump_req& req, const Wants& wants,
                                     std::uint64_t close_files_bit, std::string& error) {
  if (req.size_ack < COREDUMP_ACK_SIZE_VER0) {
    error = "kernel accepts acks of at most " + std::to_string(req.size_ack) + " bytes (< 16)";
    return std::nullopt;
  }
  Negotiation n;
  n.offered = req.mask;
  const std::uint64_t known = COREDUMP_KERNEL | COREDUMP_USERSPACE | COREDUMP_REJECT | COREDUMP_WAIT |
                              COREDUMP_RECORDS | COREDUMP_SPARSE | COREDUMP_MEMORY_TYPES | close_files_bit;
  n.unknown = req.mask & ~known;

  // The mode: what policy wants if offered, else the least invasive mode the kernel offers.
  n.mode = wants.mode;
  if (!(req.mask & mode_bit(n.mode))) {
    const Mode fallbacks[] = {Mode::Reject, Mode::Userspace, Mode::Kernel};
    const auto* it = std::find_if(std::begin(fallbacks), std::end(fallbacks),
                                  [&](Mode m) { return (req.mask & mode_bit(m)) != 0; });
    if (it == std::end(fallbacks)) {
      error = "kernel offered none of KERNEL/USERSPACE/REJECT (mask " + hex(req.mask) + ")";
      return std::nullopt;
    }
    n.note = std::string("mode ") + std::string(mode_name(wants.mode)) + " not offered, using " +
             std::string(mode_name(*it));
    n.mode = *it;
  }

  auto& ack = n.ack;
  ack.size = std::min<std::uint32_t>(sizeof(coredump_ack), req.size_ack);
  ack.mask = mode_bit(n.mode);
  const bool kernel = n.mode == Mode::Kernel;
  const bool reject = n.mode == Mode::Reject;

  // WAIT is meaningless with REJECT (the kernel ignores it); never send it there.
  n.wait = decide(req.mask, COREDUMP_WAIT, wants.wait && !reject, ack.mask);
  // SPARSE => RECORDS => KERNEL.
  n.records = decide(req.mask, COREDUMP_RECORDS, kernel && (wants.records || wants.sparse), ack.mask);
  n.sparse = decide(req.mask, COREDUMP_SPARSE,
                    wants.sparse && n.records == FlagOutcome::Granted, ack.mask);
  // CLOSE_FILES => not REJECT.
  n.close_files = decide(req.mask, close_files_bit, wants.close_files && !reject, ack.mask);
  // MEMORY_TYPES => KERNEL, and the whole memory_types field must fit in the ack.
  const bool types_fit = ack.size >= COREDUMP_ACK_MEMORY_TYPES_END;
  n.memory_types = decide(req.mask, COREDUMP_MEMORY_TYPES,
                          kernel && wants.memory_types.has_value() && types_fit, ack.mask);
  if (n.memory_types == FlagOutcome::Granted) ack.memory_types = *wants.memory_types & req.memory_types_mask;
  if (wants.memory_types && n.memory_types == FlagOutcome::DeclinedByPolicy && !types_fit)
    n.note = "memory types offered but the kernel's ack size " + std::to_string(req.size_ack) +
             " has no room for them";
  return n;
}

std::span<const std::byte> ack_bytes(const coredump_ack& ack) {
  return {reinterpret_cast<const std::byte*>(&ack), std::min<std::size_t>(ack.size, sizeof(ack))};
}

std::optional<Marker> kernel_size_verdict(const coredump_req& req, std::uint32_t size_field) {
  if (size_field < COREDUMP_ACK_SIZE_VER0) return Marker::MINSIZE;
  if (size_field > req.size_ack) return Marker::MAXSIZE;
  return std::nullopt;
}

Marker kernel_ack_verdict(const coredump_req& req, std::span<const std::byte> ack_wire,
                          std::uint64_t close_files_bit) {
  coredump_ack ack{};
  std::memcpy(&ack, ack_wire.data(), std::min(ack_wire.size(), sizeof(ack)));
  const std::size_t size = ack_wire.size();

  if (ack.mask & ~req.mask) return Marker::UNSUPPORTED;                      // rule 4
  if (std::popcount(ack.mask & COREDUMP_MODE_MASK) != 1) return Marker::CONFLICTING;  // rule 5
  if (ack.spare != 0) return Marker::UNSUPPORTED;                            // rule 6

  // RFC additions (docs/PROTOCOL.md §4.5, after the steps); order between them is not specified by the kernel.
  const bool kernel = ack.mask & COREDUMP_KERNEL;
  if ((ack.mask & COREDUMP_RECORDS) && !kernel) return Marker::CONFLICTING;
  if ((ack.mask & COREDUMP_SPARSE) && !(ack.mask & COREDUMP_RECORDS)) return Marker::CONFLICTING;
  if ((ack.mask & COREDUMP_MEMORY_TYPES) && !kernel) return Marker::CONFLICTING;
  if ((ack.mask & close_files_bit) && (ack.mask & COREDUMP_REJECT)) return Marker::CONFLICTING;
  if (ack.mask & COREDUMP_MEMORY_TYPES) {
    if (size < COREDUMP_ACK_MEMORY_TYPES_END) return Marker::MINSIZE;
    if (ack.memory_types & ~req.memory_types_mask) return Marker::UNSUPPORTED;
  } else if (ack.memory_types != 0) {  // also a partial field (ack size 17..23)
    return Marker::UNSUPPORTED;
  }
  return Marker::REQACK;                                                      // rule 7
}

}  // namespace coredumpd::protocol
