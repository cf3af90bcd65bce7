#include "tests/fake_kernel/records_writer.h"

#include <algorithm>
#include <cstddef>
#include <cstring>

namespace coredumpd::fake_kernel {

namespace {

bool all_zero(std::span<const std::byte> bytes) {
  return std::all_of(bytes.begin(), bytes.end(), [](std::byte b) { return b == std::byte{0}; });
}

}  // namespace

RecordsWriter::RecordsWriter(CoreSource core, RecordsOptions options)
    : core_(std::move(core)), options_(std::move(options)) {
  if (options_.page_size == 0) options_.page_size = 4096;
  options_.header_size = std::max(options_.header_size, RECORD_HEADER_SIZE_VER0);
  const std::size_t page = options_.page_size;
  options_.max_data_len = std::max(page, options_.max_data_len / page * page);
}

bool RecordsWriter::read_page(std::uint64_t offset, std::size_t len, std::string& error) {
  page_.resize(len);
  return core_.read(offset, page_, error);
}

void RecordsWriter::append_header(std::vector<std::byte>& out, RecordType type,
                                  std::uint64_t offset, std::uint64_t len) {
  RecordHeader h{options_.header_size, static_cast<std::uint32_t>(type), 0, 0, len};
  for (const RecordFault& f : options_.faults) {
    if (f.at_record != records_) continue;
    switch (f.kind) {
      case RecordFault::Kind::OffsetGap: offset_skew_ += f.value; break;
      case RecordFault::Kind::Type: h.type = static_cast<std::uint32_t>(f.value); break;
      case RecordFault::Kind::Flags: h.flags = f.value; break;
      case RecordFault::Kind::HeaderSize: h.size = static_cast<std::uint32_t>(f.value); break;
    }
  }
  h.offset = offset + offset_skew_;
  const std::size_t at = out.size();
  out.resize(at + options_.header_size);  // bytes beyond the known 32 stay zero
  std::memcpy(out.data() + at, &h, sizeof(h));
  ++records_;
}

bool RecordsWriter::next(std::vector<std::byte>& out, std::string& error) {
  out.clear();
  if (finished_) return false;
  const std::uint64_t total = core_.size();
  const std::uint64_t page = options_.page_size;

  if (position_ >= total) {
    finished_ = true;
    if (!options_.send_end) return false;
    append_header(out, RecordType::End, total, 0);
    return true;
  }

  if (options_.sparse) {
    // A run of whole, all-zero pages becomes one ZERO record. Record boundaries are always page
    // aligned here: ZERO lens are whole pages and DATA lens are whole pages except at the very end.
    std::uint64_t run = 0;
    while (position_ + run + page <= total) {
      if (!read_page(position_ + run, page, error)) return false;
      if (!all_zero(page_)) break;
      run += page;
    }
    if (run > 0) {
      append_header(out, RecordType::Zero, position_, run);
      position_ += run;
      return true;
    }
  }

  // DATA: up to max_data_len bytes, stopping (when sparse) before the next all-zero whole page.
  append_header(out, RecordType::Data, position_, 0);
  const std::size_t header_at = out.size() - options_.header_size;
  std::uint64_t len = 0;
  while (len < options_.max_data_len && position_ + len < total) {
    const std::uint64_t at = position_ + len;
    const std::size_t chunk = static_cast<std::size_t>(std::min(page - at % page, total - at));
    if (!read_page(at, chunk, error)) return false;
    if (options_.sparse && chunk == page && len > 0 && all_zero(page_)) break;
    out.insert(out.end(), page_.begin(), page_.end());
    len += chunk;
  }
  // Patch the real length into the header written above (offset 24, after any faults were applied).
  std::memcpy(out.data() + header_at + offsetof(RecordHeader, len), &len, sizeof(len));
  position_ += len;
  return true;
}

DecodedStream decode_records(std::span<const std::byte> stream, bool sparse_acked,
                             std::uint64_t max_core) {
  DecodedStream d;
  std::size_t pos = 0;
  std::uint64_t expected = 0;
  auto fail = [&](std::string why) {
    d.error = "record " + std::to_string(d.records.size()) + " at wire offset " +
              std::to_string(pos) + ": " + std::move(why);
    return d;
  };
  while (pos < stream.size()) {
    if (d.saw_end) return fail("bytes after END");
    const std::size_t left = stream.size() - pos;
    if (left < RECORD_HEADER_SIZE_VER0) {
      d.partial_tail = true;
      break;
    }
    RecordHeader h{};
    std::memcpy(&h, stream.data() + pos, sizeof(h));
    if (h.size < RECORD_HEADER_SIZE_VER0) return fail("header size " + std::to_string(h.size) + " < 32");
    if (h.flags != 0) return fail("non-zero flags " + std::to_string(h.flags));
    if (h.offset != expected)
      return fail("offset " + std::to_string(h.offset) + " != expected " + std::to_string(expected));
    if (h.type > static_cast<std::uint32_t>(RecordType::Zero))
      return fail("unknown type " + std::to_string(h.type));
    const auto type = static_cast<RecordType>(h.type);
    if (type == RecordType::Zero && !sparse_acked) return fail("ZERO record without SPARSE");
    if (type == RecordType::End && h.len != 0) return fail("END with len " + std::to_string(h.len));
    if (h.len > max_core - expected) return fail("core larger than " + std::to_string(max_core));
    if (left < h.size) {
      d.partial_tail = true;
      break;
    }
    d.records.push_back({h, pos});
    pos += h.size;
    switch (type) {
      case RecordType::Data: {
        const std::size_t have = std::min<std::size_t>(static_cast<std::size_t>(h.len), stream.size() - pos);
        d.core.insert(d.core.end(), stream.begin() + static_cast<std::ptrdiff_t>(pos),
                      stream.begin() + static_cast<std::ptrdiff_t>(pos + have));
        pos += have;
        if (have < h.len) {
          d.partial_tail = true;
          return d;
        }
        break;
      }
      case RecordType::Zero: d.core.resize(d.core.size() + static_cast<std::size_t>(h.len)); break;
      case RecordType::End: d.saw_end = true; break;
    }
    expected += h.len;
  }
  return d;
}

}  // namespace coredumpd::fake_kernel
