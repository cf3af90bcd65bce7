// Unit tests of the kept spool (daemon/dump/spool_recovery.h): the manifest's format and what it
// refuses, what keeping a spool leaves in the store, storing a kept spool as the dump would have
// (zstd or raw, holes included), and the start-up scan: what it recovers, what it removes.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <boost/asio/thread_pool.hpp>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "daemon/dump/core_writer.h"
#include "daemon/dump/dump_context.h"
#include "daemon/dump/spool.h"
#include "tests/unit/scratch_dir.h"
#include "daemon/dump/spool_recovery.h"
#include "daemon/policy/config.h"
#include "store/core_stream.h"
#include "store/index.h"
#include "store/record_extras.h"

using namespace coredumpd;

namespace {

const std::string kId = "0123456789abcdef0123456789abcdef";

class SpoolRecoveryTest : public ::testing::Test {
 protected:

  // A core of data, a 3 MiB zero run (a hole in the spool), data, and 100 KiB of trailing zeros.
  static std::vector<std::byte> sample_core() {
    std::vector<std::byte> core((1 << 20) + 12345 + (3 << 20) + 777777 + 100 * 1024);
    std::mt19937 gen(7);
    auto fill = [&](std::size_t from, std::size_t to) {
      for (std::size_t i = from; i < to; ++i) core[i] = static_cast<std::byte>(gen() % 16);  // compressible
    };
    fill(0, (1 << 20) + 12345);
    fill((1 << 20) + 12345 + (3 << 20), core.size() - 100 * 1024);
    return core;
  }

  // Spools `core` as the drain does and keeps it under `m`; returns keep_spool_for_recovery's error.
  std::string keep(const std::vector<std::byte>& core, const SpoolManifest& m) {
    Spool spool(dirfd_);
    std::size_t i = 0;
    while (i < core.size()) {  // zero runs of a whole block as ZERO records would come
      std::size_t j = i;
      while (j < core.size() && core[j] == std::byte{0}) ++j;
      if (j - i >= Spool::kBlockBytes) {
        spool.append_zeros(j - i);
        i = j;
        continue;
      }
      const std::size_t n = std::min(core.size() - i, std::max<std::size_t>(j - i, 1) + 4096);
      spool.append(std::span(core.data() + i, n));
      i += n;
    }
    spool.flush();
    auto error = keep_spool_for_recovery(spool, dirfd_, m);
    spool.close_input();
    return error;
  }

  SpoolManifest manifest(std::uint64_t size) const {
    SpoolManifest m;
    m.id = kId;
    m.received = m.spooled = size;
    m.level = 5;
    m.signal = 11;
    m.crashing_tid_ns = 42;
    m.extra = {{"stream_us", 1234}};
    return m;
  }

  bool exists(const std::string& name) const { return ::faccessat(dirfd_, name.c_str(), F_OK, 0) == 0; }

  std::vector<std::byte> read_core(const std::string& name, std::string_view compression) const {
    const int fd = ::openat(dirfd_, name.c_str(), O_RDONLY | O_CLOEXEC);
    EXPECT_GE(fd, 0) << name;
    std::vector<std::byte> out;
    if (fd < 0) return out;
    stream_core(fd, compression, [&](const char* p, std::size_t n) {
      out.insert(out.end(), reinterpret_cast<const std::byte*>(p), reinterpret_cast<const std::byte*>(p) + n);
    });
    ::close(fd);
    return out;
  }

