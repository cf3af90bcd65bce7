// The fake kernel's own statement of how Linux answers a coredump_ack: one table of rules, each
// citing where it comes from, written from the kernel source and selftests, NOT from the daemon's
// protocol/negotiate.cc. The daemon checks its acks with protocol::kernel_ack_verdict(); if the fake
// kernel used the same function, a bug in it would pass on both sides (issue 21, item 4).
// kernel_rules_test.cc sweeps both over every flag combination and says where they part, and
// tests/e2e/ack_oracle_e2e_test.cc holds this table against the running kernel.
//
// Nothing here includes protocol/: the UAPI values are redeclared below from
// include/uapi/linux/coredump.h, and the ack is decoded from its raw bytes.
//
// Sources (cited per rule as [K], [S], [N], [R]):
//  [K] fs/coredump.c, coredump_sock_request(), Linux 6.17 and 6.18 (identical there).
//  [S] tools/testing/selftests/coredump/coredump_socket_protocol_test.c, 6.17/6.18 tests.
//  [N] the same selftests in linux-next fs-next (series "coredump: select memory types per request"
//      and "coredump: allow to create sparse coredumps on the coredump socket"): the refusals of
//      RECORDS, SPARSE and MEMORY_TYPES, whose kernel side is not released.
//  [R] RFC v2 "coredump, files: exit files on request" (lore 20260902-work-coredump-unlock-self-v2)
//      and its close-files selftests; docs/PROTOCOL.md §6.4.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace coredumpd::fake_kernel::kernel_rules {

// ---- include/uapi/linux/coredump.h, redeclared (6.17 unless marked) ----
inline constexpr std::uint64_t KERNEL = 1ULL << 0;
inline constexpr std::uint64_t USERSPACE = 1ULL << 1;
inline constexpr std::uint64_t REJECT = 1ULL << 2;
inline constexpr std::uint64_t WAIT = 1ULL << 3;
inline constexpr std::uint64_t RECORDS = 1ULL << 4;       ///< [N]
inline constexpr std::uint64_t SPARSE = 1ULL << 5;        ///< [N]
inline constexpr std::uint64_t MEMORY_TYPES = 1ULL << 6;  ///< [N]
inline constexpr std::uint32_t REQ_SIZE_VER0 = 16;
inline constexpr std::uint32_t REQ_SIZE_VER1 = 32;  ///< [N]
inline constexpr std::uint32_t ACK_SIZE_VER0 = 16;
inline constexpr std::uint32_t ACK_SIZE_VER1 = 24;  ///< [N]: + u64 memory_types at offset 16
/// Byte offsets of struct coredump_ack's fields.
inline constexpr std::size_t ACK_OFF_SPARE = 4, ACK_OFF_MASK = 8, ACK_OFF_MEMORY_TYPES = 16;

/// enum coredump_mark: the u32 the kernel writes after reading the ack.
enum class Mark : std::uint32_t { REQACK = 0, MINSIZE = 1, MAXSIZE = 2, UNSUPPORTED = 3, CONFLICTING = 4 };

/// "REQACK", "MINSIZE", ...
std::string_view mark_name(Mark mark);

/// What the simulated kernel put in its coredump_req, as far as the ack rules use it.
struct Offer {
  std::uint32_t size_ack = ACK_SIZE_VER0;  ///< = sizeof(struct coredump_ack) of that kernel
  std::uint64_t mask = KERNEL | USERSPACE | REJECT | WAIT;
  std::uint64_t memory_types_mask = 0;  ///< [N] every type the kernel knows (VER1 requests)
  /// [R] value of COREDUMP_CLOSE_FILES on this kernel (not settled); 0: the kernel has no such flag.
  std::uint64_t close_files_bit = 0;
};

/// The coredump_req a Linux 6.17/6.18 kernel sends, from [K]: `struct coredump_req req = { .size =
/// sizeof(req), .mask = KERNEL|USERSPACE|REJECT|WAIT, .size_ack = sizeof(struct coredump_ack) }`,
/// both structs VER0 there. Fields: size 16, size_ack 16, mask 0xF.
struct Request {
  std::uint32_t size = 0;
  std::uint32_t size_ack = 0;
  std::uint64_t mask = 0;
};
inline constexpr Request REQUEST_6_18{REQ_SIZE_VER0, ACK_SIZE_VER0, KERNEL | USERSPACE | REJECT | WAIT};

/// When the kernel applies a rule: on the peeked 4-byte size field (the ack stays unread), or on
/// the whole ack once exactly `size` bytes were read.
enum class Stage { SizeField, WholeAck };

/// One check of the kernel's. Rules with a `step` run in that order and the first that fails
/// answers; rules without one ([N], [R]) have no published order among themselves or against the
/// stepped WholeAck rules, so any of their markers may be the kernel's answer.
struct Rule {
  std::string_view id;         ///< short name, e.g. "flag-not-offered"
  Stage stage;
  std::optional<int> step;     ///< position in [K]'s fixed order, std::nullopt if unordered
  Mark mark;                   ///< what the kernel answers when the rule fails
  std::string_view source;     ///< where the rule is written, per the legend above
};

/// The whole table, in [K]'s order first, then the extension rules.
std::span<const Rule> rules();

/// The answer to one ack.
struct Verdict {
  Mark mark = Mark::REQACK;           ///< what the fake kernel sends: the first failing rule in table order
  const Rule* rule = nullptr;         ///< that rule; nullptr for REQACK
  std::vector<Mark> acceptable;       ///< every marker a kernel following the table may send (mark first)
  std::vector<const Rule*> failing;   ///< every rule the ack breaks, in table order
  /// True if `m` is one of `acceptable`.
  bool allows(Mark m) const;
};

/// The size-field rules alone ([K]: decided on the peeked field, before the ack is read):
/// MINSIZE if size_field < 16, MAXSIZE if size_field > offer.size_ack; std::nullopt if the kernel
/// goes on to read `size_field` bytes.
std::optional<Verdict> size_verdict(const Offer& offer, std::uint32_t size_field);

/// The verdict on a complete ack: `ack_wire` is exactly the bytes read (its first 4 bytes are the
/// size field, and its length equals it). Applies the size rules again, then the WholeAck rules.
/// Fields beyond ack_wire.size() count as zero, as in the kernel's zeroed struct.
Verdict ack_verdict(const Offer& offer, std::span<const std::byte> ack_wire);

}  // namespace coredumpd::fake_kernel::kernel_rules
