// Unit tests of the admission of dumps by memory, disk and count (daemon/dump/dump_budget.h):
// crashes that do not fit wait in order, a release admits them, a withdrawn waiter is never admitted.
#include <gtest/gtest.h>

#include <vector>

#include "daemon/dump/dump_budget.h"

using namespace coredumpd;

namespace {

constexpr std::uint64_t kMiB = 1 << 20;
const DumpBudgetLimits kLimits{.memory_bytes = 12 * kMiB, .disk_bytes = 100 * kMiB, .dumps = 8};
const DumpNeed kSmall{.memory_bytes = 6 * kMiB, .disk_bytes = 1 * kMiB};

}  // namespace

TEST(DumpBudget, AdmitsWhatFitsAndQueuesTheRestInOrder) {
  DumpBudget b;
  EXPECT_EQ(b.reserve_or_wait(kSmall, kLimits, nullptr), 0u);
  EXPECT_EQ(b.reserve_or_wait(kSmall, kLimits, nullptr), 0u);
  std::vector<int> admitted;
  const auto t1 = b.reserve_or_wait(kSmall, kLimits, [&] { admitted.push_back(1); });
  const auto t2 = b.reserve_or_wait(kSmall, kLimits, [&] { admitted.push_back(2); });
  EXPECT_NE(t1, 0u);
  EXPECT_NE(t2, 0u);
  EXPECT_EQ(b.usage().dumps, 2);
  EXPECT_EQ(b.usage().memory_bytes, 12 * kMiB);
  EXPECT_EQ(b.usage().waiting, 2u);

  b.release(kSmall);  // room for one: the first waiter, not the second
  EXPECT_EQ(admitted, std::vector<int>{1});
  EXPECT_EQ(b.usage().dumps, 2);
  EXPECT_EQ(b.usage().waiting, 1u);
  EXPECT_FALSE(b.withdraw(t1)) << "an admitted waiter cannot be withdrawn";
  b.release(kSmall);
  EXPECT_EQ(admitted, (std::vector<int>{1, 2}));
  b.release(kSmall);
  b.release(kSmall);
  EXPECT_EQ(b.usage().dumps, 0);
  EXPECT_EQ(b.usage().memory_bytes, 0u);
  EXPECT_EQ(b.usage().disk_bytes, 0u);
}

TEST(DumpBudget, NewcomersQueueBehindWaitersEvenIfTheyFit) {
  DumpBudget b;
  const DumpNeed big{.memory_bytes = 6 * kMiB, .disk_bytes = 90 * kMiB};
  ASSERT_EQ(b.reserve_or_wait(kSmall, kLimits, nullptr), 0u);            // 1 MiB of disk
  bool heavy_in = false, small_in = false;
  ASSERT_EQ(b.reserve_or_wait(big, kLimits, nullptr), 0u) << "fits: 12 of 12 MiB of memory, 91 of 100 MiB of disk";
  const DumpNeed disk_heavy{.memory_bytes = 0, .disk_bytes = 20 * kMiB};
  const auto th = b.reserve_or_wait(disk_heavy, kLimits, [&] { heavy_in = true; });
  ASSERT_NE(th, 0u);
  const DumpNeed tiny{.memory_bytes = 0, .disk_bytes = 1 * kMiB};
  EXPECT_FALSE(b.fits_now(tiny, kLimits)) << "someone waits";
  const auto ts = b.reserve_or_wait(tiny, kLimits, [&] { small_in = true; });
  EXPECT_NE(ts, 0u) << "FIFO: a fitting newcomer waits behind the head";
  EXPECT_TRUE(b.withdraw(th));  // the head's deadline: the one behind it now fits
  EXPECT_TRUE(small_in);
  EXPECT_FALSE(heavy_in);
  EXPECT_FALSE(b.withdraw(th));
}

TEST(DumpBudget, CountIsABoundToo) {
  DumpBudget b;
  const DumpBudgetLimits two{.memory_bytes = 1 << 30, .disk_bytes = 1 << 30, .dumps = 2};
  const DumpNeed none{};
  EXPECT_EQ(b.reserve_or_wait(none, two, nullptr), 0u);
  EXPECT_EQ(b.reserve_or_wait(none, two, nullptr), 0u);
  EXPECT_NE(b.reserve_or_wait(none, two, nullptr), 0u);
}

