// vacuum(): quotas, max_use, keep_free on a real tmpfs, max_age, the protected dump, symlinks,
// raw cores.
#include "store/vacuum.h"
#include "store/record_extras.h"

#include "tests/unit/retention_fixture.h"

namespace coredumpd {
namespace {

using namespace std::chrono_literals;

TEST_F(RetentionTest, UidQuotaKeepsNewestOfThatUidAndLeavesOthersAlone) {
  for (int i = 1; i <= 4; ++i) add_sized(i, 1000, std::chrono::seconds(100 - i), 100 * KiB);
  add_sized(5, 2000, 500s, 100 * KiB);  // older than all of uid 1000's, but within its quota
  add_sized(6, 2000, 1s, 100 * KiB);

  RetentionLimits l;
  l.max_use_per_uid_bytes = 250 * KiB;
  const VacuumResult r = run_vacuum(l);
  EXPECT_EQ(removed_ids(r), (std::vector<std::string>{make_id(1), make_id(2)}));
  EXPECT_TRUE(r.errors.empty());
  EXPECT_TRUE(r.unmet.empty());
  for (const auto& v : r.removed) EXPECT_EQ(v.reason, VacuumReason::UidQuota);
  EXPECT_FALSE(has_file(1));
  EXPECT_FALSE(has_file(2));
  EXPECT_TRUE(has_file(3));
  EXPECT_TRUE(has_file(4));  // the newest of uid 1000
  EXPECT_TRUE(has_file(5));
  EXPECT_TRUE(has_file(6));

  // The history stays: rows kept, state unchanged, path cleared, extra.vacuumed says why.
  const auto rows = index_->list();
  EXPECT_EQ(rows.size(), 6U);
  const auto r1 = index_->get(make_id(1));
  ASSERT_TRUE(r1);
  EXPECT_EQ(r1->state, DumpState::Complete);
  EXPECT_EQ(r1->path, "");
  EXPECT_GT(r1->stored_size, 0U);
  EXPECT_EQ(r1->extra["vacuumed"]["reason"], "uid_quota");
  EXPECT_EQ(r1->extra["vacuumed"]["path"], make_id(1) + ".zst");
  EXPECT_TRUE(r1->extra["vacuumed"]["time_us"].is_number_integer());
  EXPECT_EQ(vacuumed_reason(*r1), "uid_quota");
  EXPECT_FALSE(holds_core(*r1));

  // Idempotent: nothing more to do.
  EXPECT_TRUE(run_vacuum(l).removed.empty());
}

TEST_F(RetentionTest, RuleQuotaEvictsOldestOfThatRuleOnly) {
  add_sized(1, 1000, 90s, 100 * KiB, "big");
  add_sized(2, 2000, 80s, 100 * KiB, "big");
  add_sized(3, 1000, 95s, 100 * KiB);  // defaults (no rule): oldest overall, other group
  add_sized(4, 3000, 70s, 100 * KiB, "big");
  add_sized(5, 3000, 60s, 100 * KiB, "other");

  RetentionLimits l;
  l.max_use_per_rule_bytes["big"] = 150 * KiB;
  VacuumResult r = run_vacuum(l);
  EXPECT_EQ(removed_ids(r), (std::vector<std::string>{make_id(1), make_id(2)}));
  for (const auto& v : r.removed) {
    EXPECT_EQ(v.reason, VacuumReason::RuleQuota);
    EXPECT_EQ(v.rule, "big");
  }
  EXPECT_TRUE(has_file(3));
  EXPECT_TRUE(has_file(4));  // newest of "big"
  EXPECT_TRUE(has_file(5));

  // "" is the defaults' group.
  l.max_use_per_rule_bytes = {{"", 0}};
  r = run_vacuum(l);
  EXPECT_EQ(removed_ids(r), std::vector<std::string>{make_id(3)});
  EXPECT_TRUE(has_file(4));
  EXPECT_TRUE(has_file(5));
}

TEST_F(RetentionTest, MaxUseEvictsOldestWithinBiggestConsumer) {
  add_sized(1, 2000, 500s, 100 * KiB);  // the oldest dump overall, but uid 2000 uses little
  add_sized(2, 1000, 300s, 100 * KiB);
  add_sized(3, 1000, 200s, 100 * KiB);
  add_sized(4, 1000, 100s, 100 * KiB);
  add_sized(5, 3000, 50s, 150 * KiB);

  const std::uint64_t total = usage(*index_).total.bytes;
  RetentionLimits l;
  l.max_use_bytes = total - 50 * KiB;  // one 100K dump must go
  VacuumResult r = run_vacuum(l);
  ASSERT_EQ(removed_ids(r), std::vector<std::string>{make_id(2)});  // uid 1000's oldest
  EXPECT_EQ(r.removed[0].reason, VacuumReason::MaxUse);
  EXPECT_FALSE(has_file(2));
  EXPECT_TRUE(has_file(1));

  // Now uid 1000 (200K) still leads uid 3000 (150K): its next oldest goes, then 3000's, then...
  l.max_use_bytes = total - 250 * KiB;
  r = run_vacuum(l);
  EXPECT_EQ(removed_ids(r), (std::vector<std::string>{make_id(3), make_id(5)}));
  EXPECT_LE(usage(*index_).total.bytes, *l.max_use_bytes);
  EXPECT_TRUE(has_file(1));
  EXPECT_TRUE(has_file(4));
}

TEST_F(RetentionTest, KeepIdIsNeverRemovedEvenAloneOverTheLimit) {
  add_sized(1, 1000, 10s, 300 * KiB);
  RetentionLimits l;
  l.max_use_bytes = 1 * KiB;
  l.max_use_per_uid_bytes = 1 * KiB;
  l.max_age = 1s;  // it is also too old
  VacuumResult r = run_vacuum(l, make_id(1));
  EXPECT_TRUE(r.removed.empty());
  EXPECT_TRUE(has_file(1));
  EXPECT_EQ(r.unmet.size(), 2U);  // the uid quota and max_use
  ASSERT_TRUE(index_->get(make_id(1)));
  EXPECT_TRUE(holds_core(*index_->get(make_id(1))));

  // With other dumps around, the protected one is skipped and the older ones go; those that
  // crashed after it are not removed to make room for it (see the next test).
  add_sized(2, 1000, 20s, 10 * KiB);
  add_sized(3, 1000, 15s, 10 * KiB);
  add_sized(4, 1000, 5s, 10 * KiB);
  l.max_age.reset();
  r = run_vacuum(l, make_id(1));
  EXPECT_EQ(removed_ids(r), (std::vector<std::string>{make_id(2), make_id(3)}));
  EXPECT_TRUE(has_file(1));
  EXPECT_TRUE(has_file(4));
}

// A dump that crashed first can finish storing last (a big core streams and compresses longer).
// Its vacuum (keep_id = it) must not evict the cores of later crashes to make room for it, and
// must not evict it either: the limit stays unmet (and says so) until the next vacuum, which
// takes the oldest first — the late finisher.
TEST_F(RetentionTest, OlderDumpFinishingLastDoesNotEvictNewerCores) {
  for (const bool per_rule : {true, false}) {
    SCOPED_TRACE(per_rule ? "rule quota" : "max_use");
    const int base = per_rule ? 10 : 20;
    const std::string rule = per_rule ? "web" : "";
    RetentionLimits l;
    if (per_rule) l.max_use_per_rule_bytes[rule] = 150 * KiB;
    else l.max_use_bytes = 150 * KiB;

    // A crashes first and is still streaming when B, which crashed after it, is stored.
    const DumpRecord a = add(base + 1, 1000, 60s, random_bytes(100 * KiB, 1), rule, DumpState::InProgress);
    add(base + 2, 1000, 30s, random_bytes(100 * KiB, 2), rule);
    VacuumResult r = run_vacuum(l, make_id(base + 2));
    EXPECT_TRUE(r.removed.empty()) << "A is in progress: it holds no core yet";

    // A finishes: its row becomes complete, then the daemon vacuums with keep_id = A.
    DumpRecord done = *index_->get(a.id);
    done.state = DumpState::Complete;
    done.stored_size = static_cast<std::uint64_t>(fs::file_size(store_ + "/" + done.path));
    index_->update(done);
    r = run_vacuum(l, a.id);
    EXPECT_EQ(removed_ids(r), std::vector<std::string>{}) << "B crashed after A: it must not make room for A";
    EXPECT_TRUE(has_file(base + 1)) << "keep_id is never removed";
    EXPECT_TRUE(has_file(base + 2));
    EXPECT_EQ(r.unmet.size(), 1U);

    // The next dump C (the newest) is stored: now the oldest goes first, and that is A.
    add(base + 3, 1000, 1s, random_bytes(10 * KiB, 3), rule);
    r = run_vacuum(l, make_id(base + 3));
    EXPECT_EQ(removed_ids(r), std::vector<std::string>{a.id});
    EXPECT_TRUE(has_file(base + 2));
    EXPECT_TRUE(has_file(base + 3));
    EXPECT_TRUE(r.unmet.empty());

    // Clean up for the other limit: vacuum without a protected dump removes everything left.
    RetentionLimits all;
    all.max_use_bytes = 0;
    run_vacuum(all);
  }
}

TEST_F(RetentionTest, MaxAgeDeletesOldRowsEntirely) {
  add_sized(1, 1000, 10 * 24h, 10 * KiB);
  add(2, 1000, 9 * 24h, "", "", DumpState::Rejected);
  add(3, 1000, 9 * 24h, "", "", DumpState::Failed);
  add(4, 1000, 8 * 24h, "core", "", DumpState::InProgress);  // the daemon's: never touched
  add(5, 1000, 8 * 24h, "", "", DumpState::MetadataOnly);
  add_sized(6, 1000, 6 * 24h, 10 * KiB);
  add_sized(7, 2000, 1h, 10 * KiB);

  RetentionLimits l;
  l.max_age = 7 * 24h;
  const VacuumResult r = run_vacuum(l);
  EXPECT_EQ(removed_ids(r), (std::vector<std::string>{make_id(1), make_id(2), make_id(3), make_id(5)}));
  for (const auto& v : r.removed) {
    EXPECT_EQ(v.reason, VacuumReason::MaxAge);
    EXPECT_TRUE(v.row_deleted);
  }
  EXPECT_FALSE(has_file(1));
  EXPECT_FALSE(index_->get(make_id(1)));
  EXPECT_FALSE(index_->get(make_id(2)));
  EXPECT_FALSE(index_->get(make_id(3)));
  EXPECT_FALSE(index_->get(make_id(5)));
  EXPECT_TRUE(index_->get(make_id(4)));
  EXPECT_TRUE(has_file(4));
  EXPECT_TRUE(has_file(6));
  EXPECT_TRUE(has_file(7));
  EXPECT_EQ(index_->list().size(), 3U);
}

// max_core_age takes the old cores and keeps every row, marked vacuumed; max_age, when also set,
// still deletes the rows older than it.
TEST_F(RetentionTest, MaxCoreAgeDeletesOldCoresAndKeepsTheirRows) {
  add_sized(1, 1000, 10 * 24h, 10 * KiB);
  add_sized(2, 1000, 4 * 24h, 10 * KiB);
  add(3, 1000, 5 * 24h, "", "", DumpState::MetadataOnly);
  add(4, 1000, 8 * 24h, "core", "", DumpState::InProgress);
  add_sized(5, 2000, 1h, 10 * KiB);

  RetentionLimits l;
  l.max_core_age = 3 * 24h;
  VacuumResult r = run_vacuum(l);
  EXPECT_EQ(removed_ids(r), (std::vector<std::string>{make_id(1), make_id(2)}));
  for (const auto& v : r.removed) {
    EXPECT_EQ(v.reason, VacuumReason::MaxCoreAge);
    EXPECT_FALSE(v.row_deleted);
  }
  EXPECT_FALSE(has_file(1));
  EXPECT_FALSE(has_file(2));
  EXPECT_TRUE(has_file(4));
  EXPECT_TRUE(has_file(5));
  const auto kept = index_->get(make_id(1));
  ASSERT_TRUE(kept);
  EXPECT_TRUE(kept->path.empty());
  EXPECT_EQ(kept->extra.at(extras::kVacuumed).at("reason"), "max_core_age");
  EXPECT_EQ(index_->list().size(), 5U);

  l.max_age = 7 * 24h;
  r = run_vacuum(l);
  EXPECT_EQ(removed_ids(r), (std::vector<std::string>{make_id(1)}));
  EXPECT_EQ(r.removed.at(0).reason, VacuumReason::MaxAge);
  EXPECT_FALSE(index_->get(make_id(1)));
  EXPECT_EQ(index_->list().size(), 4U);
}

TEST_F(RetentionTest, DryRunChangesNothing) {
  add_sized(1, 1000, 10 * 24h, 50 * KiB);
  add_sized(2, 1000, 100s, 50 * KiB);
  add_sized(3, 1000, 50s, 50 * KiB);
  RetentionLimits l;
  l.max_age = 24h;
  l.max_use_bytes = 60 * KiB;
  const VacuumResult r = run_vacuum(l, "", /*dry_run=*/true);
  EXPECT_TRUE(r.dry_run);
  EXPECT_EQ(removed_ids(r), (std::vector<std::string>{make_id(1), make_id(2)}));
  for (int i = 1; i <= 3; ++i) {
    EXPECT_TRUE(has_file(i));
    ASSERT_TRUE(index_->get(make_id(i)));
    EXPECT_TRUE(holds_core(*index_->get(make_id(i))));
  }
  // The real run does exactly what the dry run said.
  EXPECT_EQ(removed_ids(run_vacuum(l)), removed_ids(r));
}

TEST_F(RetentionTest, KeepFreeOnSmallTmpfs) {
  if (const std::string why = mount_small_tmpfs(); !why.empty()) {
    std::printf("skipping: %s\n", why.c_str());
    GTEST_SKIP() << why;
  }
  auto fs0 = fs_space(dirfd_);
  ASSERT_TRUE(fs0);
  EXPECT_EQ(fs0->total_bytes, 10 * MiB);

  // Incompressible cores: uid 1000 has 5 x 1 MiB (newer), uid 2000 3 x 900 KiB (the oldest).
  add_sized(1, 2000, 900s, 900 * KiB);
  add_sized(2, 2000, 800s, 900 * KiB);
  add_sized(3, 2000, 700s, 900 * KiB);
  for (int i = 4; i <= 8; ++i) add_sized(i, 1000, std::chrono::seconds(700 - 10 * i), MiB);
  const auto before = fs_space(dirfd_);
  ASSERT_TRUE(before);
  std::printf("tmpfs: %llu bytes free before vacuum\n",
              static_cast<unsigned long long>(before->free_bytes));
  ASSERT_LT(before->free_bytes, 3 * MiB);

  RetentionLimits l;
  l.keep_free_bytes = 4 * MiB;
  // Dry run: same choice, nothing freed.
  const VacuumResult dry = run_vacuum(l, make_id(8), true);
  EXPECT_EQ(fs_space(dirfd_)->free_bytes, before->free_bytes);

  const VacuumResult r = run_vacuum(l, make_id(8));
  EXPECT_EQ(removed_ids(r), removed_ids(dry));
  EXPECT_TRUE(r.unmet.empty());
  EXPECT_TRUE(r.errors.empty());
  const auto after = fs_space(dirfd_);
  ASSERT_TRUE(after);
  EXPECT_GE(after->free_bytes, 4 * MiB);
  // Minimal: one dump fewer would not have been enough.
  EXPECT_LT(after->free_bytes - r.removed.back().disk_bytes, 4 * MiB);
  // Oldest first within the biggest consumer (uid 1000, 5 MiB), although uid 2000's are older.
  EXPECT_EQ(removed_ids(r), (std::vector<std::string>{make_id(4), make_id(5)}));
  for (const auto& v : r.removed) {
    EXPECT_EQ(v.reason, VacuumReason::KeepFree);
    EXPECT_GE(v.disk_bytes, MiB);
  }
  EXPECT_TRUE(has_file(1));
  EXPECT_TRUE(has_file(8));

  // A percentage: 55% of 10 MiB must be free. uid 1000 (3 MiB, one protected) still leads uid
  // 2000 (2.6 MiB): its oldest goes; then uid 2000 leads and loses its oldest.
  RetentionLimits p;
  p.keep_free_percent = 55;
  const VacuumResult rp = run_vacuum(p, make_id(8));
  EXPECT_TRUE(rp.unmet.empty());
  EXPECT_GE(fs_space(dirfd_)->free_bytes, 5 * MiB + 512 * KiB);
  EXPECT_EQ(removed_ids(rp), (std::vector<std::string>{make_id(6), make_id(1)}));
  EXPECT_TRUE(has_file(8));

  // Whatever the index's own writes cost, the measured free space meets the limit afterwards
  // (vacuum re-measures once its estimate says the limit holds).
  p.keep_free_percent = 60;
  const VacuumResult r60 = run_vacuum(p, make_id(8));
  EXPECT_TRUE(r60.unmet.empty());
  EXPECT_GE(fs_space(dirfd_)->free_bytes, 6 * MiB);
  EXPECT_TRUE(has_file(8));

  // Impossible: 95% free with the protected dump kept.
  p.keep_free_percent = 95;
  const VacuumResult rx = run_vacuum(p, make_id(8));
  EXPECT_TRUE(has_file(8));
  ASSERT_EQ(rx.unmet.size(), 1U);
  EXPECT_NE(rx.unmet[0].find("keep_free"), std::string::npos);
}

// max_use as a percentage of the filesystem (systemd-coredump's MaxUse= default is 10%), bounded
// by percent_cap.
TEST_F(RetentionTest, MaxUsePercentOfTheFilesystemAndItsCap) {
  if (const std::string why = mount_small_tmpfs(); !why.empty()) {
    std::printf("skipping: %s\n", why.c_str());
    GTEST_SKIP() << why;
  }
  for (int i = 1; i <= 5; ++i) add_sized(i, 1000, std::chrono::seconds(600 - 10 * i), MiB);
  RetentionLimits l;
  l.max_use_percent = 35;  // 3.5 MiB of the 10 MiB tmpfs: two of the five 1 MiB cores go
  VacuumResult r = run_vacuum(l, make_id(5));
  EXPECT_EQ(removed_ids(r), (std::vector<std::string>{make_id(1), make_id(2)}));
  for (const auto& v : r.removed) EXPECT_EQ(v.reason, VacuumReason::MaxUse);
  EXPECT_LE(usage(*index_).total.bytes, 3 * MiB + 512 * KiB);
  l.percent_cap_bytes = 2 * MiB + 512 * KiB;  // now at most 2.5 MiB, whatever 35% comes to
  r = run_vacuum(l, make_id(5));
  EXPECT_EQ(removed_ids(r), (std::vector<std::string>{make_id(3)}));
  EXPECT_TRUE(has_file(4));
  EXPECT_TRUE(has_file(5));
}

TEST_F(RetentionTest, KeepFreeStopsWhenDeletedSpaceIsNotReleased) {
  if (const std::string why = mount_small_tmpfs(); !why.empty()) {
    std::printf("skipping: %s\n", why.c_str());
    GTEST_SKIP() << why;
  }
  for (int i = 1; i <= 8; ++i) add_sized(i, 1000, std::chrono::seconds(900 - i), MiB);
  // Someone (dumpctl debug, a backup) holds every core open: unlinking frees nothing yet.
  std::vector<int> held;
  for (int i = 1; i <= 8; ++i) {
    held.push_back(::open((store_ + "/" + make_id(i) + ".zst").c_str(), O_RDONLY | O_CLOEXEC));
    ASSERT_GE(held.back(), 0);
  }
  const auto before = fs_space(dirfd_);
  ASSERT_TRUE(before);
  RetentionLimits l;
  l.keep_free_bytes = 4 * MiB;
  const VacuumResult r = run_vacuum(l);
  // ~1.9 MiB were free: the estimate is met after the three oldest; the measurement shows nothing
  // came back, so vacuum stops there instead of deleting the whole store.
  EXPECT_LT(before->free_bytes, 2 * MiB);
  EXPECT_EQ(removed_ids(r), (std::vector<std::string>{make_id(1), make_id(2), make_id(3)}));
  ASSERT_EQ(r.unmet.size(), 1U);
  EXPECT_NE(r.unmet[0].find("not been released"), std::string::npos) << r.unmet[0];
  for (const int fd : held) ::close(fd);
  EXPECT_GE(fs_space(dirfd_)->free_bytes, 4 * MiB);
}

TEST_F(RetentionTest, SymlinkNamedLikeADumpIsNeverFollowed) {
  const std::string victim_dir = root_ + "/elsewhere";
  fs::create_directory(victim_dir);
  const std::string victim = victim_dir + "/precious";
  write_file(victim, "do not delete");

  // Dump 1's core replaced by a symlink to the victim; a second symlink planted with no row.
  add_sized(1, 1000, 100s, 10 * KiB);
  add_sized(2, 1000, 50s, 10 * KiB);
  ASSERT_EQ(::unlink((store_ + "/" + make_id(1) + ".zst").c_str()), 0);
  ASSERT_EQ(::symlink(victim.c_str(), (store_ + "/" + make_id(1) + ".zst").c_str()), 0);
  const std::string planted = store_ + "/" + make_id(99) + ".zst";
  ASSERT_EQ(::symlink(victim.c_str(), planted.c_str()), 0);

  // verify reports both, never reading through them (also not with --deep).
  const VerifyReport v = verify(*index_, dirfd_, /*deep=*/true);
  ASSERT_EQ(v.issues.size(), 2U);
  EXPECT_EQ(v.issues[0].problem, VerifyProblem::NotRegular);
  EXPECT_EQ(v.issues[0].id, make_id(1));
  EXPECT_NE(v.issues[0].detail.find("symlink"), std::string::npos);
  EXPECT_EQ(v.issues[1].problem, VerifyProblem::Orphan);
  EXPECT_EQ(v.issues[1].name, make_id(99) + ".zst");
  EXPECT_NE(v.issues[1].detail.find("symlink"), std::string::npos);
  EXPECT_EQ(v.deep_checked, 1U);

  // Vacuum everything: the link entry goes, its target stays; the row-less link is not ours.
  RetentionLimits l;
  l.max_use_bytes = 0;
  const VacuumResult r = run_vacuum(l);
  ASSERT_EQ(removed_ids(r), (std::vector<std::string>{make_id(1), make_id(2)}));
  EXPECT_TRUE(r.removed[0].not_regular);
  EXPECT_FALSE(exists_nofollow(store_ + "/" + make_id(1) + ".zst"));
  EXPECT_EQ(read_file(victim), "do not delete");
  EXPECT_TRUE(exists_nofollow(planted));
  RetentionLimits age;
  age.max_age = 1s;
  run_vacuum(age);
  EXPECT_TRUE(exists_nofollow(planted));
  EXPECT_EQ(read_file(victim), "do not delete");
}

TEST_F(RetentionTest, VacuumOnlyUnlinksNamesItGenerated) {
  // A row whose path is not "<id>.zst" (a tampered index) never causes a deletion.
  DumpRecord r = add_sized(1, 1000, 100s, 10 * KiB);
  write_file(store_ + "/notes.txt", "keep me");
  r.path = "notes.txt";
  r.stored_size = 7;
  index_->update(r);
  RetentionLimits l;
  l.max_use_bytes = 0;
  l.max_age = 1s;
  const VacuumResult res = run_vacuum(l);
  EXPECT_TRUE(res.removed.empty());
  EXPECT_FALSE(res.errors.empty());
  EXPECT_EQ(read_file(store_ + "/notes.txt"), "keep me");
}

TEST_F(RetentionTest, VacuumRemovesRawCoresLikeCompressedOnes) {
  add_raw(1, 1000, 10 * 24h, random_bytes(10 * KiB, 1));  // too old: row and file go
  add_raw(2, 1000, 300s, random_bytes(10 * KiB, 2));
  add_sized(3, 1000, 200s, 10 * KiB);
  add_raw(4, 1000, 100s, random_bytes(4 * KiB, 4), 1 * MiB, random_bytes(4 * KiB, 5));  // sparse
  add_raw(5, 1000, 50s, random_bytes(10 * KiB, 6));
  // Files beside them whose names only look like cores: no row names them, nothing may touch them.
  const std::string bak = store_ + "/" + make_id(2) + ".core.bak";
  write_file(bak, "a backup");
  const std::string upper = store_ + "/" + make_id(5) + ".CORE";
  write_file(upper, "not ours");

  EXPECT_EQ(usage(*index_).total.bytes,
            (10 + 10 + 8 + 10) * KiB + 1 * MiB + index_->get(make_id(3))->stored_size);
  RetentionLimits l;
  l.max_age = 7 * 24h;
  l.max_use_bytes = 20 * KiB;  // after dump 1 (max_age), the oldest go until only dump 5 is left
  const VacuumResult r = run_vacuum(l);
  EXPECT_TRUE(r.errors.empty()) << r.errors[0];
  EXPECT_TRUE(r.unmet.empty());
  ASSERT_EQ(removed_ids(r), (std::vector<std::string>{make_id(1), make_id(2), make_id(3),
                                                      make_id(4)}));
  EXPECT_TRUE(r.removed[0].row_deleted);
  EXPECT_EQ(r.removed[1].bytes, 10 * KiB);
  EXPECT_EQ(r.removed[3].bytes, 8 * KiB + 1 * MiB);  // stored_size: st_size, holes included
  EXPECT_LT(r.removed[3].disk_bytes, 1 * MiB);       // ... while the hole took no blocks
  for (const int n : {1, 2, 4}) EXPECT_FALSE(has_raw_file(n)) << n;
  EXPECT_FALSE(has_file(3));
  EXPECT_TRUE(has_raw_file(5));
  EXPECT_FALSE(index_->get(make_id(1)));
  const auto r2 = index_->get(make_id(2));
  ASSERT_TRUE(r2);
  EXPECT_EQ(r2->path, "");
  EXPECT_EQ(r2->compression, "none");
  EXPECT_EQ(r2->extra["vacuumed"]["path"], make_id(2) + ".core");
  EXPECT_EQ(read_file(bak), "a backup");
  EXPECT_EQ(read_file(upper), "not ours");
  EXPECT_EQ(verify(*index_, dirfd_, true).issues.size(), 2U);  // the two foreign files, orphans
}

TEST_F(RetentionTest, VacuumNeverUnlinksForeignNamesEndingLikeRawCores) {
  // Rows whose path (a tampered index) is not "<own id>.core" never cause a deletion, whatever
  // the limit: a backup of the core, another dump's core, the extension in upper case.
  const std::vector<std::string> foreign = {make_id(1) + ".core.bak", make_id(9) + ".core",
                                            make_id(3) + ".CORE", "core"};
  for (int n = 1; n <= 4; ++n) {
    DumpRecord r = add_raw(n, 1000, std::chrono::seconds(100 - n), "raw core bytes");
    write_file(store_ + "/" + foreign[n - 1], "keep me");
    r.path = foreign[n - 1];
    index_->update(r);
  }
  RetentionLimits l;
  l.max_use_bytes = 0;
  VacuumResult res = run_vacuum(l);
  EXPECT_TRUE(res.removed.empty());
  ASSERT_EQ(res.unmet.size(), 1U);
  l = {};
  l.max_age = 1s;
  res = run_vacuum(l);
  EXPECT_TRUE(res.removed.empty());
  ASSERT_EQ(res.errors.size(), 4U);
  EXPECT_NE(res.errors[0].find("is not \"<id>.zst\" or \"<id>.core\""), std::string::npos)
      << res.errors[0];
  for (const auto& name : foreign) EXPECT_EQ(read_file(store_ + "/" + name), "keep me") << name;
  for (int n = 1; n <= 4; ++n) EXPECT_TRUE(has_raw_file(n)) << n;  // not named by any row now
}

}  // namespace
}  // namespace coredumpd
