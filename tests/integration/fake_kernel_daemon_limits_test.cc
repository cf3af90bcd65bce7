// Integration tests: raw cores against max_core_bytes, killed tasks, max_use and a full store,
// driven by the fake kernel (fixture: fake_kernel_daemon_fixture.h).
#include <gtest/gtest.h>

#include "tests/integration/fake_kernel_daemon_fixture.h"

using namespace coredumpd;
using namespace coredumpd::test;

namespace {

// The raw-or-zstd verdict is about the bytes that are stored. Past max_core_bytes the drain reads
// (and discards) the rest of the stream; those chunks must not be compressibility samples: here
// the kept 38 MiB are random (two samples say so), the discarded tail is text, and the core must
// be kept raw, not compressed because of bytes that are thrown away.
TEST_F(FakeKernelDaemon, BytesPastMaxCoreBytesDoNotDecideTheFormat) {
  constexpr std::uint64_t kLimit = 38 * kMebi;
  start(R"({"defaults": {"max_core_bytes": )" + std::to_string(kLimit) + R"(, "over_size": "truncate"}})");
  std::vector<std::byte> core(112 * kMebi);
  fill_random(core, 0, 48 * kMebi, 41);
  fill_text(core, 48 * kMebi, core.size());
  const auto r = dump_one(core, DumpState::Truncated);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->compression, "none") << "the stored 38 MiB are random; samples: " << r->extra.value("compressibility_samples", 0);
  EXPECT_EQ(r->extra.value("compressibility_samples", 0), 2) << "only probes of stored bytes are samples";
  EXPECT_TRUE(stored_prefix_is(*r, kLimit, core));
  EXPECT_EQ(verify_problems(), "");
}

// The task is killed mid-dump after the raw verdict. A plain stream has no END record, so the
// daemon sees an ordinary EOF: the bytes that came (50 MiB, not a multiple of any probe step) are
// kept raw as a complete core, exactly, and verify --deep agrees with the record.
TEST_F(FakeKernelDaemon, IncompressibleCoreCutByAKilledTaskKeepsWhatCameRaw) {
  std::vector<std::byte> core(64 * kMebi);
  fill_random(core, 0, core.size(), 51);
  auto o = options();
  o.core = fk::CoreSource::from_buffer(core);
  o.kill_after_bytes = 50 * kMebi + 4321;
  const auto res = fk::run(o);
  EXPECT_EQ(res.outcome, fk::Outcome::Killed) << res.error;
  const auto r = only_record();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->state, DumpState::Complete) << r->reason;
  EXPECT_EQ(r->compression, "none");
  EXPECT_EQ(r->path, r->id + ".core");
  EXPECT_EQ(r->core_size, res.bytes_streamed);
  EXPECT_EQ(r->stored_size, r->core_size);
  EXPECT_GE(r->core_size, 50 * kMebi);
  EXPECT_LT(r->core_size, core.size());
  EXPECT_TRUE(stored_prefix_is(*r, r->core_size, core));
  EXPECT_EQ(verify_problems(), "");
}

// Two samples are needed for a verdict (kMinSamples). The probes are every 16th 1 MiB block of the
// spool, the ones that end at 16 and 32 MiB: a random core of 31 MiB gets one sample (no verdict:
// compressed), one of 33 MiB exactly two (kept raw).
TEST_F(FakeKernelDaemon, RawVerdictNeedsTwoSamples) {
  std::vector<std::byte> core(31 * kMebi);
  fill_random(core, 0, core.size(), 61);
  auto r = dump_one(core);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->extra.value("compressibility_samples", -1), 1);
  EXPECT_EQ(r->compression, "zstd");
  EXPECT_TRUE(stored_core(*r) == core);

  start();
  core.resize(33 * kMebi);
  fill_random(core, 0, core.size(), 62);
  r = dump_one(core);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->extra.value("compressibility_samples", -1), 2);
  EXPECT_EQ(r->compression, "none");
  EXPECT_EQ(r->stored_size, core.size());
  EXPECT_TRUE(stored_core(*r) == core);
  EXPECT_EQ(verify_problems(), "");
}

