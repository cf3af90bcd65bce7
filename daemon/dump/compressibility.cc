#include "daemon/dump/compressibility.h"

#include <algorithm>

namespace coredumpd {

CompressibilitySampler::CompressibilitySampler()
    : cctx_(ZSTD_createCCtx()), out_(ZSTD_compressBound(kSampleBytes)) {}

void CompressibilitySampler::sample(std::span<const std::byte> chunk) {
  if (chunk.empty() || !cctx_) return;
  const std::size_t n = std::min(chunk.size(), kSampleBytes);
  const std::size_t out = ZSTD_compressCCtx(cctx_.get(), out_.data(), out_.size(), chunk.data(), n, 1);
  // Cannot fail with a ZSTD_compressBound() buffer short of running out of memory; then count
  // the sample as stored raw, which is what zstd would do with it.
  const std::size_t stored = ZSTD_isError(out) != 0U ? n : out;
  std::lock_guard lock(mu_);
  ++samples_;
  bytes_in_ += n;
  bytes_out_ += std::min(stored, n);
}

CompressibilitySampler::Verdict CompressibilitySampler::verdict() const {
  std::lock_guard lock(mu_);
  if (samples_ < kMinSamples) return Verdict::Unknown;
  return bytes_out_ * 100 >= bytes_in_ * (100 - kRawThresholdPercent) ? Verdict::Incompressible
                                                                       : Verdict::Compressible;
}

std::uint64_t CompressibilitySampler::samples() const {
  std::lock_guard lock(mu_);
  return samples_;
}

}  // namespace coredumpd
