// Integration tests: how a core is spooled and stored (zero runs, the page cache, compression while
// streaming, raw cores of incompressible data, rule size limits), driven by the fake kernel.
#include <gtest/gtest.h>

#include "tests/integration/fake_kernel_daemon_fixture.h"

using namespace coredumpd;
using namespace coredumpd::test;

namespace {

// Long zero runs (untouched memory the kernel sends as literal zeros) become holes of the spool,
// and the compressor skips them: a core of 24 MiB data, 48 MiB zeros, 8 MiB data is stored exactly.
// (That the holes cost no disk is checked on a raw core, RawCoreWithZeroRunsAndATrailingHoleIsExact.)
TEST_F(FakeKernelDaemon, CoreWithALongZeroRunIsStoredExactly) {
  constexpr std::uint64_t kMiB = 1 << 20;
  std::vector<std::byte> core(80 * kMiB);
  for (std::uint64_t i = 0; i < core.size(); ++i)
    if (i < 24 * kMiB || i >= 72 * kMiB) core[i] = fk::CoreSource::pattern_byte(i, 3);
  const auto r = dump_one(core);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->core_size, core.size());
  EXPECT_EQ(stored_core(*r), core);
}

// spool_direct_io = false (the spool through the page cache): a compressible and an incompressible
// core are stored exactly, as zstd and raw.
TEST_F(FakeKernelDaemon, SpoolThroughThePageCacheStoresTheSameCores) {
  start(R"({"spool_direct_io": false})");
  std::vector<std::byte> core(40 * kMebi);
  fill_text(core, 0, core.size());
  auto r = dump_one(core);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->compression, "zstd");
  EXPECT_TRUE(stored_core(*r) == core);

  start(R"({"spool_direct_io": false})");
  fill_random(core, 0, core.size(), 91);
  r = dump_one(core);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->compression, "none");
  EXPECT_TRUE(stored_core(*r) == core);
  EXPECT_EQ(verify_problems(), "");
}

// compress_while_streaming: with it, a compressible core is compressed while it still streams in
// (the compressor follows the spool); without it, nothing is compressed until the stream has ended.
// The stream is held at 48 MiB until the daemon's compressed file shows output, polled with a 60 s
// bound: the compressor is SCHED_IDLE while the core streams, so on a busy machine it runs late, and
// a fixed stall only hoped it would run in time. Without the option the file must stay empty for the
// hold (a few seconds, then the stream goes on). Either way the stored core is exact.
TEST_F(FakeKernelDaemon, CompressWhileStreamingDecidesWhenCompressionStarts) {
  // 64 KiB of text, then 64 KiB of random bytes, over and over: zstd halves it, so the compressed
  // file fills whole 1 MiB blocks (and grows on the disk) long before the stream ends, and the
  // drain's samples (the head of a 1 MiB block) fall on text: the core is judged compressible.
  constexpr std::size_t kPiece = 64 * 1024;
  std::vector<std::byte> core(64 * kMebi);
  for (std::size_t at = 0; at < core.size(); at += 2 * kPiece) {
    fill_text(core, at, at + kPiece);
    fill_random(core, at + kPiece, at + 2 * kPiece, at);
  }
  for (const bool beside : {true, false}) {
    SCOPED_TRACE(beside ? "compress_while_streaming" : "after the stream");
    // stream_idle_timeout_ms: the hold below must not count as a stalled stream.
    start(std::string(R"({"stream_idle_timeout_ms": 600000, "compress_while_streaming": )") + (beside ? "true}" : "false}"));
    std::uint64_t compressed_out = 0;  // size of the compressed file while the stream was held
    bool seen = false;
    auto o = options();
    o.core = fk::CoreSource::from_buffer(core);
    // Held at 48 MiB: the compressor waits for the drain's verdict, two samples (taken as the
    // spool reaches 16 and 32 MiB), and looks at it again after each 8 MiB spooled, so it may
    // need 40 MiB in the spool before it starts.
    o.hook_stream_offset = 48 * kMebi;
    o.hook = [&](fk::Point point, int) {
      if (point != fk::Point::StreamOffset) return;
      const auto core_file_size = [&] {
        const auto sizes = unnamed_file_sizes(daemon_->pid(), store_);
        // The smaller of the two is the compressed core: the spool holds more than it was given.
        compressed_out = sizes.size() >= 2 ? *std::min_element(sizes.begin(), sizes.end()) : 0;
        return compressed_out;
      };
      seen = wait_until([&] { return core_file_size() >= kMebi; }, beside ? 60s : 3s);
    };
    o.timeout = std::chrono::milliseconds(180'000);  // the hold counts against the session's deadline
    const auto res = fk::run(o);
    ASSERT_TRUE(fk::task_released(res));
    const auto r = only_record();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->state, DumpState::Complete) << r->reason;
    EXPECT_EQ(r->compression, "zstd");
    const auto early = r->extra.value("compressed_while_streaming", std::uint64_t{0});
    if (beside) {
      EXPECT_TRUE(seen) << "no compressed output within 60 s while the stream was held at 48 MiB";
      // Output was on the disk before the stream went on, so at least as many input bytes were
      // compressed before the compressor saw the stream end.
      EXPECT_GE(early, compressed_out);
      EXPECT_GT(early, 0u);
    } else {
      EXPECT_FALSE(seen) << compressed_out << " bytes compressed while the stream was held";
      EXPECT_EQ(compressed_out, 0u);
      EXPECT_EQ(early, 0u);
    }
    EXPECT_TRUE(stored_core(*r) == core);
  }
}

