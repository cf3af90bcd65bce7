// usage(): accounting per uid and per rule, and the row summaries it works from.
#include "store/usage.h"

#include "tests/unit/retention_fixture.h"

namespace coredumpd {
namespace {

using namespace std::chrono_literals;

TEST_F(RetentionTest, UsagePerUidAndRule) {
  add_sized(1, 1000, 100s, 10 * KiB, "web");
  add_sized(2, 1000, 90s, 20 * KiB);
  add_sized(3, 0, 80s, 30 * KiB, "web");
  add(4, 0, 70s, "", "web", DumpState::Rejected);
  const auto sz = [&](int n) { return index_->get(make_id(n))->stored_size; };
  UsageReport u = usage(*index_, dirfd_);
  EXPECT_EQ(u.rows, 4U);
  EXPECT_EQ(u.total.cores, 3U);
  EXPECT_EQ(u.total.bytes, sz(1) + sz(2) + sz(3));
  EXPECT_EQ(u.groups[GroupKind::Uid]["1000"].bytes, sz(1) + sz(2));
  EXPECT_EQ(u.groups[GroupKind::Uid]["1000"].cores, 2U);
  EXPECT_EQ(u.groups[GroupKind::Uid]["0"].bytes, sz(3));
  EXPECT_EQ(u.groups[GroupKind::Rule]["web"].bytes, sz(1) + sz(3));
  EXPECT_EQ(u.groups[GroupKind::Rule][""].bytes, sz(2));
  EXPECT_EQ(u.states["rejected"], 1U);
  ASSERT_TRUE(u.filesystem);
  EXPECT_GT(u.filesystem->total_bytes, 0U);

  RetentionLimits l;
  l.max_use_per_rule_bytes["web"] = sz(3);
  run_vacuum(l);
  u = usage(*index_);
  EXPECT_EQ(u.total.cores, 2U);
  EXPECT_EQ(u.vacuumed_rows, 1U);
  EXPECT_EQ(u.groups[GroupKind::Rule]["web"].cores, 1U);
  EXPECT_FALSE(u.filesystem);
}

TEST_F(RetentionTest, RowSummariesMatchFullRecords) {
  add_sized(1, 1000, 100s, 1 * KiB, "web\u00e9");
  DumpRecord r2 = add_sized(2, 0, 90s, 1 * KiB);
  r2.extra["rule"] = 42;  // not a string: the defaults' group
  index_->update(r2);
  add(3, 7, 80s, "", "", DumpState::Rejected);
  RetentionLimits l;
  l.max_use_per_uid_bytes = 0;
  run_vacuum(l, make_id(2));
  const auto full = index_->list();
  const auto brief = index_->list_summaries();
  ASSERT_EQ(full.size(), brief.size());
  for (std::size_t i = 0; i < full.size(); ++i) {
    EXPECT_EQ(brief[i].id, full[i].id);
    EXPECT_EQ(brief[i].state, full[i].state);
    EXPECT_EQ(brief[i].timestamp_us, full[i].timestamp_us);
    EXPECT_EQ(brief[i].uid, full[i].uid);
    EXPECT_EQ(brief[i].stored_size, full[i].stored_size);
    EXPECT_EQ(brief[i].path, full[i].path);
    EXPECT_EQ(brief[i].vacuumed, vacuumed_reason(full[i]).has_value());
    EXPECT_EQ(holds_core(brief[i]), holds_core(full[i]));
    for (const GroupKind k : kGroupKinds) EXPECT_EQ(group_key(k, brief[i]), group_key(k, full[i]));
  }
  EXPECT_EQ(brief[0].rule, "web\u00e9");
  EXPECT_TRUE(brief[0].vacuumed);
  EXPECT_EQ(brief[1].rule, "");
  EXPECT_FALSE(brief[1].vacuumed);
}

}  // namespace
}  // namespace coredumpd
