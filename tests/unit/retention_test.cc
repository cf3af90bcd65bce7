// Retention: limit parsing, vacuum (quotas, max_use, keep_free on a real tmpfs, max_age, the
// protected dump, symlinks), usage accounting, verify (orphans, missing, sizes, corrupt zstd) and
// the dumpctl du / vacuum / verify commands. Every test runs on a real temporary store with real
// files.
#include "store/retention.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cli/dumpctl.h"
#include "store/index.h"
#include "tests/unit/store_test_files.h"

namespace coredumpd {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;
using Clock = std::chrono::system_clock;

constexpr std::uint64_t KiB = 1024;
constexpr std::uint64_t MiB = 1024 * KiB;

using unit::make_id;
using unit::read_file;
using unit::write_file;
using unit::zstd_compress;

/// Random bytes: zstd cannot shrink them, so a compressed core is about as big as its input.
std::string random_bytes(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(rng() & 0xFFU);
  return s;
}

bool exists_nofollow(const std::string& path) {
  struct stat sb {};
  return ::lstat(path.c_str(), &sb) == 0;
}

/// A temporary store: a directory with an index and an O_DIRECTORY descriptor on it.
class RetentionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ::setenv("TZ", "UTC", 1);
    std::string tmpl = (fs::temp_directory_path() / "retention_test.XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    root_ = tmpl;
    store_ = root_ + "/store";
    fs::create_directory(store_);
    open_store();
  }
  void TearDown() override {
    index_.reset();
    if (dirfd_ >= 0) ::close(dirfd_);
    if (mounted_) {
      EXPECT_EQ(::umount2(store_.c_str(), MNT_DETACH), 0) << std::strerror(errno);
    }
    fs::remove_all(root_);
  }

