// Unit tests of the compressibility sampler: no verdict from too few samples, random memory is
// incompressible, text and mostly-random-with-some-structure memory is not.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "daemon/dump/compressibility.h"

using coredumpd::CompressibilitySampler;
using Verdict = CompressibilitySampler::Verdict;

namespace {

std::vector<std::byte> random_chunk(std::size_t n, unsigned seed) {
  std::mt19937_64 gen(seed);
  std::vector<std::byte> v(n);
  for (std::size_t i = 0; i < n; i += 8) {
    const auto w = gen();
    for (std::size_t k = 0; k < 8 && i + k < n; ++k) v[i + k] = static_cast<std::byte>(w >> (8 * k));
  }
  return v;
}

std::vector<std::byte> text_chunk(std::size_t n, unsigned seed) {
  static const char* const kWords[] = {"request", "response", "session", "token", "error", "value", "thread"};
  std::mt19937 gen(seed);
  std::vector<std::byte> v;
  while (v.size() < n) {
    const std::string w = std::string(kWords[gen() % 7]) + " ";
    for (char c : w) v.push_back(static_cast<std::byte>(c));
  }
  v.resize(n);
  return v;
}

}  // namespace

TEST(CompressibilitySampler, NoVerdictBeforeTwoSamples) {
  CompressibilitySampler s;
  EXPECT_EQ(s.verdict(), Verdict::Unknown);
  s.sample(random_chunk(1 << 20, 1));
  EXPECT_EQ(s.samples(), 1u);
  EXPECT_EQ(s.verdict(), Verdict::Unknown) << "one chunk can be an outlier";
  s.sample({});
  EXPECT_EQ(s.samples(), 1u) << "an empty chunk is not a sample";
  s.sample(random_chunk(1 << 20, 2));
  EXPECT_EQ(s.verdict(), Verdict::Incompressible);
}

TEST(CompressibilitySampler, TextIsCompressible) {
  CompressibilitySampler s;
  for (unsigned i = 0; i < 4; ++i) s.sample(text_chunk(1 << 20, i));
  EXPECT_EQ(s.verdict(), Verdict::Compressible);
}

TEST(CompressibilitySampler, ShortChunksCountToo) {
  CompressibilitySampler s;
  s.sample(random_chunk(5000, 1));
  s.sample(random_chunk(777, 2));
  EXPECT_EQ(s.verdict(), Verdict::Incompressible) << "zstd's frame overhead must not count as growth";
}

// One zero chunk in ten is 10 % of the sampled bytes saved: worth compressing. One in forty is
// 2.5 %, under the threshold: the core stays raw.
TEST(CompressibilitySampler, ThresholdIsAShareOfTheSampledBytes) {
  const std::vector<std::byte> zeros(1 << 20);
  CompressibilitySampler tenth;
  tenth.sample(zeros);
  for (unsigned i = 0; i < 9; ++i) tenth.sample(random_chunk(1 << 20, i));
  EXPECT_EQ(tenth.verdict(), Verdict::Compressible);

  CompressibilitySampler fortieth;
  fortieth.sample(zeros);
  for (unsigned i = 0; i < 39; ++i) fortieth.sample(random_chunk(1 << 20, i));
  EXPECT_EQ(fortieth.verdict(), Verdict::Incompressible);
}

// The samples alternate between a random and a zero page (a sparse heap): half the bytes go.
TEST(CompressibilitySampler, AlternatingZeroPagesAreCompressible) {
  CompressibilitySampler s;
  for (unsigned c = 0; c < 3; ++c) {
    auto chunk = random_chunk(1 << 20, c);
    for (std::size_t page = 1; page < chunk.size() / 4096; page += 2)
      std::fill_n(chunk.begin() + static_cast<std::ptrdiff_t>(page * 4096), 4096, std::byte{0});
    s.sample(chunk);
  }
  EXPECT_EQ(s.verdict(), Verdict::Compressible);
}
