// Unit tests of the COREDUMP_RECORDS decoder (docs/PROTOCOL.md §6.2).
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "protocol/records.h"

namespace cp = coredumpd::protocol;

namespace {

// Builds a record stream the way the kernel does: headers with contiguous offsets.
struct StreamBuilder {
  std::vector<std::byte> bytes;
  std::uint64_t offset = 0;

  void header(std::uint32_t type, std::uint64_t len, std::uint32_t size = 32, std::uint64_t flags = 0,
              std::optional<std::uint64_t> at = std::nullopt) {
    cp::coredump_record_header h{size, type, flags, at.value_or(offset), len};
    const auto* p = reinterpret_cast<const std::byte*>(&h);
    bytes.insert(bytes.end(), p, p + sizeof(h));
    bytes.insert(bytes.end(), size - sizeof(h), std::byte{0x5A});  // a newer kernel's extra header bytes
  }
  void data(const std::vector<std::byte>& payload) {
    header(cp::COREDUMP_RECORD_DATA, payload.size());
    bytes.insert(bytes.end(), payload.begin(), payload.end());
    offset += payload.size();
  }
  void zero(std::uint64_t len) {
    header(cp::COREDUMP_RECORD_ZERO, len);
    offset += len;
  }
  void end() { header(cp::COREDUMP_RECORD_END, 0); }
};

std::vector<std::byte> pattern(std::size_t n, int seed) {
  std::vector<std::byte> v(n);
  std::mt19937 rng(static_cast<unsigned>(seed));
  for (auto& b : v) b = static_cast<std::byte>(rng() | 1);  // never zero, so holes are visible
  return v;
}

// Reassembles what the decoder reports into a flat core (zeros written out).
struct Reassembly {
  std::vector<std::byte> core;
  cp::RecordSink sink() {
    return {[this](std::uint64_t off, std::span<const std::byte> b) {
              EXPECT_EQ(off, core.size());
              core.insert(core.end(), b.begin(), b.end());
            },
            [this](std::uint64_t off, std::uint64_t len) {
              EXPECT_EQ(off, core.size());
              core.insert(core.end(), len, std::byte{0});
            }};
  }
};

bool feed_in_chunks(cp::RecordDecoder& d, const std::vector<std::byte>& s, const cp::RecordSink& sink, std::size_t chunk) {
  for (std::size_t i = 0; i < s.size(); i += chunk)
    if (!d.feed(std::span(s).subspan(i, std::min(chunk, s.size() - i)), sink)) return false;
  return true;
}

}  // namespace

TEST(Records, SparseStreamReassemblesToThePlainCore) {
  const auto a = pattern(5000, 1), b = pattern(4096, 2);
  StreamBuilder s;
  s.data(a);
  s.zero(1 << 20);
  s.data(b);
  s.zero(8192);
  s.end();
  std::vector<std::byte> expected = a;
  expected.insert(expected.end(), 1 << 20, std::byte{0});
  expected.insert(expected.end(), b.begin(), b.end());
  expected.insert(expected.end(), 8192, std::byte{0});

  for (std::size_t chunk : {std::size_t{1}, std::size_t{7}, std::size_t{32}, std::size_t{4096}, s.bytes.size()}) {
    cp::RecordDecoder d(/*sparse_acked=*/true);
    Reassembly r;
    ASSERT_TRUE(feed_in_chunks(d, s.bytes, r.sink(), chunk)) << d.error();
    EXPECT_TRUE(d.ended());
    EXPECT_EQ(d.core_size(), expected.size());
    EXPECT_EQ(d.records(), 5u);
    EXPECT_EQ(r.core, expected) << "chunk " << chunk;
  }
  EXPECT_LT(s.bytes.size(), expected.size() / 8);  // sparse: far fewer bytes on the wire
}