  void open_store() {
    index_.reset();
    if (dirfd_ >= 0) ::close(dirfd_);
    dirfd_ = ::open(store_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    ASSERT_GE(dirfd_, 0);
    index_ = std::make_unique<Index>(store_, true);
  }

  /// Mounts a 10 MiB tmpfs on the store (like `mount -t tmpfs -o size=10m tmpfs DIR`); returns
  /// the reason on failure (not root, no CAP_SYS_ADMIN, ...).
  std::string mount_small_tmpfs() {
    index_.reset();
    ::close(dirfd_);
    dirfd_ = -1;
    if (::mount("tmpfs", store_.c_str(), "tmpfs", 0, "size=10m,mode=0750") != 0)
      return std::string("mount -t tmpfs -o size=10m failed: ") + std::strerror(errno);
    mounted_ = true;
    open_store();
    return {};
  }

  /// A record of dump `n` of `uid` at `age` before now_, without a core.
  DumpRecord record(int n, std::int64_t uid, std::chrono::seconds age, const std::string& rule,
                    DumpState state) const {
    DumpRecord r;
    r.id = make_id(n);
    r.state = state;
    r.timestamp_us = std::chrono::duration_cast<std::chrono::microseconds>(
                         (now_ - age).time_since_epoch())
                         .count();
    r.pid = 100 + n;
    r.uid = r.euid = uid;
    r.gid = r.egid = uid;
    r.comm = "prog";
    r.exe = "/usr/bin/prog";
    r.boot_id = "boot";
    if (!rule.empty()) r.extra["rule"] = rule;
    return r;
  }

  /// Adds a dump of `uid` at `age` before now_ whose core is `raw` compressed (real zstd file).
  DumpRecord add(int n, std::int64_t uid, std::chrono::seconds age, const std::string& raw,
                 const std::string& rule = "", DumpState state = DumpState::Complete) {
    DumpRecord r = record(n, uid, age, rule, state);
    if (state == DumpState::Complete || state == DumpState::Truncated ||
        state == DumpState::InProgress) {
      const std::string z = zstd_compress(raw);
      r.core_size = raw.size();
      r.stored_size = state == DumpState::InProgress ? 0 : z.size();
      r.compression = "zstd";
      r.path = r.id + ".zst";
      write_file(store_ + "/" + r.path, z);
    }
    index_->insert(r);
    return r;
  }

  /// Adds a complete dump of `uid` at `age` before now_ whose core is stored uncompressed
  /// ("<id>.core", compression "none"): `head`, then `hole` zero bytes left sparse, then `tail`.
  DumpRecord add_raw(int n, std::int64_t uid, std::chrono::seconds age, const std::string& head,
                     std::size_t hole = 0, const std::string& tail = "") {
    DumpRecord r = record(n, uid, age, "", DumpState::Complete);
    unit::store_raw_core(store_, r, head, hole, tail);
    index_->insert(r);
    return r;
  }

  /// A dump whose compressed core is about `bytes` big (random content).
  DumpRecord add_sized(int n, std::int64_t uid, std::chrono::seconds age, std::size_t bytes,
                       const std::string& rule = "") {
    return add(n, uid, age, random_bytes(bytes, static_cast<unsigned>(n)), rule);
  }

  bool has_file(int n) const { return exists_nofollow(store_ + "/" + make_id(n) + ".zst"); }
  bool has_raw_file(int n) const { return exists_nofollow(store_ + "/" + make_id(n) + ".core"); }

  std::vector<std::string> removed_ids(const VacuumResult& r) const {
    std::vector<std::string> ids;
    for (const auto& v : r.removed) ids.push_back(v.id);
    return ids;
  }

  VacuumResult run_vacuum(const RetentionLimits& l, const std::string& keep = "",
                          bool dry_run = false) {
    return vacuum(*index_, dirfd_, l, keep, now_, dry_run);
  }

  struct CliResult {
    int rc = -1;
    std::string out, err;
  };
  CliResult dumpctl(std::vector<std::string> args) {
    std::ostringstream out, err;
    args.insert(args.begin(), {"dumpctl", "--store", store_});
    const cli::Io io{out, err, false};
    CliResult res;
    res.rc = cli::dumpctl_main(args, io);
    res.out = out.str();
    res.err = err.str();
    return res;
  }

  std::string root_, store_;
  int dirfd_ = -1;
  bool mounted_ = false;
  std::unique_ptr<Index> index_;
  const Clock::time_point now_ = Clock::now();
};

// --- Parsing --------------------------------------------------------------------------------

TEST(RetentionParse, Sizes) {
  EXPECT_EQ(parse_size("0"), 0U);
  EXPECT_EQ(parse_size("4096"), 4096U);
  EXPECT_EQ(parse_size("512B"), 512U);
  EXPECT_EQ(parse_size("2K"), 2048U);
  EXPECT_EQ(parse_size("500M"), 500 * MiB);
  EXPECT_EQ(parse_size("2G"), 2 * 1024 * MiB);
  EXPECT_EQ(parse_size("2GiB"), 2 * 1024 * MiB);
  EXPECT_EQ(parse_size("2gb"), 2 * 1024 * MiB);
  EXPECT_EQ(parse_size(" 1.5 G "), 1536 * MiB);
  EXPECT_EQ(parse_size("1T"), 1024ULL * 1024 * MiB);
  EXPECT_EQ(parse_size("7E"), 7ULL << 60);
  for (const char* bad : {"", "G", "-1", "1.", ".5G", "10%", "2X", "2GG", "2 G B", "8E",
                          "99999999999999999999", "1e6"}) {
    EXPECT_FALSE(parse_size(bad)) << bad;
  }
}

TEST(RetentionParse, PercentsAndDurations) {
  EXPECT_DOUBLE_EQ(*parse_percent("10%"), 10.0);
  EXPECT_DOUBLE_EQ(*parse_percent(" 12.5 % "), 12.5);
  for (const char* bad : {"10", "0%", "100%", "150%", "-5%", "%", "a%"}) {
    EXPECT_FALSE(parse_percent(bad)) << bad;
  }
  EXPECT_EQ(parse_duration("90"), 90s);
  EXPECT_EQ(parse_duration("7d"), 7 * 24h);
  EXPECT_EQ(parse_duration("12h"), 12h);
  EXPECT_EQ(parse_duration("1d 12h"), 36h);
  EXPECT_EQ(parse_duration("1d12h30min"), 36h + 30min);
  EXPECT_EQ(parse_duration("2w"), 14 * 24h);
  EXPECT_EQ(parse_duration("5m"), 5min);
  EXPECT_EQ(parse_duration("30 seconds"), 30s);
  for (const char* bad : {"", "0", "0d", "d", "7x", "1.5d", "-1d", "7d 3", "99999999999999999d"}) {
    EXPECT_FALSE(parse_duration(bad)) << bad;
  }
}

// --- Vacuum ---------------------------------------------------------------------------------

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

// --- Verify ---------------------------------------------------------------------------------

TEST_F(RetentionTest, VerifyCleanStore) {
  add_sized(1, 1000, 100s, 10 * KiB);
  add(2, 1000, 90s, std::string(100000, 'x'));
  add(3, 1000, 80s, "", "", DumpState::Failed);
  add(4, 1000, 70s, "streaming", "", DumpState::InProgress);  // file linked, row not yet updated
  // A raw core linked while its row still says "<id>.zst" (the daemon updates the row after).
  add(5, 1000, 60s, "", "", DumpState::InProgress);
  ASSERT_EQ(::unlink((store_ + "/" + make_id(5) + ".zst").c_str()), 0);
  write_file(store_ + "/" + make_id(5) + ".core", "raw, row not yet updated");
  write_file(store_ + "/.partial-" + make_id(9) + ".zst", "half");
  const VerifyReport v = verify(*index_, dirfd_, true);
  EXPECT_TRUE(v.ok()) << v.issues[0].name << ": " << v.issues[0].detail;
  EXPECT_EQ(v.files, 4U);  // not index.sqlite*, not the dotfile
  EXPECT_EQ(v.cores, 2U);
  EXPECT_EQ(v.deep_checked, 2U);
}

// A well-compressible core whose size is a multiple of 128 KiB (zstd's block size and its
// streaming output buffer): the decoder's last output exactly fills the buffer, and a further call
// after the frame's end must not be taken for "ends in the middle of a zstd frame". Found with
// 40 MiB text cores from the daemon; the smallest such core is one block.
TEST_F(RetentionTest, VerifyDeepAcceptsCoresOfWholeZstdBlocks) {
  add(1, 1000, 100s, std::string(128 * KiB, 'a'));
  add(2, 1000, 90s, std::string(4 * 1024 * KiB, 'b'));
  add(3, 1000, 80s, std::string(40 * 1024 * KiB, '\0'));
  const VerifyReport v = verify(*index_, dirfd_, true);
  EXPECT_EQ(v.deep_checked, 3U);
  for (const auto& i : v.issues) ADD_FAILURE() << i.name << ": " << i.detail;
}

TEST_F(RetentionTest, VerifyFindsEveryKindOfProblem) {
  add_sized(1, 1000, 100s, 10 * KiB);             // fine
  add_sized(2, 1000, 90s, 10 * KiB);              // file deleted -> missing
  add_sized(3, 1000, 80s, 10 * KiB);              // file grown -> size mismatch
  add(4, 1000, 70s, std::string(200000, 'a') + random_bytes(1000, 4));  // corrupted -> deep only
  add(5, 1000, 60s, std::string(50000, 'b'));     // truncated mid-frame, index agrees on the size
  DumpRecord r6 = add(6, 1000, 50s, std::string(50000, 'c'));  // core_size wrong in the index
  write_file(store_ + "/" + make_id(7) + ".zst", "no row");     // orphan
  write_file(store_ + "/stray file\x1b[31m", "junk");           // orphan, hostile name

  ASSERT_EQ(::unlink((store_ + "/" + make_id(2) + ".zst").c_str()), 0);
  { std::ofstream(store_ + "/" + make_id(3) + ".zst", std::ios::binary | std::ios::app) << "x"; }
  {
    const std::string p = store_ + "/" + make_id(4) + ".zst";
    std::string z = read_file(p);
    z[z.size() / 2] = static_cast<char>(z[z.size() / 2] ^ 0x55);
    write_file(p, z);
  }
  {
    const std::string p = store_ + "/" + make_id(5) + ".zst";
    std::string z = read_file(p);
    z.resize(z.size() - 6);
    write_file(p, z);
    DumpRecord r5 = *index_->get(make_id(5));
    r5.stored_size = z.size();
    index_->update(r5);
  }
  r6.core_size += 1;
  index_->update(r6);

  const auto kinds = [](const VerifyReport& rep) {
    std::multiset<std::pair<std::string, std::string>> s;
    for (const auto& i : rep.issues) s.emplace(verify_problem_name(i.problem), i.name);
    return s;
  };
  const std::string n = ".zst";
  const VerifyReport shallow = verify(*index_, dirfd_, false);
  EXPECT_EQ(kinds(shallow), (std::multiset<std::pair<std::string, std::string>>{
                                {"missing", make_id(2) + n},
                                {"size_mismatch", make_id(3) + n},
                                {"orphan", make_id(7) + n},
                                {"orphan", "stray file\x1b[31m"},
                            }));
  EXPECT_EQ(shallow.deep_checked, 0U);

  const VerifyReport deep = verify(*index_, dirfd_, true);
  EXPECT_EQ(kinds(deep), (std::multiset<std::pair<std::string, std::string>>{
                             {"missing", make_id(2) + n},
                             {"size_mismatch", make_id(3) + n},
                             {"corrupt", make_id(4) + n},
                             {"corrupt", make_id(5) + n},
                             {"core_size_mismatch", make_id(6) + n},
                             {"orphan", make_id(7) + n},
                             {"orphan", "stray file\x1b[31m"},
                         }));
  for (const auto& i : deep.issues) {
    if (i.name == make_id(5) + n) {
      EXPECT_NE(i.detail.find("middle of a zstd frame"), std::string::npos) << i.detail;
    }
    if (i.name == make_id(7) + n) {
      EXPECT_EQ(i.detail, "no row in the index");
    }
  }
  // Vacuum left the file of a row it marked? verify says so (a failed unlink would look like this).
  RetentionLimits l;
  l.max_use_per_uid_bytes = 0;
  run_vacuum(l, "", false);
  write_file(store_ + "/" + make_id(1) + ".zst", "back again");
  const VerifyReport after = verify(*index_, dirfd_, false);
  bool found = false;
  for (const auto& i : after.issues) {
    if (i.name == make_id(1) + n) {
      found = true;
      EXPECT_EQ(i.problem, VerifyProblem::Orphan);
      EXPECT_NE(i.detail.find("vacuumed"), std::string::npos) << i.detail;
    }
  }
  EXPECT_TRUE(found);
}

TEST_F(RetentionTest, VerifyReadsRawCoresThrough) {
  add_raw(1, 1000, 100s, random_bytes(3 * MiB + 5, 1));  // more than one read
  add_raw(2, 1000, 90s, "ELF head", 2 * MiB, "tail");     // sparse
  add_raw(3, 1000, 80s, "");                              // an empty core
  add(4, 1000, 70s, std::string(100000, 'x'));            // a zstd one beside them
  DumpRecord t = add_raw(5, 1000, 60s, "cut short");      // truncated: the index agrees
  t.state = DumpState::Truncated;
  t.core_size = 1000;
  t.extra["stored_core_bytes"] = 9;
  index_->update(t);
  const VerifyReport v = verify(*index_, dirfd_, true);
  EXPECT_TRUE(v.ok()) << v.issues[0].name << ": " << v.issues[0].detail;
  EXPECT_EQ(v.files, 5U);
  EXPECT_EQ(v.cores, 5U);
  EXPECT_EQ(v.deep_checked, 5U);

  const CliResult cli = dumpctl({"verify", "--deep"});
  EXPECT_EQ(cli.rc, 0) << cli.out << cli.err;
  EXPECT_NE(cli.out.find("Checked 5 files and 5 cores (5 read in full): no problems found."),
            std::string::npos)
      << cli.out;
}

TEST_F(RetentionTest, VerifyFindsProblemsOfRawCores) {
  add_raw(1, 1000, 100s, random_bytes(10 * KiB, 1));                 // fine
  add_raw(2, 1000, 90s, random_bytes(10 * KiB, 2));                  // cut short: size mismatch
  DumpRecord r3 = add_raw(3, 1000, 80s, random_bytes(10 * KiB, 3));  // core_size wrong: deep only
  add_raw(4, 1000, 70s, random_bytes(10 * KiB, 4));                  // file deleted: missing
  DumpRecord r5 = add_raw(5, 1000, 60s, "x");  // truncated, kept bytes wrong: deep only
  add(6, 1000, 50s, "", "", DumpState::Failed);                      // failed, yet a .core file
  DumpRecord r7 = add_raw(7, 1000, 40s, "still here");               // vacuumed, file left behind
  write_file(store_ + "/" + make_id(6) + ".core", "stray");
  write_file(store_ + "/" + make_id(8) + ".core", "no row");

  {
    const std::string p = store_ + "/" + make_id(2) + ".core";
    write_file(p, read_file(p).substr(0, 10 * KiB - 100));
  }
  r3.core_size += 1;
  index_->update(r3);
  ASSERT_EQ(::unlink((store_ + "/" + make_id(4) + ".core").c_str()), 0);
  r5.state = DumpState::Truncated;
  r5.core_size = 100;
  r5.extra["stored_core_bytes"] = 2;
  index_->update(r5);
  r7.extra["vacuumed"] = {{"reason", "max_use"}, {"time_us", 1}, {"path", r7.path},
                          {"stored_size", r7.stored_size}};
  r7.path.clear();
  index_->update(r7);

  using Found = std::multiset<std::pair<std::string, std::string>>;
  const auto kinds = [](const VerifyReport& rep) {
    Found s;
    for (const auto& i : rep.issues) s.emplace(verify_problem_name(i.problem), i.name);
    return s;
  };
  const std::string n = ".core";
  const Found shallow_want = {
      {"size_mismatch", make_id(2) + n}, {"missing", make_id(4) + n}, {"orphan", make_id(6) + n},
      {"orphan", make_id(7) + n},        {"orphan", make_id(8) + n},
  };
  EXPECT_EQ(kinds(verify(*index_, dirfd_, false)), shallow_want);
  Found deep_want = shallow_want;
  deep_want.emplace("core_size_mismatch", make_id(3) + n);
  deep_want.emplace("core_size_mismatch", make_id(5) + n);
  const VerifyReport deep = verify(*index_, dirfd_, true);
  EXPECT_EQ(kinds(deep), deep_want);
  EXPECT_EQ(deep.deep_checked, 3U);  // dumps 1, 3 and 5
  // The orphans' rows are found from their ".core" names: the details say what became of them.
  const std::map<std::string, std::string> details = {
      {make_id(2) + n, "10140 bytes on disk, the index says 10240"},
      {make_id(3) + n, "holds 10240 bytes, the index says 10241"},
      {make_id(4) + n, "complete dump's core file is not in the store"},
      {make_id(5) + n, "holds 1 bytes, the index says 2"},
      {make_id(6) + n, "row " + make_id(6) + " is failed and holds no core"},
      {make_id(7) + n, "row " + make_id(7) + " was vacuumed (max_use) but the file is still here"},
      {make_id(8) + n, "no row in the index"},
  };
  for (const auto& i : deep.issues) EXPECT_EQ(i.detail, details.at(i.name)) << i.name;
}

// --- dumpctl --------------------------------------------------------------------------------

TEST_F(RetentionTest, DumpctlDu) {
  add_sized(1, 1000, 100s, 10 * KiB, "web");
  add_sized(2, 0, 90s, 20 * KiB);
  CliResult r = dumpctl({"du"});
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("Cores: 2,"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Filesystem: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("UID"), std::string::npos);
  EXPECT_NE(r.out.find("(defaults)"), std::string::npos);
  EXPECT_NE(r.out.find("web"), std::string::npos);

  r = dumpctl({"du", "--json"});
  ASSERT_EQ(r.rc, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["cores"], 2);
  EXPECT_EQ(j["rows"], 2);
  ASSERT_EQ(j["by_uid"].size(), 2U);
  EXPECT_EQ(j["by_uid"][0]["uid"], 0);  // biggest first
  EXPECT_EQ(j["by_uid"][1]["uid"], 1000);
  ASSERT_EQ(j["by_rule"].size(), 2U);
  EXPECT_EQ(j["by_rule"][1]["rule"], "web");
  EXPECT_TRUE(j["filesystem"]["free_bytes"].is_number_unsigned());
}

TEST_F(RetentionTest, DumpctlVacuum) {
  add_sized(1, 1000, 10 * 24h, 10 * KiB);
  add_sized(2, 1000, 100s, 10 * KiB);
  add_sized(3, 1000, 50s, 10 * KiB);
  index_.reset();  // dumpctl opens its own connection

  CliResult r = dumpctl({"vacuum"});
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("nothing to do"), std::string::npos) << r.err;
  r = dumpctl({"vacuum", "--max-use", "lots"});
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("invalid --max-use size 'lots'"), std::string::npos) << r.err;
  r = dumpctl({"vacuum", "--max-age", "7x"});
  EXPECT_EQ(r.rc, 1);

  r = dumpctl({"vacuum", "--max-age", "7d", "--dry-run"});
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("Would delete " + make_id(1)), std::string::npos) << r.out;
  EXPECT_TRUE(has_file(1));

  r = dumpctl({"vacuum", "--max-age", "7d", "--max-use", "15K"});
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("Deleted " + make_id(1)), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(max_age) with its record"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Deleted " + make_id(2)), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(max_use)"), std::string::npos) << r.out;
  EXPECT_FALSE(has_file(1));
  EXPECT_FALSE(has_file(2));
  EXPECT_TRUE(has_file(3));

  r = dumpctl({"vacuum", "--keep-free", "1%", "--json"});
  EXPECT_EQ(r.rc, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["dry_run"], false);
  EXPECT_TRUE(j["removed"].is_array());

  // Not a store: refused, and no index is created.
  const std::string empty = root_ + "/empty";
  fs::create_directory(empty);
  std::ostringstream out, err;
  const int rc = cli::dumpctl_main({"dumpctl", "--store", empty, "vacuum", "--max-use", "1G"},
                                   cli::Io{out, err, false});
  EXPECT_EQ(rc, 1);
  EXPECT_NE(err.str().find("no index"), std::string::npos) << err.str();
  EXPECT_FALSE(fs::exists(empty + "/index.sqlite"));
}