// A core zstd cannot shrink (random bytes past its head) is kept as the drain spooled it: no
// compression, a raw "<id>.core" file that is the exact core. One that compresses (the same size of
// repetitive text) is stored as zstd.
TEST_F(FakeKernelDaemon, IncompressibleCoreIsStoredUncompressed) {
  constexpr std::size_t kMiB = 1 << 20;
  std::vector<std::byte> core(48 * kMiB);
  std::mt19937_64 gen(11);
  for (std::size_t i = 0; i < core.size(); i += 8) {
    const auto w = gen();
    std::memcpy(core.data() + i, &w, 8);
  }
  const auto r = dump_one(core);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->compression, "none");
  EXPECT_EQ(r->path, r->id + ".core");
  EXPECT_EQ(r->stored_size, core.size());
  EXPECT_GE(r->extra.value("compressibility_samples", 0), 2);
  const auto raw = read_file(store_ + "/" + r->path);
  ASSERT_TRUE(raw);
  EXPECT_TRUE(raw->size() == core.size() && std::memcmp(raw->data(), core.data(), core.size()) == 0)
      << "the stored file is the core, byte for byte";
  EXPECT_TRUE(stored_core(*r) == core) << "dumpctl dump reads it back";

  const std::string text = "pid 42 request handled in 17 ms; session token cache hit; ";
  for (std::size_t i = 0; i < core.size(); ++i) core[i] = static_cast<std::byte>(text[i % text.size()] + (i / 65536) % 3);
  auto o = options();
  o.core = fk::CoreSource::from_buffer(core);
  ASSERT_TRUE(fk::task_released(fk::run(o)));
  std::vector<DumpRecord> all;
  ASSERT_TRUE(wait_until(
      [&] {
        all = records();
        return all.size() == 2 && all[0].state != DumpState::InProgress && all[1].state != DumpState::InProgress;
      },
      15s));
  const auto& z = all[0].id == r->id ? all[1] : all[0];
  EXPECT_EQ(z.state, DumpState::Complete) << z.reason;
  EXPECT_EQ(z.compression, "zstd");
  EXPECT_EQ(z.path, z.id + ".zst");
  EXPECT_LT(z.stored_size, core.size() / 10);
  EXPECT_TRUE(stored_core(z) == core);
}

// A rule's own policy decides the size limit, WAIT and the environment, not the defaults: the
// rule matching this process cuts its core at max_core_bytes (flagged truncated, the first bytes
// kept exactly), asks for no WAIT (post_dump []) and keeps the environment; the defaults would
// have stored it whole, with WAIT, without the environment.
TEST_F(FakeKernelDaemon, RuleSizeLimitTruncatesAndRulePicksWaitAndEnviron) {
  std::string comm = read_file("/proc/self/comm").value();
  comm.pop_back();
  start(R"({"rules": [{"name": "small", "match": {"comm": ")" + comm + R"("}, "max_core_bytes": 65536,
                        "over_size": "truncate", "post_dump": [], "capture_environ": true}]})");
  auto o = options(256 * 1024);
  const auto res = fk::run(o);
  ASSERT_TRUE(fk::task_released(res));
  ASSERT_TRUE(res.ack);
  EXPECT_FALSE(res.ack->mask & cp::COREDUMP_WAIT) << "post_dump [] in the rule: no WAIT";
  EXPECT_EQ(res.bytes_streamed, o.core.size()) << "the kernel's stream is drained whole";
  const auto r = only_record();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->extra.value("rule", ""), "small");
  EXPECT_EQ(r->state, DumpState::Truncated) << r->reason;
  EXPECT_NE(r->reason.find("cut at max_core_bytes 65536"), std::string::npos) << r->reason;
  const auto core = stored_core(*r);
  ASSERT_TRUE(core);
  const auto whole = plain(o.core);
  ASSERT_EQ(core->size(), 65536u);
  EXPECT_TRUE(std::equal(core->begin(), core->end(), whole.begin())) << "the first max_core_bytes, unchanged";
  ASSERT_TRUE(r->extra.contains("environ"));
  EXPECT_FALSE(r->extra["environ"].empty());

  // Another comm: the defaults (whole core, WAIT, no environment).
  start(R"({"rules": [{"name": "other", "match": {"comm": "not-)" + comm + R"("}, "max_core_bytes": 65536,
                        "post_dump": [], "capture_environ": true}]})");
  const auto res2 = fk::run(options(256 * 1024));
  ASSERT_TRUE(fk::task_released(res2));
  EXPECT_TRUE(res2.ack->mask & cp::COREDUMP_WAIT);
  const auto r2 = only_record();
  ASSERT_TRUE(r2);
  EXPECT_EQ(r2->extra.value("rule", "?"), "");
  EXPECT_EQ(r2->state, DumpState::Complete) << r2->reason;
  EXPECT_EQ(r2->core_size, 256u * 1024);
  EXPECT_FALSE(r2->extra.contains("environ"));
}

