// Encoding a core as COREDUMP_RECORDS (docs/PROTOCOL.md §6.2, NEXT numbering), as the kernel would stream it
// after acking RECORDS (and, optionally, SPARSE) — plus deliberate faults for hostile-stream tests.
//
// protocol/ has no record types yet (the daemon's reader will add its own); the layout below is the
// one of docs/PROTOCOL.md §6.2, and decode_records() is a strict reference reader for the tests.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "tests/fake_kernel/core_source.h"

namespace coredumpd::fake_kernel {

/// COREDUMP_RECORD_HEADER_SIZE_VER0 (docs/PROTOCOL.md §6.2).
inline constexpr std::uint32_t RECORD_HEADER_SIZE_VER0 = 32;

/// Record types of the NEXT numbering (docs/PROTOCOL.md §6.2). RFC v1's DATA=0/ZERO=1/no-END is not produced.
enum class RecordType : std::uint32_t {
  Data = 0,  ///< COREDUMP_RECORD_DATA: `len` literal core bytes follow the header
  End = 1,   ///< COREDUMP_RECORD_END: no payload, len 0, offset = total core size; last on the wire
  Zero = 2,  ///< COREDUMP_RECORD_ZERO: no payload, `len` zero bytes at `offset` (SPARSE only)
};

/// struct coredump_record_header (docs/PROTOCOL.md §6.2), host byte order, no padding.
struct RecordHeader {
  std::uint32_t size;    ///< header size sent (>= 32); covers the header only, not the payload
  std::uint32_t type;    ///< RecordType (or anything, for fault injection)
  std::uint64_t flags;   ///< none defined: a reader must refuse non-zero
  std::uint64_t offset;  ///< position in the reassembled core where this record starts
  std::uint64_t len;     ///< core bytes this record accounts for
};
static_assert(sizeof(RecordHeader) == RECORD_HEADER_SIZE_VER0);

/// A deliberate protocol violation applied to one record, to test the daemon's reader.
struct RecordFault {
  /// What to break.
  enum class Kind {
    OffsetGap,   ///< add `value` to this record's offset and every later one (a gap in offsets)
    Type,        ///< replace this record's type with `value` (payload, if any, is still sent)
    Flags,       ///< set this record's flags to `value`
    HeaderSize,  ///< set this record's size field to `value` (truncated to u32) without changing
                 ///< the bytes sent (RecordsOptions::header_size): the field lies
  };
  Kind kind = Kind::Flags;
  std::uint64_t at_record = 0;  ///< 0-based index of the record on the wire (END included)
  std::uint64_t value = 0;      ///< meaning depends on `kind`
};

/// How to cut the core into records.
struct RecordsOptions {
  /// Emit ZERO records for page-aligned, all-zero, whole pages (set only when SPARSE was acked).
  bool sparse = false;
  /// The kernel's sparse granularity (docs/PROTOCOL.md §6.2: pages). Must be > 0.
  std::uint32_t page_size = 4096;
  /// Largest DATA payload per record; rounded down to a multiple of page_size (minimum one page).
  std::size_t max_data_len = 64 * 1024;
  /// Size of every header sent: >= 32; bytes beyond 32 are zero (a "newer kernel" header).
  std::uint32_t header_size = RECORD_HEADER_SIZE_VER0;
  /// Send the END record after the last core byte (false: a stream that ends without END).
  bool send_end = true;
  /// Faults to inject, by record index.
  std::vector<RecordFault> faults;
};

/// Produces the records stream of one core, one record (header + payload) at a time.
///
/// Offsets are contiguous (each equals the sum of the previous lens) unless an OffsetGap fault is
/// injected. Consecutive all-zero pages are merged into one ZERO record; DATA records never span a
/// zero page when sparse, and never exceed max_data_len. A trailing partial page is always DATA.
class RecordsWriter {
 public:
  /// Prepares to encode `core` (CoreSource shares its storage, so the copy is cheap).
  RecordsWriter(CoreSource core, RecordsOptions options);

  /// Clears `out` and fills it with the next record's bytes. Returns false when the stream is
  /// complete (END sent, or the last record sent with send_end == false) or on a read error, in
  /// which case `error` is set.
  bool next(std::vector<std::byte>& out, std::string& error);

  /// Records produced so far.
  [[nodiscard]] std::uint64_t records() const noexcept { return records_; }
  /// Core bytes accounted for so far (sum of DATA and ZERO lens).
  [[nodiscard]] std::uint64_t core_position() const noexcept { return position_; }
  /// True once every core byte and END (if wanted) has been produced.
  [[nodiscard]] bool finished() const noexcept { return finished_; }

 private:
  bool read_page(std::uint64_t offset, std::size_t len, std::string& error);
  void append_header(std::vector<std::byte>& out, RecordType type, std::uint64_t offset,
                     std::uint64_t len);

  CoreSource core_;
  RecordsOptions options_;
  std::uint64_t position_ = 0;
  std::uint64_t records_ = 0;
  std::uint64_t offset_skew_ = 0;
  bool finished_ = false;
  std::vector<std::byte> page_;
};

/// One record as decoded by decode_records().
struct DecodedRecord {
  RecordHeader header{};  ///< the known 32 bytes of the header
  std::uint64_t wire_offset = 0;  ///< where the header starts in the stream
};

/// What a strict reader makes of a records stream.
struct DecodedStream {
  std::vector<DecodedRecord> records;  ///< every header read, in order
  std::vector<std::byte> core;         ///< reassembled core (ZERO ranges filled with zeros)
  bool saw_end = false;                ///< an END record terminated the stream
  bool partial_tail = false;           ///< the stream stopped inside a header or DATA payload
  std::string error;                   ///< first protocol violation (empty if none); reading stops
};

/// Reference reader for tests, applying docs/PROTOCOL.md §6.2's rules: header size >= 32 (extra bytes
/// skipped), known type, flags 0, contiguous offsets, ZERO only if `sparse_acked`, END with len 0,
/// nothing after END. A stream that ends without END is reported with saw_end == false and no error.
/// `max_core` bounds the reassembled size (refused beyond it).
DecodedStream decode_records(std::span<const std::byte> stream, bool sparse_acked,
                             std::uint64_t max_core = 1ULL << 32);

}  // namespace coredumpd::fake_kernel
