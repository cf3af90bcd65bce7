// The compressor runs at SCHED_IDLE while a core streams in (README.md: only CPU nothing else
// wants), with compress_while_streaming or without: the fake kernel stops its stream halfway and
// waits there until /proc shows the daemon's compressor thread ("cd-compress") in the idle class.
// After the stream, nice 10 is checked with a real crash (tests/e2e/promises_e2e_test.cc).
#include <sched.h>
#include <sys/resource.h>

#include <gtest/gtest.h>

#include <fstream>
#include <memory>

#include "store/index.h"
#include "tests/fake_kernel/fake_kernel.h"
#include "tests/support/test_support.h"
#include "tests/support/thread_sched.h"

using namespace coredumpd;
using namespace coredumpd::test;
namespace fk = coredumpd::fake_kernel;

namespace {

constexpr std::uint64_t kMebi = 1 << 20;

// Compresses a 32 MiB core whose stream pauses at 16 MiB until the compressor was seen at
// SCHED_IDLE (bounded: 30 s); returns whether it was, and expects the dump to be stored.
bool compressor_idle_while_streaming(const std::string& config) {
  TempDir dir;
  std::ofstream(dir / "config.json") << config;
  const std::string store = dir / "store";
  Daemon daemon(COREDUMPD_BIN, dir / "s", store, dir / "log",
                {"--allow-unverified-peers", "--config", dir / "config.json"});
  bool idle = false;
  std::string seen;
  fk::Options o;
  o.socket_path = dir / "s";
  o.core = fk::CoreSource::pattern(32 * kMebi, 3, 4096, 7, true);  // compressible: every third page data
  o.timeout = std::chrono::milliseconds(60'000);
  o.hook_stream_offset = 16 * kMebi;
  o.hook = [&](fk::Point at, int) {
    if (at != fk::Point::StreamOffset) return;
    idle = wait_until(
        [&] {
          const auto threads = threads_named(daemon.pid(), "cd-compress");
          seen = std::to_string(threads.size()) + " cd-compress thread(s), policies:";
          for (const auto& t : threads) seen += " " + std::to_string(t.policy);
          return threads.size() == 1 && threads[0].policy == SCHED_IDLE;
        },
        30s);
  };
  const auto res = fk::run(o);
  EXPECT_EQ(res.outcome, fk::Outcome::Dumped) << res.error;
  EXPECT_TRUE(idle) << "while the stream stood still at 16 MiB: " << seen << "\n" << daemon.log();
  std::optional<DumpRecord> rec;
  wait_until(
      [&] {
        try {
          const auto all = Index(store, false).list();
          if (all.size() == 1 && all[0].state != DumpState::InProgress) rec = all[0];
        } catch (const IndexError&) {
        }
        return rec.has_value();
      },
      30s);
  EXPECT_TRUE(rec && rec->state == DumpState::Complete) << (rec ? rec->reason : "no record") << "\n" << daemon.log();
  EXPECT_EQ(daemon.stop().exit_code(), 0) << daemon.log();
  return idle;
}

}  // namespace

TEST(CompressPriority, CompressorIsIdleClassWhileTheCoreStreamsIn) {
  ScopedCoreLimit core_limit(RLIM_INFINITY);  // the fake kernel's peer is this process
  EXPECT_TRUE(compressor_idle_while_streaming(R"({"compress_while_streaming": true})"));
  EXPECT_TRUE(compressor_idle_while_streaming(R"({"compress_while_streaming": false})"));
}