TEST(Records, LargerHeadersFromANewerKernelAreSkipped) {
  StreamBuilder s;
  const auto a = pattern(100, 3);
  s.header(cp::COREDUMP_RECORD_DATA, a.size(), 48);
  s.bytes.insert(s.bytes.end(), a.begin(), a.end());
  s.offset += a.size();
  s.header(cp::COREDUMP_RECORD_END, 0, 40);
  cp::RecordDecoder d(false);
  Reassembly r;
  ASSERT_TRUE(feed_in_chunks(d, s.bytes, r.sink(), 3)) << d.error();
  EXPECT_TRUE(d.ended());
  EXPECT_EQ(r.core, a);
}

TEST(Records, EofWithoutEndIsNotEnded) {
  StreamBuilder s;
  s.data(pattern(4096, 4));
  cp::RecordDecoder d(true);
  Reassembly r;
  ASSERT_TRUE(d.feed(s.bytes, r.sink()));
  EXPECT_FALSE(d.ended());
  EXPECT_FALSE(d.failed());
  EXPECT_EQ(d.core_size(), 4096u);
}

TEST(Records, MalformedStreamsAreRefusedWithAReason) {
  struct Case {
    const char* name;
    std::function<void(StreamBuilder&)> build;
    bool sparse;
    const char* expect;
  };
  const Case cases[] = {
      {"gap", [](StreamBuilder& s) { s.data(pattern(10, 5)); s.header(cp::COREDUMP_RECORD_DATA, 4, 32, 0, 20); }, true, "gap or overlap"},
      {"overlap", [](StreamBuilder& s) { s.data(pattern(10, 5)); s.header(cp::COREDUMP_RECORD_DATA, 4, 32, 0, 5); }, true, "gap or overlap"},
      {"unknown type", [](StreamBuilder& s) { s.header(7, 10); }, true, "unknown record type 7"},
      {"flags", [](StreamBuilder& s) { s.header(cp::COREDUMP_RECORD_DATA, 10, 32, 1); }, true, "non-zero flags"},
      {"small header", [](StreamBuilder& s) { s.header(cp::COREDUMP_RECORD_DATA, 10); std::uint32_t sz = 16; std::memcpy(s.bytes.data(), &sz, 4); }, true, "< 32"},
      {"huge header", [](StreamBuilder& s) { s.header(cp::COREDUMP_RECORD_DATA, 10); std::uint32_t sz = 1u << 30; std::memcpy(s.bytes.data(), &sz, 4); }, true, "too large"},
      {"zero without sparse", [](StreamBuilder& s) { s.zero(4096); }, false, "SPARSE was not acked"},
      {"end with len", [](StreamBuilder& s) { s.header(cp::COREDUMP_RECORD_END, 5); }, true, "END record with len"},
      {"data after end", [](StreamBuilder& s) { s.end(); s.bytes.push_back(std::byte{1}); }, true, "after the END"},
      {"empty data", [](StreamBuilder& s) { s.header(cp::COREDUMP_RECORD_DATA, 0); }, true, "empty DATA"},
  };
  for (const auto& c : cases) {
    StreamBuilder s;
    c.build(s);
    cp::RecordDecoder d(c.sparse);
    Reassembly r;
    EXPECT_FALSE(d.feed(s.bytes, r.sink())) << c.name;
    EXPECT_TRUE(d.failed()) << c.name;
    EXPECT_NE(d.error().find(c.expect), std::string::npos) << c.name << ": " << d.error();
    EXPECT_FALSE(d.feed(std::vector<std::byte>(8), r.sink())) << "a failed decoder stays failed";
  }
}

TEST(Records, RandomBytesNeverCrash) {
  std::mt19937 rng(99);
  for (int i = 0; i < 2000; ++i) {
    std::vector<std::byte> junk(rng() % 200);
    for (auto& b : junk) b = static_cast<std::byte>(rng());
    cp::RecordDecoder d(rng() & 1);
    d.feed(junk, {});
    EXPECT_FALSE(d.failed() && d.ended());  // the states exclude each other; ASan checks the rest
  }
}
