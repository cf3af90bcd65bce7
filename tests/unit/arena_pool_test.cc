// Unit tests of the memory behind the spools' blocks: regions on huge or small pages, and the pool
// that keeps a few warm between dumps (a spool gives its blocks back when its input is closed).
#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <set>
#include <vector>
#include <span>
#include <string>
#include <thread>

#include "daemon/dump/arena_pool.h"
#include "daemon/dump/block_writer.h"
#include "daemon/dump/spool.h"

using namespace coredumpd;

namespace {

constexpr std::size_t kMiB = 1 << 20;

bool have_thp() { return std::filesystem::exists("/sys/kernel/mm/transparent_hugepage"); }

// The line starting with `key` of the mapping that starts at `p` in /proc/self/smaps; nullopt if
// no mapping starts there.
std::optional<std::string> smaps_line(const void* p, const std::string& key) {
  std::ifstream smaps("/proc/self/smaps");
  char start[32];
  std::snprintf(start, sizeof start, "%lx-", static_cast<unsigned long>(reinterpret_cast<std::uintptr_t>(p)));
  bool in_region = false;
  for (std::string line; std::getline(smaps, line);) {
    if (line.rfind(start, 0) == 0) in_region = true;
    else if (in_region && line.rfind(key, 0) == 0) return line;
  }
  return std::nullopt;
}

// The VmFlags line of the mapping that starts at `p`, with a trailing space (" hg " finds a flag).
std::optional<std::string> vm_flags(const void* p) {
  auto line = smaps_line(p, "VmFlags:");
  return line ? std::optional(*line + " ") : std::nullopt;
}

// Resident bytes of the mapping that starts at `p` (smaps "Rss:"); -1 if none starts there.
long long resident_bytes(const void* p) {
  const auto line = smaps_line(p, "Rss:");
  return line ? std::stoll(line->substr(4)) * 1024 : -1;
}

}  // namespace

// Huge: 2 MiB-aligned, whole huge pages, zero-filled, movable, advised for transparent huge pages
// (VmFlags "hg" of its mapping).
TEST(AnonRegion, HugePagesAreAlignedZeroedAndAdvised) {
  if (!have_thp()) GTEST_SKIP() << "kernel without transparent huge pages: MADV_HUGEPAGE is refused (and ignored)";
  AnonRegion region(5 * kMiB, PageSize::Huge);
  ASSERT_NE(region.data(), nullptr);
  EXPECT_EQ(region.size(), 6 * kMiB) << "rounded up to whole 2 MiB pages";
  EXPECT_EQ(region.pages(), PageSize::Huge);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(region.data()) % (2 * kMiB), 0u);
  EXPECT_TRUE(all_zero(std::span(region.data(), region.size())));
  std::memset(region.data(), 0xab, region.size());  // all of it is ours to write
  const auto flags = vm_flags(region.data());
  ASSERT_TRUE(flags) << "a mapping of its own starts at the region";
  EXPECT_NE(flags->find(" hg "), std::string::npos) << *flags;
  AnonRegion moved = std::move(region);
  EXPECT_EQ(region.data(), nullptr);
  EXPECT_EQ(moved.size(), 6 * kMiB);
  EXPECT_EQ(moved.pages(), PageSize::Huge);
  moved.reset();
  EXPECT_EQ(moved.data(), nullptr);
  EXPECT_EQ(AnonRegion(0, PageSize::Huge).data(), nullptr);
}

// Small: rounded to 4 KiB only, zero-filled, and kept off huge pages even under THP "always"
// (VmFlags "nh"), since a fresh huge page is what costs a host fault here (arena_pool.h).
TEST(AnonRegion, SmallPagesAreAdvisedAgainstHugePages) {
  AnonRegion region(5 * kMiB + 1, PageSize::Small);
  ASSERT_NE(region.data(), nullptr);
  EXPECT_EQ(region.size(), 5 * kMiB + 4096);
  EXPECT_EQ(region.pages(), PageSize::Small);
  EXPECT_TRUE(all_zero(std::span(region.data(), region.size())));
  std::memset(region.data(), 0xcd, region.size());
  if (!have_thp()) return;
  const auto flags = vm_flags(region.data());
  ASSERT_TRUE(flags);
  EXPECT_NE(flags->find(" nh "), std::string::npos) << *flags;
}

// prefault() makes every page resident (nothing is until then), so no later access faults.
TEST(AnonRegion, PrefaultMakesEveryPageResident) {
  AnonRegion region(4 * kMiB, PageSize::Small);
  EXPECT_EQ(resident_bytes(region.data()), 0);
  region.prefault();
  EXPECT_EQ(resident_bytes(region.data()), static_cast<long long>(region.size()));
  EXPECT_TRUE(all_zero(std::span(region.data(), region.size())));
}

