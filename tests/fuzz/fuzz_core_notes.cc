// libFuzzer target: the streaming ELF core note scanner (protocol/core_notes.h, docs/PROTOCOL.md §8).
//
// Input: [cap][chunking prefix (fuzz_util.h)][ELF core stream]
//   cap: 0 = the default 32 MiB cap, 0xff = a zero cap, else cap * 64 bytes
// The stream is scanned twice, in the input-chosen chunks and in one piece: it must never crash,
// the buffer must stay within the cap (plus the 64-byte ELF header kept in front of the notes) and
// be released once done(), and both scans must find the same facts.
#include <cstddef>
#include <cstdint>

#include "protocol/core_notes.h"
#include "tests/fuzz/fuzz_util.h"

namespace cp = coredumpd::protocol;

namespace {

constexpr std::size_t kElfHeaderKept = 64;  // sizeof(Elf64_Ehdr)

bool same(const cp::CoreFacts& a, const cp::CoreFacts& b) {
  if (a.files.size() != b.files.size()) return false;
  for (std::size_t i = 0; i < a.files.size(); ++i) {
    const auto& x = a.files[i];
    const auto& y = b.files[i];
    if (x.start != y.start || x.end != y.end || x.page_offset != y.page_offset || x.path != y.path) return false;
  }
  return a.elf_core == b.elf_core && a.signal == b.signal && a.si_code == b.si_code &&
         a.fault_address == b.fault_address && a.crashing_tid == b.crashing_tid && a.pid == b.pid &&
         a.thread_tids == b.thread_tids && a.fname == b.fname && a.psargs == b.psargs &&
         a.page_size == b.page_size && a.notes_offset == b.notes_offset && a.notes_size == b.notes_size &&
         a.promised_size == b.promised_size &&
         a.error == b.error;
}

void check_facts(const cp::CoreFacts& f) {
  FUZZ_CHECK(f.fname.size() <= 16);
  FUZZ_CHECK(f.psargs.size() <= 80);
  if (f.crashing_tid) FUZZ_CHECK(!f.thread_tids.empty() && f.thread_tids.front() == *f.crashing_tid);
  if (f.fault_address) FUZZ_CHECK(f.signal.has_value() && f.si_code.has_value() && *f.si_code > 0);
  // Once the PT_NOTE is known, the promised size covers it (saturating at 2^64-1).
  if (f.notes_size > 0 && f.notes_offset <= UINT64_MAX - f.notes_size)
    FUZZ_CHECK(f.promised_size >= f.notes_offset + f.notes_size);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto in = coredumpd::fuzz::as_bytes(data, size);
  if (in.empty()) return 0;
  const auto cap_sel = std::to_integer<std::size_t>(in[0]);
  const std::size_t cap = cap_sel == 0 ? std::size_t{32} * 1024 * 1024 : cap_sel == 0xff ? 0 : cap_sel * 64;
  const auto chunked = coredumpd::fuzz::Chunked::parse(in.subspan(1));
  const std::size_t bound = (cap > kElfHeaderKept ? cap : kElfHeaderKept) + kElfHeaderKept;

  cp::CoreNoteScanner s(cap);
  chunked.for_each([&](std::span<const std::byte> chunk) {
    s.feed(chunk);
    FUZZ_CHECK(s.buffered_bytes() <= bound);
    if (s.done()) FUZZ_CHECK(s.buffered_bytes() == 0);
  });
  FUZZ_CHECK(s.bytes_seen() == chunked.stream.size());
  const bool done_before_finish = s.done();
  const cp::CoreFacts before = s.facts();
  s.finish();
  FUZZ_CHECK(s.done());
  FUZZ_CHECK(s.buffered_bytes() == 0);
  if (done_before_finish) FUZZ_CHECK(same(before, s.facts()));  // finish() after done() changes nothing
  else FUZZ_CHECK(!s.facts().error.empty());                   // a stream that ended early says so
  check_facts(s.facts());
  s.feed(chunked.stream.first(chunked.stream.size() < 8 ? chunked.stream.size() : 8));  // O(1), harmless
  FUZZ_CHECK(s.buffered_bytes() == 0);

  cp::CoreNoteScanner whole(cap);
  whole.feed(chunked.stream);
  FUZZ_CHECK(whole.buffered_bytes() <= bound);
  whole.finish();
  FUZZ_CHECK(same(whole.facts(), s.facts()));
  return 0;
}
