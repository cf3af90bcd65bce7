// Reading a stored core file back: decompressing a zstd core ("<id>.zst") or reading a raw one
// ("<id>.core") as is, through a sink, with bounded buffers. Shared by dumpctl (dump, debug) and
// verify --deep, which differ only in what they do with the bytes and how they word a failure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace coredumpd {

/// Why a stored core could not be streamed.
class CoreStreamError : public std::runtime_error {
 public:
  enum class Kind {
    Unreadable,  ///< read(2) failed (errno in what()), or no zstd context could be made
    Corrupt,     ///< zstd refused the data (its error name in what())
    Truncated,   ///< the file ends in the middle of a zstd frame
  };
  CoreStreamError(Kind k, const std::string& what, std::uint64_t produced)
      : std::runtime_error(what), kind(k), bytes(produced) {}
  Kind kind;
  std::uint64_t bytes;  ///< core bytes passed to the sink before the failure
};

/// Receives core bytes; may throw to abort the stream.
using CoreSink = std::function<void(const char* data, std::size_t size)>;

/// Streams the core stored in the open file `fd` (read from its current offset to EOF) through
/// `sink`: zstd-decompressed if `compression` is kCompressionZstd (concatenated frames, windows up
/// to 2 GiB accepted for long-distance mode; ZSTD_DStreamInSize/OutSize buffers, ~128 KiB each),
/// else read as is in reads of 1 MiB (a raw core; holes read as zeros). Returns the core bytes
/// produced. Throws CoreStreamError; bytes already passed to `sink` are then not a whole core. An
/// empty file yields nothing.
std::uint64_t stream_core(int fd, std::string_view compression, const CoreSink& sink);

}  // namespace coredumpd
