// Helpers shared by the libFuzzer targets of tests/fuzz (see README.md there).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

namespace coredumpd::fuzz {

/// Stops the fuzzer with a crash report: an invariant of the code under test does not hold.
#define FUZZ_CHECK(cond)                 \
  do {                                   \
    if (!(cond)) __builtin_trap();       \
  } while (0)

/// Reads a little-endian integer at `off` of `bytes`; missing bytes count as zero.
template <class T>
T load_le_padded(std::span<const std::byte> bytes, std::size_t off) {
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < sizeof(T); ++i) {
    if (off + i < bytes.size()) v |= std::uint64_t{std::to_integer<std::uint8_t>(bytes[off + i])} << (8 * i);
  }
  return static_cast<T>(v);
}

/// The chunking prefix of the stream targets (fuzz_records, fuzz_core_notes):
///
///   [K: low 4 bits = number of size bytes][K size bytes][stream...]
///
/// The stream is fed in chunks whose sizes cycle through the size bytes: a size byte b means b+1
/// bytes, except 0xff, which means "everything left". K = 0 feeds the whole stream at once.
struct Chunked {
  std::vector<std::size_t> sizes;   ///< empty: one chunk
  std::span<const std::byte> stream;

  static Chunked parse(std::span<const std::byte> in) {
    Chunked c;
    if (in.empty()) return c;
    const std::size_t k = std::to_integer<std::size_t>(in[0]) & 0x0f;
    in = in.subspan(1);
    const std::size_t n = k < in.size() ? k : in.size();
    for (std::size_t i = 0; i < n; ++i) {
      const auto b = std::to_integer<std::size_t>(in[i]);
      c.sizes.push_back(b == 0xff ? SIZE_MAX : b + 1);
    }
    c.stream = in.subspan(n);
    return c;
  }

  /// Calls f(chunk) for consecutive chunks covering the whole stream.
  template <class F>
  void for_each(F&& f) const {
    std::span<const std::byte> rest = stream;
    std::size_t i = 0;
    while (!rest.empty()) {
      std::size_t n = sizes.empty() ? rest.size() : sizes[i++ % sizes.size()];
      if (n > rest.size()) n = rest.size();
      f(rest.first(n));
      rest = rest.subspan(n);
    }
  }
};

inline std::span<const std::byte> as_bytes(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const std::byte*>(data), size};
}

}  // namespace coredumpd::fuzz
