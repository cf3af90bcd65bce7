#include "protocol/records.h"

#include <algorithm>
#include <cstring>

namespace coredumpd::protocol {

bool RecordDecoder::fail(std::string why) {
  state_ = State::Failed;
  error_ = "record stream byte " + std::to_string(stream_pos_) + ", record " + std::to_string(records_) + ": " +
           std::move(why);
  return false;
}

bool RecordDecoder::on_header() {
  coredump_record_header h{};
  std::memcpy(&h, header_, sizeof(h));
  header_have_ = 0;
  if (h.flags != 0) return fail("non-zero flags " + std::to_string(h.flags) + " (none are defined)");
  if (h.offset != next_offset_)
    return fail("offset " + std::to_string(h.offset) + " where " + std::to_string(next_offset_) +
                " was expected (gap or overlap)");
  skip_ = h.size - COREDUMP_RECORD_HEADER_SIZE_VER0;
  switch (h.type) {
    case COREDUMP_RECORD_DATA:
      if (h.len == 0) return fail("empty DATA record");
      payload_left_ = h.len;
      break;
    case COREDUMP_RECORD_ZERO:
      if (!sparse_) return fail("ZERO record although SPARSE was not acked");
      if (h.len == 0) return fail("empty ZERO record");
      break;
    case COREDUMP_RECORD_END:
      if (h.len != 0) return fail("END record with len " + std::to_string(h.len));
      break;
    default:
      return fail("unknown record type " + std::to_string(h.type));
  }
  if (h.len > UINT64_MAX - next_offset_) return fail("len overflows the core size");
  ++records_;
  state_ = skip_ ? State::HeaderTail : State::Header;
  if (h.type == COREDUMP_RECORD_END && !skip_) state_ = State::Ended;
  if (h.type == COREDUMP_RECORD_DATA && !skip_) state_ = State::Payload;
  pending_type_ = h.type;
  pending_len_ = h.len;
  return true;
}

bool RecordDecoder::feed(std::span<const std::byte> bytes, const RecordSink& sink) {
  while (!bytes.empty()) {
    switch (state_) {
      case State::Failed:
        return false;
      case State::Ended:
        return fail("data after the END record");
      case State::Header: {
        // The size field comes first: check it as soon as its 4 bytes are in.
        const std::size_t want = sizeof(header_) - header_have_;
        const std::size_t n = std::min(want, bytes.size());
        std::memcpy(header_ + header_have_, bytes.data(), n);
        const bool had_size = header_have_ >= 4;
        header_have_ += n;
        stream_pos_ += n;
        bytes = bytes.subspan(n);
        if (!had_size && header_have_ >= 4) {
          std::uint32_t size = 0;
          std::memcpy(&size, header_, 4);
          if (size < COREDUMP_RECORD_HEADER_SIZE_VER0) return fail("header size " + std::to_string(size) + " < 32");
          if (size > COREDUMP_RECORD_HEADER_SIZE_MAX) return fail("header size " + std::to_string(size) + " too large");
        }
        if (header_have_ < sizeof(header_)) break;
        if (!on_header()) return false;
        if (pending_type_ == COREDUMP_RECORD_ZERO) {
          if (sink.zeros) sink.zeros(next_offset_, pending_len_);
          next_offset_ += pending_len_;
        }
        break;
      }
      case State::HeaderTail: {
        const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(skip_, bytes.size()));
        skip_ -= n;
        stream_pos_ += n;
        bytes = bytes.subspan(n);
        if (skip_ == 0) {
          state_ = pending_type_ == COREDUMP_RECORD_DATA  ? State::Payload
                   : pending_type_ == COREDUMP_RECORD_END ? State::Ended
                                                          : State::Header;
        }
        break;
      }
      case State::Payload: {
        const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(payload_left_, bytes.size()));
        if (sink.data) sink.data(next_offset_, bytes.first(n));
        next_offset_ += n;
        payload_left_ -= n;
        stream_pos_ += n;
        bytes = bytes.subspan(n);
        if (payload_left_ == 0) state_ = State::Header;
        break;
      }
    }
  }
  return state_ != State::Failed;
}

}  // namespace coredumpd::protocol
