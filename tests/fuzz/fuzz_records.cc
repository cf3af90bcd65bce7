// libFuzzer target: the COREDUMP_RECORDS stream decoder (protocol/records.h, docs/PROTOCOL.md §6.2).
//
// Input: [flags][chunking prefix (fuzz_util.h)][record stream]
//   flags bit 0: SPARSE was acked (ZERO records allowed)
// The stream is decoded twice, in the input-chosen chunks and in one piece; both must agree.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "protocol/records.h"
#include "tests/fuzz/fuzz_util.h"

namespace cp = coredumpd::protocol;

namespace {

// What a decoder reported, checked as it is reported.
struct Observed {
  std::uint64_t next = 0;          // offset the next report must start at (contiguity)
  std::uint64_t data_bytes = 0;
  std::uint64_t zero_bytes = 0;
  std::uint64_t reports = 0;
  std::vector<std::byte> data;     // the DATA payload, concatenated
  bool closed = false;             // set once the decoder failed: nothing may be reported after that

  cp::RecordSink sink() {
    return {[this](std::uint64_t offset, std::span<const std::byte> bytes) {
              FUZZ_CHECK(!closed);
              FUZZ_CHECK(offset == next);
              FUZZ_CHECK(!bytes.empty());  // an empty report would be a decoder bug (no progress)
              next += bytes.size();
              data_bytes += bytes.size();
              data.insert(data.end(), bytes.begin(), bytes.end());
              ++reports;
            },
            [this](std::uint64_t offset, std::uint64_t len) {
              FUZZ_CHECK(!closed);
              FUZZ_CHECK(offset == next);
              FUZZ_CHECK(len > 0);
              FUZZ_CHECK(len <= UINT64_MAX - next);
              next += len;
              zero_bytes += len;
              ++reports;
            }};
  }
};

void check_state(const cp::RecordDecoder& d, const Observed& o, bool sparse) {
  FUZZ_CHECK(!(d.failed() && d.ended()));
  FUZZ_CHECK(d.failed() == !d.error().empty());
  FUZZ_CHECK(d.core_size() == o.next);
  FUZZ_CHECK(d.core_size() == o.data_bytes + o.zero_bytes);
  if (!sparse) FUZZ_CHECK(o.zero_bytes == 0);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto in = coredumpd::fuzz::as_bytes(data, size);
  if (in.empty()) return 0;
  const bool sparse = std::to_integer<unsigned>(in[0]) & 1;
  const auto chunked = coredumpd::fuzz::Chunked::parse(in.subspan(1));

  // Chunked, checking after every chunk.
  cp::RecordDecoder d(sparse);
  Observed o;
  const auto sink = o.sink();
  bool saw_failure = false;
  chunked.for_each([&](std::span<const std::byte> chunk) {
    const bool was_ended = d.ended();
    const bool ok = d.feed(chunk, sink);
    FUZZ_CHECK(ok == !d.failed());
    if (was_ended) FUZZ_CHECK(!ok);  // nothing may follow END
    if (saw_failure) FUZZ_CHECK(!ok);  // failure is final
    saw_failure = saw_failure || !ok;
    o.closed = d.failed();
    check_state(d, o, sparse);
  });

  // One piece: the same verdict and the same core.
  cp::RecordDecoder whole(sparse);
  Observed w;
  const bool ok_whole = whole.feed(chunked.stream, w.sink());
  FUZZ_CHECK(ok_whole == !whole.failed());
  check_state(whole, w, sparse);
  FUZZ_CHECK(whole.failed() == d.failed());
  FUZZ_CHECK(whole.ended() == d.ended());
  FUZZ_CHECK(whole.core_size() == d.core_size());
  FUZZ_CHECK(whole.records() == d.records());
  FUZZ_CHECK(w.data == o.data);
  FUZZ_CHECK(w.zero_bytes == o.zero_bytes);
  return 0;
}
