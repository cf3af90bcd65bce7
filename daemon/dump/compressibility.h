// Whether a core is worth compressing, judged while it streams in from small samples.
//
// Compressing random-looking memory (encrypted buffers, media, already-compressed data) costs a
// CPU and a second full write of the core for a file no smaller. The drain hands this a slice of
// the spool blocks it fills anyway (drain.cc: one per 16 MiB); if zstd at its fastest
// level shrinks them by less than kRawThresholdPercent, the spool itself is kept as the stored
// core (compress_stage.cc).
#pragma once

#include <zstd.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

namespace coredumpd {

/// Running estimate of a core's compressibility. sample() is called by the drain thread,
/// verdict() by the compressor: thread-safe.
class CompressibilitySampler {
 public:
  /// What the samples so far say.
  enum class Verdict {
    Unknown,         ///< fewer than kMinSamples samples
    Compressible,    ///< zstd shrinks the samples by kRawThresholdPercent or more
    Incompressible,  ///< it shrinks them by less: store the core uncompressed
  };

  /// Bytes of each chunk that are compressed (its head): small enough to cost a tiny fraction of
  /// the time it takes to drain the 16 MiB between two samples (bench/README.md, "Incompressible
  /// cores: samples, and one thread for the copy").
  static constexpr std::size_t kSampleBytes = 64 * 1024;
  /// Samples needed before a verdict: one chunk can be an outlier (a table of zeros in a heap).
  static constexpr std::uint64_t kMinSamples = 2;
  /// A core is incompressible if zstd -1 saves less than this share of the sampled bytes. zstd -3
  /// saves at most a little more than -1 on such data, so the raw core stays within a few percent
  /// of what compressing it would have stored.
  static constexpr std::uint64_t kRawThresholdPercent = 3;

  CompressibilitySampler();

  /// Compresses up to kSampleBytes of `chunk` (zstd level 1) and adds the result to the
  /// estimate. An empty chunk is ignored.
  void sample(std::span<const std::byte> chunk);

  /// The estimate from all samples so far.
  Verdict verdict() const;

  /// Samples taken so far.
  std::uint64_t samples() const;

 private:
  struct CctxFree {
    void operator()(ZSTD_CCtx* c) const { ZSTD_freeCCtx(c); }
  };
  std::unique_ptr<ZSTD_CCtx, CctxFree> cctx_;  // drain thread only
  std::vector<std::byte> out_;                 // drain thread only
  mutable std::mutex mu_;
  std::uint64_t samples_ = 0;    // guarded by mu_
  std::uint64_t bytes_in_ = 0;   // guarded by mu_
  std::uint64_t bytes_out_ = 0;  // guarded by mu_
};

}  // namespace coredumpd