// "over_size": "reject" refuses up front when the mappings alone are sure to exceed the limit: the
// kernel gets REJECT and streams nothing.
TEST_F(FakeKernelDaemon, RuleOverSizeRejectRefusesUpFront) {
  std::string comm = read_file("/proc/self/comm").value();
  comm.pop_back();
  start(R"({"rules": [{"name": "tiny", "match": {"comm": ")" + comm + R"("}, "max_core_bytes": 4096,
                        "over_size": "reject"}]})");
  const auto res = fk::run(options());
  EXPECT_EQ(res.outcome, fk::Outcome::Rejected) << res.error;
  EXPECT_EQ(res.bytes_streamed, 0u);
  const auto r = only_record();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->state, DumpState::Rejected);
  EXPECT_EQ(r->extra.value("rule", ""), "tiny");
  EXPECT_NE(r->reason.find("over max_core_bytes 4096"), std::string::npos) << r->reason;
  EXPECT_TRUE(r->path.empty());
}

// ---- Incompressible cores kept raw ("<id>.core", compression "none"): ways to break that path ----

// A core that starts random (the first two samples say "incompressible") and then turns to text:
// the later samples flip the verdict, the core is compressed from its first byte, and every byte
// comes back. The reverse (text, then random) is compressed as soon as the first samples say so.
// Either way the stored core is exact and verify reads it through.
TEST_F(FakeKernelDaemon, CoreChangingCompressibilityMidStreamIsStoredExactly) {
  std::vector<std::byte> core(120 * kMebi);
  fill_random(core, 0, 40 * kMebi, 21);
  fill_text(core, 40 * kMebi, core.size());
  auto r = dump_one(core);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->compression, "zstd") << "most samples (the text) compress";
  EXPECT_EQ(r->path, r->id + ".zst");
  EXPECT_GE(r->extra.value("compressibility_samples", 0), 3);
  EXPECT_LT(r->stored_size, 48 * kMebi);
  EXPECT_TRUE(stored_core(*r) == core) << "random then text: stored bytes differ";
  EXPECT_EQ(verify_problems(), "");

  start();
  fill_text(core, 0, 40 * kMebi);
  fill_random(core, 40 * kMebi, core.size(), 22);
  r = dump_one(core);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->compression, "zstd") << "the first samples (text) compress";
  EXPECT_TRUE(stored_core(*r) == core) << "text then random: stored bytes differ";
  EXPECT_EQ(verify_problems(), "");
}

// max_core_bytes cuts an incompressible core: the raw file holds exactly the limit, the record is
// truncated and says so, dumpctl gives back the exact prefix and verify --deep is clean.
TEST_F(FakeKernelDaemon, IncompressibleCoreCutAtMaxCoreBytesIsKeptRawAsTheExactPrefix) {
  constexpr std::uint64_t kLimit = 40 * kMebi + 12345;
  start(R"({"defaults": {"max_core_bytes": )" + std::to_string(kLimit) + R"(, "over_size": "truncate"}})");
  std::vector<std::byte> core(64 * kMebi);
  fill_random(core, 0, core.size(), 31);
  auto o = options();
  o.core = fk::CoreSource::from_buffer(core);
  const auto res = fk::run(o);
  ASSERT_TRUE(fk::task_released(res));
  EXPECT_EQ(res.bytes_streamed, core.size()) << "the kernel's stream is drained whole";
  const auto r = only_record();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->state, DumpState::Truncated) << r->reason;
  EXPECT_NE(r->reason.find("cut at max_core_bytes " + std::to_string(kLimit)), std::string::npos) << r->reason;
  EXPECT_EQ(r->compression, "none");
  EXPECT_EQ(r->path, r->id + ".core");
  EXPECT_EQ(r->core_size, core.size());
  EXPECT_EQ(r->stored_size, kLimit);
  EXPECT_EQ(r->extra.value("stored_core_bytes", std::uint64_t{0}), kLimit);
  const auto raw = read_file(store_ + "/" + r->path);
  ASSERT_TRUE(raw);
  EXPECT_EQ(raw->size(), kLimit);
  EXPECT_TRUE(stored_prefix_is(*r, kLimit, core));
  EXPECT_EQ(verify_problems(), "");
}

}  // namespace