TEST(DumpBudget, ANeedBeyondTheWholeBudgetRunsAlone) {
  const DumpNeed huge = clamp_need({.memory_bytes = 50 * kMiB, .disk_bytes = 5000 * kMiB}, kLimits);
  EXPECT_EQ(huge.memory_bytes, kLimits.memory_bytes);
  DumpBudget b;
  ASSERT_EQ(b.reserve_or_wait(kSmall, kLimits, nullptr), 0u);
  bool in = false;
  ASSERT_NE(b.reserve_or_wait(huge, kLimits, [&] { in = true; }), 0u);
  b.release(kSmall);
  EXPECT_TRUE(in) << "alone, the clamped need fits";
}

// A huge estimated core counts a quarter of the disk budget: it never makes the small crashes
// behind it wait for the whole of its dump.
TEST(DumpBudget, AHugeEstimateHoldsAQuarterOfTheDiskBudget) {
  const DumpNeed huge = clamp_need({.memory_bytes = 6 * kMiB, .disk_bytes = 5000 * kMiB}, kLimits);
  EXPECT_EQ(huge.disk_bytes, kLimits.disk_bytes / kMaxDiskShareDivisor);
  DumpBudget b;
  ASSERT_EQ(b.reserve_or_wait(huge, kLimits, nullptr), 0u);
  EXPECT_EQ(b.reserve_or_wait(kSmall, kLimits, nullptr), 0u) << "a small crash beside it is admitted at once";
}

TEST(DumpBudget, ReservationGivesBackOnceWhenDestroyedOrMoved) {
  DumpBudget b;
  {
    ASSERT_EQ(b.reserve_or_wait(kSmall, kLimits, nullptr), 0u);
    DumpReservation r(b, kSmall);
    DumpReservation moved(std::move(r));
    EXPECT_FALSE(r.held());  // NOLINT(bugprone-use-after-move): testing the moved-from state
    EXPECT_TRUE(moved.held());
    EXPECT_EQ(b.usage().dumps, 1);
  }
  EXPECT_EQ(b.usage().dumps, 0);
  b.force_reserve(kSmall);
  b.force_reserve(kSmall);
  b.force_reserve(kSmall);
  EXPECT_EQ(b.usage().memory_bytes, 18 * kMiB) << "force_reserve ignores the limits";
}

// A stream that has ended gives its memory back at once (the spool holds it on disk): the next
// crash is admitted while the first still holds its disk share and its count until it is stored.
TEST(DumpBudget, MemoryGoesBackWhenTheStreamEndsDiskAndCountWhenStored) {
  DumpBudget b;
  ASSERT_EQ(b.reserve_or_wait(kSmall, kLimits, nullptr), 0u);
  DumpReservation first(b, kSmall);
  ASSERT_EQ(b.reserve_or_wait(kSmall, kLimits, nullptr), 0u);
  DumpReservation second(b, kSmall);
  std::vector<int> admitted;
  const auto t = b.reserve_or_wait(kSmall, kLimits, [&] { admitted.push_back(3); });
  EXPECT_NE(t, 0u) << "12 MiB of memory are held by two streams";
  first.release_memory();
  EXPECT_EQ(admitted, std::vector<int>{3});
  EXPECT_EQ(b.usage().memory_bytes, 12 * kMiB) << "the second stream and the admitted waiter";
  EXPECT_EQ(b.usage().disk_bytes, 3 * kMiB) << "the first dump's disk share stays until it is stored";
  EXPECT_EQ(b.usage().dumps, 3);
  first.release_memory();  // once only
  EXPECT_EQ(b.usage().memory_bytes, 12 * kMiB);
  first.reset();
  EXPECT_EQ(b.usage().memory_bytes, 12 * kMiB) << "reset() gives back only what is still held";
  EXPECT_EQ(b.usage().disk_bytes, 2 * kMiB);
  EXPECT_EQ(b.usage().dumps, 2);
}