TEST_F(RetentionTest, DumpctlVerify) {
  add_sized(1, 1000, 100s, 10 * KiB);
  add(2, 1000, 90s, std::string(100000, 'z'));
  CliResult r = dumpctl({"verify", "--deep"});
  EXPECT_EQ(r.rc, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("no problems found"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(2 read in full)"), std::string::npos) << r.out;

  write_file(store_ + "/" + make_id(8) + ".zst", "orphan");
  write_file(store_ + "/evil\x1b]0;title\x07", "x");
  {
    const std::string p = store_ + "/" + make_id(2) + ".zst";
    std::string z = read_file(p);
    z[z.size() - 2] = static_cast<char>(z[z.size() - 2] ^ 1);  // inside the checksum
    write_file(p, z);
  }
  r = dumpctl({"verify"});
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.out.find("orphan: " + make_id(8) + ".zst: no row in the index"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("evil\\x1b]0;title\\x07"), std::string::npos) << r.out;  // escaped
  EXPECT_EQ(r.out.find('\x1b'), std::string::npos);
  EXPECT_NE(r.out.find("2 problems found"), std::string::npos) << r.out;

  r = dumpctl({"verify", "--deep", "--json"});
  EXPECT_EQ(r.rc, 1);
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["ok"], false);
  ASSERT_EQ(j["problems"].size(), 3U);
  bool corrupt = false;
  for (const auto& p : j["problems"]) {
    if (p["problem"] == "corrupt") {
      corrupt = true;
      EXPECT_EQ(p["id"], make_id(2));
      EXPECT_NE(p["detail"].get<std::string>().find("checksum"), std::string::npos) << p.dump();
    }
  }
  EXPECT_TRUE(corrupt);
}

}  // namespace
}  // namespace coredumpd
