// Decoding the COREDUMP_RECORDS stream (linux-next fs-next 2026-09-23; docs/PROTOCOL.md §6.2).
//
// With RECORDS acked, the bytes after the REQACK marker are records: a header (32 bytes in VER0,
// its `size` field says how many the kernel sent) optionally followed by payload.
//   DATA (0): `len` literal core bytes at `offset` follow the header
//   END  (1): no payload, len 0, offset = total core size; the last thing on the wire
//   ZERO (2): no payload, `len` zero bytes at `offset` (only when SPARSE was acked)
// Offsets are contiguous: each equals the sum of the previous lens. EOF without END means the core
// is truncated (e.g. the task was SIGKILLed mid-dump). The RFC v1 numbering (DATA 0, ZERO 1, no END)
// is not supported.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>

namespace coredumpd::protocol {

inline constexpr std::uint32_t COREDUMP_RECORD_DATA = 0;
inline constexpr std::uint32_t COREDUMP_RECORD_END = 1;
inline constexpr std::uint32_t COREDUMP_RECORD_ZERO = 2;
inline constexpr std::uint32_t COREDUMP_RECORD_HEADER_SIZE_VER0 = 32;
/// Defensive bound on a header's size field (the kernel sends 32).
inline constexpr std::uint32_t COREDUMP_RECORD_HEADER_SIZE_MAX = 4096;

/// struct coredump_record_header (VER0), host byte order.
struct coredump_record_header {
  std::uint32_t size;    ///< header bytes sent (>= 32)
  std::uint32_t type;    ///< DATA, END or ZERO
  std::uint64_t flags;   ///< none defined: non-zero is refused
  std::uint64_t offset;  ///< position in the reassembled core
  std::uint64_t len;     ///< core bytes this record accounts for
};
static_assert(sizeof(coredump_record_header) == COREDUMP_RECORD_HEADER_SIZE_VER0);

/// Receives the decoded core: literal bytes at an offset, or a run of zeros.
struct RecordSink {
  std::function<void(std::uint64_t offset, std::span<const std::byte> bytes)> data;
  std::function<void(std::uint64_t offset, std::uint64_t len)> zeros;
};

/// Incremental decoder: feed() takes consecutive chunks of any size and reports the core through a
/// RecordSink in order. On a protocol violation it stops, returns false, and error() says what and
/// where; nothing after that is reported.
class RecordDecoder {
 public:
  /// `sparse_acked`: whether ZERO records are allowed (SPARSE was acked).
  explicit RecordDecoder(bool sparse_acked) : sparse_(sparse_acked) {}

  /// Decodes `bytes`. Returns false on a protocol error (see error()).
  bool feed(std::span<const std::byte> bytes, const RecordSink& sink);

  bool ended() const { return state_ == State::Ended; }   ///< END seen: the core is complete
  bool failed() const { return state_ == State::Failed; }
  std::uint64_t core_size() const { return next_offset_; }  ///< core bytes accounted for so far
  std::uint64_t records() const { return records_; }        ///< records decoded so far
  const std::string& error() const { return error_; }

 private:
  enum class State { Header, HeaderTail, Payload, Ended, Failed };
  bool fail(std::string why);
  bool on_header();

  bool sparse_;
  State state_ = State::Header;
  std::byte header_[COREDUMP_RECORD_HEADER_SIZE_VER0]{};
  std::size_t header_have_ = 0;
  std::uint64_t skip_ = 0;         // header bytes beyond what we know (HeaderTail)
  std::uint64_t payload_left_ = 0; // DATA bytes still to come (Payload)
  std::uint64_t next_offset_ = 0;
  std::uint64_t records_ = 0;
  std::uint64_t stream_pos_ = 0;   // bytes of the record stream consumed, for error messages
  std::uint32_t pending_type_ = 0; // type of the record whose header was just read
  std::uint64_t pending_len_ = 0;
  std::string error_;
};

}  // namespace coredumpd::protocol