// A random core with long zero runs (untouched memory), one of them at its very end: probes that
// land in zeros are no samples (the drain goes on reading, leaving holes), the core is still kept
// raw, the file is as long as the core (it ends in a hole) and reads back exactly.
TEST_F(FakeKernelDaemon, RawCoreWithZeroRunsAndATrailingHoleIsExact) {
  std::vector<std::byte> core(100 * kMebi);  // zero-initialised
  fill_random(core, 0, 20 * kMebi, 71);
  fill_random(core, 44 * kMebi, 60 * kMebi, 72);
  fill_random(core, 61 * kMebi, 70 * kMebi, 73);
  auto o = options();
  o.core = fk::CoreSource::from_buffer(core);
  ASSERT_TRUE(fk::task_released(fk::run(o)));
  const auto r = only_record();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->state, DumpState::Complete) << r->reason;
  EXPECT_EQ(r->compression, "none") << "samples: " << r->extra.value("compressibility_samples", 0);
  EXPECT_EQ(r->stored_size, core.size());
  const auto raw = read_file(store_ + "/" + r->path);
  ASSERT_TRUE(raw);
  EXPECT_EQ(raw->size(), core.size()) << "the trailing zero run must be part of the file";
  struct stat sb {};
  ASSERT_EQ(::stat((store_ + "/" + r->path).c_str(), &sb), 0);
  EXPECT_LE(static_cast<std::uint64_t>(sb.st_blocks) * 512, 46 * kMebi) << "45 MiB of data; the zero runs are holes";
  EXPECT_TRUE(raw->size() == core.size() && std::memcmp(raw->data(), core.data(), core.size()) == 0);
  EXPECT_TRUE(stored_core(*r) == core);
  EXPECT_EQ(verify_problems(), "");
}