  test::ScratchDir scratch_{"coredumpd-recovery"};
  const std::string dir_ = scratch_.path();
  const int dirfd_ = scratch_.fd();
};

TEST_F(SpoolRecoveryTest, ManifestRoundTrips) {
  SpoolManifest m = manifest(1000);
  m.state = DumpState::Truncated;
  m.reason = "core stream stalled for 5000 ms";
  m.uncompressed = true;
  std::string error;
  const auto back = manifest_from_json(manifest_to_json(m), error);
  ASSERT_TRUE(back) << error;
  EXPECT_EQ(back->id, m.id);
  EXPECT_EQ(back->received, 1000u);
  EXPECT_EQ(back->spooled, 1000u);
  EXPECT_EQ(back->state, DumpState::Truncated);
  EXPECT_EQ(back->reason, m.reason);
  EXPECT_TRUE(back->uncompressed);
  EXPECT_EQ(back->level, 5);
  EXPECT_EQ(back->signal, 11);
  EXPECT_EQ(back->crashing_tid_ns, 42);
  EXPECT_EQ(back->extra, m.extra);
  m.signal.reset();
  const auto no_signal = manifest_from_json(manifest_to_json(m), error);
  ASSERT_TRUE(no_signal) << error;
  EXPECT_FALSE(no_signal->signal);
}

TEST_F(SpoolRecoveryTest, ManifestRefusesWhatItDidNotWrite) {
  const auto good = manifest_to_json(manifest(1000));
  auto refused = [](nlohmann::json j) {
    std::string error;
    const bool ok = manifest_from_json(j, error).has_value();
    return !ok && !error.empty();
  };
  auto with = [&](const char* key, nlohmann::json v) {
    auto j = good;
    j[key] = v;
    return j;
  };
  auto without = [&](const char* key) {
    auto j = good;
    j.erase(key);
    return j;
  };
  std::string error;
  EXPECT_TRUE(manifest_from_json(good, error)) << error;
  EXPECT_TRUE(refused(with("format", 2)));
  EXPECT_TRUE(refused(with("id", "../index.sqlite")));
  EXPECT_TRUE(refused(with("id", kId + "0")));
  EXPECT_TRUE(refused(with("state", "interrupted")));
  EXPECT_TRUE(refused(with("state", "stored")));
  EXPECT_TRUE(refused(with("spooled", 1001)));
  EXPECT_TRUE(refused(with("extra", 3)));
  EXPECT_TRUE(refused(with("received", "1000")));
  EXPECT_TRUE(refused(without("spooled")));
  EXPECT_TRUE(refused(without("uncompressed")));
  EXPECT_TRUE(refused(nlohmann::json::parse("{\"format\": 1", nullptr, false)));  // cut short: discarded
}

TEST_F(SpoolRecoveryTest, KeptSpoolHoldsTheWholeCoreAndItsManifest) {
  const auto core = sample_core();
  ASSERT_EQ(keep(core, manifest(core.size())), "");
  ASSERT_TRUE(exists(spool_file_name(kId)));
  ASSERT_TRUE(exists(manifest_file_name(kId)));
  EXPECT_FALSE(exists(manifest_file_name(kId) + ".tmp"));
  struct stat st {};
  ASSERT_EQ(::fstatat(dirfd_, spool_file_name(kId).c_str(), &st, 0), 0);
  EXPECT_EQ(static_cast<std::uint64_t>(st.st_size), core.size());  // the trailing zeros too
  EXPECT_LT(static_cast<std::uint64_t>(st.st_blocks) * 512, core.size() - (3 << 20) + (1 << 20));  // the run is a hole
  EXPECT_EQ(read_core(spool_file_name(kId), kCompressionNone), core);
  std::ifstream in(dir_ + "/" + manifest_file_name(kId));
  std::string error;
  const auto m = manifest_from_json(nlohmann::json::parse(in), error);
  ASSERT_TRUE(m) << error;
  EXPECT_EQ(m->spooled, core.size());
  EXPECT_EQ(m->signal, 11);

  forget_kept_spool(dirfd_, kId);
  EXPECT_FALSE(exists(spool_file_name(kId)));
  EXPECT_FALSE(exists(manifest_file_name(kId)));
}

// The manifest cannot be written (here: a directory in the way of its temporary name): no
// manifest, so no restart takes the spool for a whole core, and the spool can still be kept as
// the raw core (a linked O_TMPFILE file once unlinked could never be linked again).
TEST_F(SpoolRecoveryTest, AFailedManifestLeavesTheSpoolUsable) {
  const auto core = sample_core();
  ASSERT_EQ(::mkdirat(dirfd_, (manifest_file_name(kId) + ".tmp").c_str(), 0700), 0);
  Spool spool(dirfd_);
  spool.append(core);
  spool.flush();
  EXPECT_NE(keep_spool_for_recovery(spool, dirfd_, manifest(core.size())), "");
  spool.close_input();
  EXPECT_FALSE(exists(manifest_file_name(kId)));
  EXPECT_EQ(spool.persist(dirfd_, kId + ".core"), core.size());
  EXPECT_EQ(read_core(kId + ".core", kCompressionNone), core);
  forget_kept_spool(dirfd_, kId);
  EXPECT_FALSE(exists(spool_file_name(kId)));
  EXPECT_TRUE(exists(kId + ".core"));
}

TEST_F(SpoolRecoveryTest, StoredCompressedAtTheManifestsLevelDecompressesToTheCore) {
  const auto core = sample_core();
  ASSERT_EQ(keep(core, manifest(core.size())), "");
  // A file of the core's name left by the crash (never indexed) is replaced.
  std::ofstream(dir_ + "/" + kId + ".zst") << "stale";
  const auto stored = store_kept_spool(dirfd_, manifest(core.size()), CompressionOptions{1, 0, true});
  struct stat st {};
  ASSERT_EQ(::fstatat(dirfd_, (kId + ".zst").c_str(), &st, 0), 0);
  EXPECT_EQ(static_cast<std::uint64_t>(st.st_size), stored);
  EXPECT_LT(stored, core.size() / 2);
  EXPECT_EQ(st.st_mode & 07777, kCoreFileMode);
  EXPECT_EQ(read_core(kId + ".zst", kCompressionZstd), core);
}

TEST_F(SpoolRecoveryTest, StoredUncompressedIsTheSpoolAsTheRawCore) {
  const auto core = sample_core();
  auto m = manifest(core.size());
  m.uncompressed = true;
  ASSERT_EQ(keep(core, m), "");
  EXPECT_EQ(store_kept_spool(dirfd_, m, CompressionOptions{}), core.size());
  struct stat st {};
  ASSERT_EQ(::fstatat(dirfd_, (kId + ".core").c_str(), &st, 0), 0);
  EXPECT_EQ(st.st_mode & 07777, kCoreFileMode);
  EXPECT_EQ(read_core(kId + ".core", kCompressionNone), core);
  EXPECT_FALSE(exists(kId + ".zst"));
}

TEST_F(SpoolRecoveryTest, ASpoolShorterThanItsManifestIsRefused) {
  const auto core = sample_core();
  ASSERT_EQ(keep(core, manifest(core.size())), "");
  ASSERT_EQ(::truncate((dir_ + "/" + spool_file_name(kId)).c_str(), 4096), 0);
  EXPECT_THROW(store_kept_spool(dirfd_, manifest(core.size()), CompressionOptions{1, 0, true}), StoreError);
  EXPECT_FALSE(exists(kId + ".zst"));
  ASSERT_EQ(::unlinkat(dirfd_, spool_file_name(kId).c_str(), 0), 0);
  EXPECT_THROW(store_kept_spool(dirfd_, manifest(core.size()), CompressionOptions{1, 0, true}), StoreError);
}

// The start-up scan against an index: a kept spool of an interrupted dump is stored and its record
// completed and marked recovered; a spool without manifest, a manifest of a dump already stored
// and a bad manifest are removed.
TEST_F(SpoolRecoveryTest, StartUpRecoversWhatCanBeFinishedAndRemovesTheRest) {
  const auto core = sample_core();
  ASSERT_EQ(keep(core, manifest(core.size())), "");
  Index index(dir_, true);
  DumpRecord r;
  r.id = kId;
  r.pid = 4242;
  r.comm = "victim";
  r.state = DumpState::InProgress;
  r.compression = "zstd";
  r.path = kId + ".zst";
  index.insert(r);
  ASSERT_EQ(index.mark_in_progress_interrupted("coredumpd stopped while this dump was in progress"), 1);

  const std::string done_id = "fedcba9876543210fedcba9876543210";  // stored, then stopped before the names went
  DumpRecord done = r;
  done.id = done_id;
  done.state = DumpState::Complete;
  index.insert(done);
  auto dm = manifest(10);
  dm.id = done_id;
  std::ofstream(dir_ + "/" + manifest_file_name(done_id)) << manifest_to_json(dm).dump();
  std::ofstream(dir_ + "/" + spool_file_name(done_id)) << "0123456789";
  std::ofstream(dir_ + "/" + spool_file_name("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa")) << "no manifest";
  std::ofstream(dir_ + "/" + manifest_file_name("bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb")) << "{not json";

  boost::asio::thread_pool dumps(1), compressors(1);
  ArenaPool memory(Spool::kArenaBytes, 0);
  Stats stats;
  DumpContext ctx(dumps, compressors, memory, index, dirfd_, stats);
  Config config;
  config.compression.threads = 0;
  std::atomic<int> in_flight{0};
  start_spool_recovery(ctx, config, in_flight);
  EXPECT_FALSE(exists(spool_file_name(done_id)));
  EXPECT_FALSE(exists(manifest_file_name(done_id)));
  EXPECT_FALSE(exists(spool_file_name("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa")));
  EXPECT_FALSE(exists(manifest_file_name("bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb")));
  compressors.join();
  EXPECT_EQ(in_flight.load(), 0);

  const auto back = index.get(kId);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->state, DumpState::Complete) << back->reason;
  EXPECT_EQ(back->reason, "");
  EXPECT_EQ(back->core_size, core.size());
  EXPECT_EQ(back->signal, 11);
  EXPECT_EQ(back->crashing_tid_ns, 42);
  EXPECT_EQ(back->comm, "victim");  // the handshake's metadata stays
  EXPECT_EQ(back->extra.value("stream_us", 0), 1234);
  ASSERT_TRUE(back->extra.contains(extras::kRecovered));
  EXPECT_EQ(back->extra[extras::kRecovered].value("spooled", 0ULL), core.size());
  EXPECT_EQ(read_core(back->path, back->compression), core);
  struct stat st {};
  ASSERT_EQ(::fstatat(dirfd_, back->path.c_str(), &st, 0), 0);
  EXPECT_EQ(static_cast<std::uint64_t>(st.st_size), back->stored_size);
  EXPECT_FALSE(exists(spool_file_name(kId)));
  EXPECT_FALSE(exists(manifest_file_name(kId)));
  EXPECT_EQ(stats.get(Outcome::Stored), 1u);
  EXPECT_EQ(index.get(done_id)->state, DumpState::Complete);
}

