// Forwarding a crash to a second coredump server (a coredumpd inside the crashing process's
// container): the host plays the kernel's part towards that receiver, with the same wire format
// (docs/PROTOCOL.md §4–§6, §10). Pure decisions only; the I/O is in daemon/forward/forward.cc.
//
// The host offers the receiver exactly what the kernel offered the host (the bits this build knows
// how to relay), validates the receiver's ack with the kernel's own rules (kernel_ack_verdict), and
// then acks the kernel with the same choices, so the bytes the kernel streams (plain ELF, or
// RECORDS/SPARSE records) can be relayed to the receiver unchanged.
#pragma once

#include <cstdint>

#include "protocol/negotiate.h"
#include "protocol/wire.h"

namespace coredumpd::protocol {

/// The coredump_req the host sends the receiver for a crash whose kernel request was `kernel`:
/// the same size (at most VER1, 32 bytes), size_ack = min(kernel.size_ack, 24) (an ack the host can
/// pass on to the kernel verbatim), mask = kernel.mask restricted to the bits this build knows
/// (KERNEL, USERSPACE, REJECT, WAIT, RECORDS, SPARSE, MEMORY_TYPES and `close_files_bit`), and the
/// kernel's memory types fields. Bits the host does not understand are never offered: it could not
/// relay their effect.
coredump_req receiver_request(const coredump_req& kernel, std::uint64_t close_files_bit);

/// What to ask the kernel for so that its ack carries the same mode and flags as `receiver_ack`
/// (an ack that kernel_ack_verdict() accepted against receiver_request()): feed the result to
/// negotiate() with the kernel's request. WAIT is kept as the receiver asked.
Wants wants_matching_ack(const coredump_ack& receiver_ack, std::uint64_t close_files_bit);

/// True if `host_ack` (what the host will send the kernel) makes the kernel produce the stream
/// `receiver_ack` asked for: the same mode, RECORDS, SPARSE, MEMORY_TYPES (and selection) and
/// CLOSE_FILES bits. WAIT and the ack size may differ.
bool same_stream(const coredump_ack& host_ack, const coredump_ack& receiver_ack, std::uint64_t close_files_bit);

}  // namespace coredumpd::protocol
