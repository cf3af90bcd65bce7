// The bytes the fake kernel streams as "the ELF core": a file, an in-memory buffer or a generated
// pattern. Read piecewise, so a multi-GiB benchmark core never has to sit in memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace coredumpd::fake_kernel {

/// A read-only, random-access source of core bytes. Cheap to copy (shares its storage).
///
/// The fake kernel does not need real ELF content: the daemon under test sees whatever bytes are
/// given here. Use from_file() with a core captured on a real kernel when ELF parsing matters.
class CoreSource {
 public:
  /// An empty core (0 bytes).
  CoreSource();

  /// A core held in memory.
  static CoreSource from_buffer(std::vector<std::byte> bytes);

  /// A core read from `path` with pread() as it is streamed. The file is opened now and its size
  /// taken now; returns std::nullopt and sets `error` if it cannot be opened or stat'ed.
  static std::optional<CoreSource> from_file(const std::string& path, std::string& error);

  /// A generated core of `size` bytes. Page i (of `page_size` bytes) carries data iff
  /// `data_page_stride` == 0 or i % data_page_stride == 0; every other page is all zero, which is
  /// what SPARSE turns into ZERO records. Data bytes are never zero and depend on the offset and
  /// `seed` (see pattern_byte()), so any misplaced byte is detectable. The last page carries data
  /// too when `data_last_page` is set, like a mapping "touched at both ends" (docs/PROTOCOL.md §11.2 group F).
  static CoreSource pattern(std::uint64_t size, std::uint64_t data_page_stride = 0,
                            std::uint32_t page_size = 4096, std::uint8_t seed = 0,
                            bool data_last_page = false);

  /// The data byte a pattern() core holds at `offset` on a data page (never zero).
  static std::byte pattern_byte(std::uint64_t offset, std::uint8_t seed);

  /// Total size in bytes.
  [[nodiscard]] std::uint64_t size() const;

  /// Fills `out` with the bytes at [offset, offset + out.size()). The range must lie inside the
  /// core; returns false and sets `error` otherwise or on a read error (file sources).
  bool read(std::uint64_t offset, std::span<std::byte> out, std::string& error) const;

  /// The whole core as one buffer (for tests comparing what the server received).
  [[nodiscard]] std::optional<std::vector<std::byte>> materialize(std::string& error) const;

  /// A short description for logs and JSON: "buffer:N", "file:PATH", "pattern:N/stride".
  [[nodiscard]] std::string describe() const;

 private:
  struct Impl;
  explicit CoreSource(std::shared_ptr<const Impl> impl);
  std::shared_ptr<const Impl> impl_;
};

}  // namespace coredumpd::fake_kernel
