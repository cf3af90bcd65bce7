// How cores are compressed: the zstd settings that the configuration sets and the core writer uses.
#pragma once

namespace coredumpd {

/// Compression settings for one core.
struct CompressionOptions {
  int level = 3;    ///< zstd level (1..19)
  int threads = 2;  ///< zstd worker threads; 0 compresses on the calling thread
  /// At the levels where zstd uses its double-fast match finder (3 and 4 in libzstd 1.5), use the match
  /// tables measured for cores (kCoreTables in core_writer.cc) instead of zstd's, which are sized
  /// for general files: on heap cores they cost much less CPU for the same or a smaller output
  /// (bench/README.md, "Smaller zstd match tables for cores").
  bool core_tables = true;
};

}  // namespace coredumpd