// Raw and compressed dumps at once: each has its own sampler and gets its own format.
TEST_F(FakeKernelDaemon, ConcurrentRawAndCompressedDumpsEachGetTheirFormat) {
  std::vector<std::byte> random(40 * kMebi), text(40 * kMebi);
  fill_random(random, 0, random.size(), 81);
  fill_text(text, 0, text.size());
  std::vector<std::thread> threads;
  std::atomic<int> dumped{0};
  for (int i = 0; i < 6; ++i)
    threads.emplace_back([&, i] {
      auto o = options();
      o.core = fk::CoreSource::from_buffer(i % 2 == 0 ? random : text);
      o.timeout = std::chrono::milliseconds(60'000);
      if (fk::task_released(fk::run(o))) ++dumped;
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(dumped, 6);
  const auto all = settled_records(6, 60s);
  ASSERT_EQ(all.size(), 6u);
  int raw = 0, zstd = 0;
  for (const auto& r : all) {
    EXPECT_EQ(r.state, DumpState::Complete) << r.reason;
    const auto back = stored_core(r);
    ASSERT_TRUE(back) << r.id;
    if (r.compression == "none") {
      ++raw;
      EXPECT_TRUE(*back == random) << r.id;
    } else {
      ++zstd;
      EXPECT_TRUE(*back == text) << r.id;
    }
  }
  EXPECT_EQ(raw, 3);
  EXPECT_EQ(zstd, 3);
  EXPECT_EQ(verify_problems(), "");
}

// retention.max_use counts raw cores at their full size: the third 40 MiB raw core pushes the
// store over 100 MiB and the oldest ".core" goes (file deleted, row marked vacuumed), the newer
// ones stay, and verify is clean.
TEST_F(FakeKernelDaemon, MaxUseEvictsTheOldestRawCore) {
  start(R"({"retention": {"max_use": "100M"}})");
  std::vector<std::string> ids;
  for (int i = 0; i < 3; ++i) {
    std::vector<std::byte> core(40 * kMebi);
    fill_random(core, 0, core.size(), 90 + static_cast<std::uint64_t>(i));
    auto o = options();
    o.core = fk::CoreSource::from_buffer(core);
    ASSERT_TRUE(fk::task_released(fk::run(o)));
    const auto all = settled_records(static_cast<std::size_t>(i) + 1);
    ASSERT_EQ(all.size(), static_cast<std::size_t>(i) + 1);
    for (const auto& r : all)
      if (std::find(ids.begin(), ids.end(), r.id) == ids.end()) {
        EXPECT_EQ(r.compression, "none");
        ids.push_back(r.id);
      }
  }
  ASSERT_EQ(ids.size(), 3u);
  // The vacuum after the third store runs after its row is final: wait for it (bounded).
  std::optional<DumpRecord> oldest;
  wait_until(
      [&] {
        oldest = Index(store_, false).get(ids[0]);
        return oldest && oldest->path.empty();
      },
      15s);
  ASSERT_TRUE(oldest);
  EXPECT_TRUE(oldest->path.empty()) << "the oldest raw core was not evicted";
  EXPECT_EQ(oldest->extra["vacuumed"].value("reason", ""), "max_use") << oldest->extra.dump();
  EXPECT_EQ(oldest->extra["vacuumed"].value("path", ""), ids[0] + ".core");
  auto files = store_files();
  std::sort(files.begin(), files.end());
  std::vector<std::string> want{ids[1] + ".core", ids[2] + ".core"};
  std::sort(want.begin(), want.end());
  EXPECT_EQ(files, want);
  EXPECT_EQ(verify_problems(), "");
}

// A raw core that fills its filesystem to the last page: the spool fits, the core is linked, and
// then the index must still say what became of it. Here the store is on a tmpfs and, while the
// kernel pauses at 40 MiB (after the raw verdict), a filler file takes all free space but what
// the rest of the core needs. Whatever the outcome, the row must not stay "in progress" while
// the daemon runs, and what is in the store must agree with the index (verify clean).
TEST_F(FakeKernelDaemon, RawCoreFillingTheStoreToTheLastPageLeavesAConsistentStore) {
  const std::string fs_dir = *dir_ / "fs";
  std::filesystem::create_directories(fs_dir);
  if (::mount("tmpfs", fs_dir.c_str(), "tmpfs", 0, "size=96m,mode=0750") != 0) GTEST_SKIP() << "cannot mount a tmpfs";
  struct Unmount {
    std::string dir;
    ~Unmount() { ::umount2(dir.c_str(), MNT_DETACH); }
  } unmount{fs_dir};
  daemon_.reset();
  store_ = fs_dir + "/store";
  // To the last page: without the default keep_free (15 %), which would cut the core before.
  std::ofstream(*dir_ / "config.json") << R"({"retention": {"keep_free": null, "max_use": null}})";
  daemon_ = std::make_unique<Daemon>(COREDUMPD_BIN, socket_, store_, *dir_ / "log2",
                                     std::vector<std::string>{"--allow-unverified-peers", "--config", *dir_ / "config.json"});
  std::vector<std::byte> core(64 * kMebi);
  fill_random(core, 0, core.size(), 101);
  constexpr std::uint64_t kPause = 40 * kMebi;
  auto o = options();
  o.core = fk::CoreSource::from_buffer(core);
  o.timeout = std::chrono::milliseconds(60'000);
  o.hook_stream_offset = kPause;
  bool filled = false;
  o.hook = [&](fk::Point p, int) {
    if (p != fk::Point::StreamOffset) return;
    if (!wait_until([&] { return largest_spool_of(daemon_->pid(), store_) == kPause; }, 20s)) return;
    struct statvfs sv {};
    if (::statvfs(fs_dir.c_str(), &sv) != 0) return;
    const std::uint64_t free_bytes = static_cast<std::uint64_t>(sv.f_bavail) * sv.f_frsize;
    const std::uint64_t need = core.size() - kPause;
    if (free_bytes <= need) return;
    const int fd = ::open((fs_dir + "/filler").c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
    filled = fd >= 0 && ::fallocate(fd, 0, 0, static_cast<off_t>(free_bytes - need)) == 0;
    if (fd >= 0) ::close(fd);
  };
  const auto res = fk::run(o);
  ASSERT_TRUE(filled) << "could not leave exactly the rest of the core free";
  EXPECT_TRUE(fk::task_released(res));
  EXPECT_EQ(res.wait_end, fk::WaitEnd::Eof) << "the task was released";
  std::vector<DumpRecord> all;
  const bool settled = wait_until(
      [&] {
        all = records();
        return all.size() == 1 && all[0].state != DumpState::InProgress;
      },
      15s);
  ASSERT_EQ(all.size(), 1u);
  EXPECT_TRUE(settled) << "the row is still in progress; files: " << ::testing::PrintToString(store_files());
  const auto& r = all[0];
  if (r.state == DumpState::Complete) {  // recorded after all: the file is the exact core
    EXPECT_EQ(store_files(), std::vector<std::string>{r.id + ".core"});
    EXPECT_TRUE(stored_core(r) == core);
  } else {  // failed, with the reason, and nothing left behind
    EXPECT_EQ(r.state, DumpState::Failed) << r.reason;
    // Either the index could not record the linked core, or the spool met the full disk first:
    // under load the index's own writes (its WAL) can take the last pages before the core's end.
    const bool index_full = r.reason.find("index") != std::string::npos;
    const bool spool_full = r.reason.find(std::strerror(ENOSPC)) != std::string::npos;
    EXPECT_TRUE(index_full || spool_full) << r.reason;
    EXPECT_TRUE(r.path.empty());
    EXPECT_EQ(store_files(), std::vector<std::string>{}) << "the unrecorded core must not stay";
  }
  EXPECT_EQ(verify_problems(), "");
  daemon_.reset();  // before the tmpfs goes
}

}  // namespace
