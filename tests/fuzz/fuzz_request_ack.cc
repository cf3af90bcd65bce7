// libFuzzer target: a coredump_req as the kernel (or anyone able to connect) sends it, the ack we
// negotiate for it, and the marker we interpret afterwards (docs/PROTOCOL.md §4.2–§4.6, §6.1).
//
// Input: [request: `size` bytes, its first 4 bytes being the size field][policy tail]
// The request takes as many bytes as its size field says (fewer if the input is shorter, like a
// short read); the bytes after it, if any, choose the policy (missing bytes are zero):
//   tail[0]     bits 0-1 mode (0 kernel, 1 userspace, 2 reject, 3 kernel), bit 2 wait,
//               bit 3 records, bit 4 sparse, bit 5 close_files, bit 6 memory_types wanted
//   tail[1]     COREDUMP_CLOSE_FILES bit: 0 = the default, else 1 << (7 + tail[1] % 56)
//   tail[2..9]  memory_types selection (u64 LE)
//   tail[10..13] the marker the "kernel" answers (u32 LE)
#include <bit>
#include <cstddef>
#include <cstdint>
#include <string>

#include "protocol/marker.h"
#include "protocol/negotiate.h"
#include "protocol/request.h"
#include "protocol/wire.h"
#include "tests/fuzz/fuzz_util.h"

namespace cp = coredumpd::protocol;
using coredumpd::fuzz::load_le_padded;

