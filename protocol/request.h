// Reading a coredump_req of any size the kernel may send (docs/PROTOCOL.md §4.2, §6.1 rule 1).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "protocol/wire.h"

namespace coredumpd::protocol {

/// How to consume a request whose `size` field was peeked: read `known` bytes into coredump_req,
/// then read and discard `discard` more. Sizes in bytes.
struct RequestLayout {
  std::uint32_t known;    ///< min(size, sizeof(coredump_req))
  std::uint32_t discard;  ///< size - known: fields of a newer kernel this build does not know
};

/// Checks a peeked request size field and says how to read the request.
/// Returns std::nullopt and sets `error` when size < COREDUMP_REQ_SIZE_VER0 (the kernel never sends
/// less) or size >= COREDUMP_REQ_SIZE_MAX (defensive bound of the selftests and systemd).
std::optional<RequestLayout> plan_request_read(std::uint32_t size, std::string& error);

/// Decodes the known prefix of a request (at most sizeof(coredump_req) bytes, at least 16).
/// Fields the kernel did not send are zero, as docs/PROTOCOL.md §4.2 requires. Never fails: size checks are
/// plan_request_read's job; a prefix shorter than 16 bytes leaves the missing fields zero.
coredump_req decode_request(std::span<const std::byte> prefix);

/// Reads the u32 `size` field from the first 4 peeked bytes (host byte order).
std::uint32_t peek_size_field(std::span<const std::byte, 4> first4);

}  // namespace coredumpd::protocol