// A truncated stream (the kept bytes are all the kernel sent before it stopped) is recovered as
// Truncated, with its reason and the bytes kept.
TEST_F(SpoolRecoveryTest, ATruncatedDumpIsRecoveredAsTruncated) {
  const auto core = sample_core();
  auto m = manifest(core.size());
  m.received = core.size() + 4096;
  m.state = DumpState::Truncated;
  m.reason = "core of N bytes cut at max_core_bytes";
  ASSERT_EQ(keep(core, m), "");
  Index index(dir_, true);
  DumpRecord r;
  r.id = kId;
  r.state = DumpState::Interrupted;
  index.insert(r);
  boost::asio::thread_pool dumps(1), compressors(1);
  ArenaPool memory(Spool::kArenaBytes, 0);
  Stats stats;
  DumpContext ctx(dumps, compressors, memory, index, dirfd_, stats);
  std::atomic<int> in_flight{0};
  start_spool_recovery(ctx, Config{}, in_flight);
  compressors.join();
  const auto back = index.get(kId);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->state, DumpState::Truncated);
  EXPECT_EQ(back->reason, m.reason);
  EXPECT_EQ(back->core_size, core.size() + 4096);
  EXPECT_EQ(back->extra.value(extras::kStoredCoreBytes, 0ULL), core.size());
  EXPECT_EQ(read_core(back->path, back->compression), core);
  EXPECT_EQ(stats.get(Outcome::Truncated), 1u);
}

}  // namespace