namespace {

void check_marker(std::uint32_t raw) {
  const cp::MarkerResult m = cp::interpret_marker(raw);
  FUZZ_CHECK(m.raw == raw);
  FUZZ_CHECK(m.accepted == (raw == 0));
  FUZZ_CHECK(!m.name.empty());
  FUZZ_CHECK(!m.reason.empty());
  FUZZ_CHECK((raw >= 5) == (m.name == "UNKNOWN"));
}

cp::FlagOutcome expected_outcome(std::uint64_t offered, std::uint64_t acked, std::uint64_t bit) {
  if (!(offered & bit)) return cp::FlagOutcome::NotOffered;
  return (acked & bit) ? cp::FlagOutcome::Granted : cp::FlagOutcome::DeclinedByPolicy;
}

std::uint64_t mode_bit(cp::Mode m) {
  switch (m) {
    case cp::Mode::Kernel: return cp::COREDUMP_KERNEL;
    case cp::Mode::Userspace: return cp::COREDUMP_USERSPACE;
    case cp::Mode::Reject: return cp::COREDUMP_REJECT;
  }
  __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto in = coredumpd::fuzz::as_bytes(data, size);
  if (in.size() < 4) return 0;

  // 1. The size field, peeked, decides how the request is read.
  const std::uint32_t size_field = cp::peek_size_field(in.first<4>());
  FUZZ_CHECK(size_field == load_le_padded<std::uint32_t>(in, 0));
  std::string error;
  const auto layout = cp::plan_request_read(size_field, error);
  if (!layout) {
    FUZZ_CHECK(!error.empty());
    FUZZ_CHECK(size_field < cp::COREDUMP_REQ_SIZE_VER0 || size_field >= cp::COREDUMP_REQ_SIZE_MAX);
    check_marker(load_le_padded<std::uint32_t>(in, 4));
    return 0;
  }
  FUZZ_CHECK(size_field >= cp::COREDUMP_REQ_SIZE_VER0 && size_field < cp::COREDUMP_REQ_SIZE_MAX);
  FUZZ_CHECK(layout->known == std::min<std::uint32_t>(size_field, sizeof(cp::coredump_req)));
  FUZZ_CHECK(layout->known + layout->discard == size_field);

  // 2. Decode the known prefix (a short input is a short prefix: missing fields must read as zero).
  const std::size_t prefix_len = std::min<std::size_t>(layout->known, in.size());
  const cp::coredump_req req = cp::decode_request(in.first(prefix_len));
  const auto prefix = in.first(prefix_len);
  FUZZ_CHECK(req.size == load_le_padded<std::uint32_t>(prefix, 0));
  FUZZ_CHECK(req.size_ack == load_le_padded<std::uint32_t>(prefix, 4));
  FUZZ_CHECK(req.mask == load_le_padded<std::uint64_t>(prefix, 8));
  FUZZ_CHECK(req.memory_types == load_le_padded<std::uint64_t>(prefix, 16));
  FUZZ_CHECK(req.memory_types_mask == load_le_padded<std::uint64_t>(prefix, 24));

  // 3. The policy from the bytes after the request.
  const auto tail = in.subspan(std::min<std::size_t>(size_field, in.size()));
  const auto flags = load_le_padded<std::uint8_t>(tail, 0);
  cp::Wants wants;
  switch (flags & 3) {
    case 1: wants.mode = cp::Mode::Userspace; break;
    case 2: wants.mode = cp::Mode::Reject; break;
    default: wants.mode = cp::Mode::Kernel; break;
  }
  wants.wait = flags & 0x04;
  wants.records = flags & 0x08;
  wants.sparse = flags & 0x10;
  wants.close_files = flags & 0x20;
  if (flags & 0x40) wants.memory_types = load_le_padded<std::uint64_t>(tail, 2);
  const auto bit_sel = load_le_padded<std::uint8_t>(tail, 1);
  // What Config accepts for close_files_bit: a single bit above the NEXT bits, at most 1 << 62.
  const std::uint64_t close_bit =
      bit_sel == 0 ? cp::COREDUMP_CLOSE_FILES_DEFAULT : std::uint64_t{1} << (7 + bit_sel % 56);

  // 4. Negotiate and check every invariant negotiate.h promises.
  error.clear();
  const auto n = cp::negotiate(req, wants, close_bit, error);
  if (!n) {
    FUZZ_CHECK(!error.empty());
    FUZZ_CHECK(req.size_ack < cp::COREDUMP_ACK_SIZE_VER0 || (req.mask & cp::COREDUMP_MODE_MASK) == 0);
  } else {
    const cp::coredump_ack& ack = n->ack;
    FUZZ_CHECK(req.size_ack >= cp::COREDUMP_ACK_SIZE_VER0 && (req.mask & cp::COREDUMP_MODE_MASK) != 0);
    FUZZ_CHECK((ack.mask & ~req.mask) == 0);                                   // subset of the offer
    FUZZ_CHECK(std::popcount(ack.mask & cp::COREDUMP_MODE_MASK) == 1);         // exactly one mode
    FUZZ_CHECK(ack.size >= cp::COREDUMP_ACK_SIZE_VER0 && ack.size <= req.size_ack);
    FUZZ_CHECK(ack.size <= sizeof(cp::coredump_ack));
    FUZZ_CHECK(ack.spare == 0);
    FUZZ_CHECK(mode_bit(n->mode) == (ack.mask & cp::COREDUMP_MODE_MASK));
    if (req.mask & mode_bit(wants.mode)) FUZZ_CHECK(n->mode == wants.mode);  // wanted and offered: used
    FUZZ_CHECK(n->offered == req.mask);
    // Dependencies (negotiate.h): SPARSE => RECORDS => KERNEL, MEMORY_TYPES => KERNEL && size >= 24,
    // CLOSE_FILES => not REJECT, no WAIT with REJECT.
    if (ack.mask & cp::COREDUMP_SPARSE) FUZZ_CHECK(ack.mask & cp::COREDUMP_RECORDS);
    if (ack.mask & cp::COREDUMP_RECORDS) FUZZ_CHECK(ack.mask & cp::COREDUMP_KERNEL);
    if (ack.mask & cp::COREDUMP_MEMORY_TYPES) {
      FUZZ_CHECK((ack.mask & cp::COREDUMP_KERNEL) && ack.size >= cp::COREDUMP_ACK_MEMORY_TYPES_END);
      FUZZ_CHECK((ack.memory_types & ~req.memory_types_mask) == 0);
    } else {
      FUZZ_CHECK(ack.memory_types == 0);
    }
    if (ack.mask & close_bit) FUZZ_CHECK(!(ack.mask & cp::COREDUMP_REJECT));
    if (ack.mask & cp::COREDUMP_REJECT) FUZZ_CHECK(!(ack.mask & cp::COREDUMP_WAIT));
    // The recorded outcomes say what the ack carries.
    FUZZ_CHECK(n->wait == expected_outcome(req.mask, ack.mask, cp::COREDUMP_WAIT));
    FUZZ_CHECK(n->records == expected_outcome(req.mask, ack.mask, cp::COREDUMP_RECORDS));
    FUZZ_CHECK(n->sparse == expected_outcome(req.mask, ack.mask, cp::COREDUMP_SPARSE));
    FUZZ_CHECK(n->close_files == expected_outcome(req.mask, ack.mask, close_bit));
    FUZZ_CHECK(n->memory_types == expected_outcome(req.mask, ack.mask, cp::COREDUMP_MEMORY_TYPES));
    // The bytes on the wire, and what the kernel would answer for them.
    const auto wire = cp::ack_bytes(ack);
    FUZZ_CHECK(wire.size() == ack.size);
    FUZZ_CHECK(!cp::kernel_size_verdict(req, load_le_padded<std::uint32_t>(wire, 0)).has_value());
    FUZZ_CHECK(cp::kernel_ack_verdict(req, wire, close_bit) == cp::Marker::REQACK);
    FUZZ_CHECK(!cp::mode_name(n->mode).empty());
    FUZZ_CHECK(!cp::flag_outcome_name(n->records).empty());
  }

  // 5. Whatever marker comes back must be interpreted without surprises.
  check_marker(load_le_padded<std::uint32_t>(tail, 10));
  return 0;
}