// An empty pool maps a new small-page region per acquire(); given back, it is kept up to `keep`,
// and handed out again (the same memory, with what was written in it: no fault, no zeroing).
TEST(ArenaPool, KeepsUpToKeepRegionsAndHandsThemOutAgain) {
  ArenaPool pool(3 * kMiB, 2);
  EXPECT_EQ(pool.idle(), 0u);
  AnonRegion a = pool.acquire(), b = pool.acquire(), c = pool.acquire();
  for (const auto* r : {&a, &b, &c}) {
    ASSERT_NE(r->data(), nullptr);
    EXPECT_GE(r->size(), 3 * kMiB);
    EXPECT_EQ(r->pages(), PageSize::Small) << "no fresh huge page on the dump path";
  }
  a.data()[0] = std::byte{7};
  std::byte* const a_data = a.data();
  pool.give_back(std::move(a));
  pool.give_back(std::move(b));
  pool.give_back(std::move(c));  // over `keep`: unmapped
  EXPECT_EQ(pool.idle(), 2u);
  AnonRegion again = pool.acquire();
  AnonRegion other = pool.acquire();
  EXPECT_TRUE(again.data() == a_data || other.data() == a_data) << "a kept region is reused";
  EXPECT_EQ((again.data() == a_data ? again : other).data()[0], std::byte{7}) << "not remapped";
  EXPECT_EQ(pool.idle(), 0u);
  pool.give_back(AnonRegion(kMiB, PageSize::Small));  // too small for this pool: ignored
  pool.give_back(AnonRegion());
  EXPECT_EQ(pool.idle(), 0u);
}

// prewarm() fills the pool with touched huge-page regions; those are handed out first, and a
// small-page region never pushes one out of a full pool (a huge one pushes a small one out).
TEST(ArenaPool, PrewarmedHugeRegionsComeFirstAndStay) {
  ArenaPool pool(Spool::kArenaBytes, 2);
  pool.prewarm();
  ASSERT_EQ(pool.idle(), 2u);
  AnonRegion h1 = pool.acquire();
  EXPECT_EQ(resident_bytes(h1.data()), static_cast<long long>(h1.size())) << "prewarmed: already faulted in";
  EXPECT_EQ(h1.pages(), PageSize::Huge);
  AnonRegion h2 = pool.acquire();
  AnonRegion s = pool.acquire();  // the pool is empty now
  EXPECT_EQ(h2.pages(), PageSize::Huge);
  EXPECT_EQ(s.pages(), PageSize::Small);
  std::byte* const s_data = s.data();
  pool.give_back(std::move(s));
  pool.give_back(std::move(h1));
  EXPECT_EQ(pool.idle(), 2u);
  pool.give_back(std::move(h2));  // full: h2 replaces the small one
  EXPECT_EQ(pool.idle(), 2u);
  AnonRegion x = pool.acquire(), y = pool.acquire();
  EXPECT_EQ(x.pages(), PageSize::Huge);
  EXPECT_EQ(y.pages(), PageSize::Huge);
  EXPECT_NE(x.data(), s_data);
  EXPECT_NE(y.data(), s_data);
  pool.prewarm();  // nothing idle: maps two more
  EXPECT_EQ(pool.idle(), 2u);
}

// A spool takes its blocks from the pool and gives them back when its input is closed, before it
// is destroyed (the compressor may still be reading it): the next spool drains into the same memory.
TEST(ArenaPool, ASpoolGivesItsBlocksBackWhenItsInputIsClosed) {
  char dir_template[] = "/var/tmp/coredumpd-arena-XXXXXX";
  ASSERT_NE(::mkdtemp(dir_template), nullptr);
  const int dirfd = ::open(dir_template, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(dirfd, 0);
  ArenaPool pool(Spool::kArenaBytes, 1);
  pool.prewarm();
  std::byte* first_block = nullptr;
  {
    Spool spool(dirfd, true, &pool);
    EXPECT_EQ(pool.idle(), 0u) << "the spool holds the region";
    first_block = spool.space().data();
    const std::vector<std::byte> data(3 * Spool::kBlockBytes + 10, std::byte{0x42});
    spool.append(data);
    spool.flush();
    spool.close_input();
    EXPECT_EQ(pool.idle(), 1u) << "given back at close_input()";
    std::vector<std::byte> back(data.size());
    spool.read(0, back);
    EXPECT_EQ(back, data) << "the spool is still readable";
  }
  EXPECT_EQ(pool.idle(), 1u);
  {
    Spool next(dirfd, true, &pool);
    const auto* p = next.space().data();
    EXPECT_TRUE(p >= first_block - Spool::kArenaBytes && p < first_block + Spool::kArenaBytes)
        << "drains into the region the first spool gave back";
    next.close_input();
  }
  ::close(dirfd);
  std::filesystem::remove_all(dir_template);
}

// Dumps come and go on many threads at once: every region handed out is its own (no two threads
// ever hold the same memory), and afterwards the pool keeps no more than `keep`. Run under TSan
// too (scripts/tsan.sh).
TEST(ArenaPool, ConcurrentAcquireAndGiveBackNeverShareARegion) {
  constexpr std::size_t kThreads = 8, kRounds = 200;
  ArenaPool pool(64 * 1024, 3);
  std::thread warm([&] { pool.prewarm(); });
  std::mutex mu;
  std::set<const std::byte*> held;
  bool shared = false;
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (std::size_t i = 0; i < kRounds; ++i) {
        AnonRegion r = pool.acquire();
        {
          std::lock_guard lock(mu);
          shared |= !held.insert(r.data()).second;
        }
        r.data()[0] = static_cast<std::byte>(t);  // ours alone to write
        {
          std::lock_guard lock(mu);
          held.erase(r.data());
        }
        pool.give_back(std::move(r));
      }
    });
  for (auto& th : threads) th.join();
  warm.join();
  EXPECT_FALSE(shared) << "a region was handed to two holders at once";
  EXPECT_LE(pool.idle(), 3u);
  EXPECT_GE(pool.idle(), 1u) << "given back regions are kept";
}
