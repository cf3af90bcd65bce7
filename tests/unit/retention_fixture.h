// Shared by the retention tests (vacuum, usage, verify, dumpctl du/vacuum/verify): a temporary
// store with an index, real core files (zstd or raw), and a way to run dumpctl on it. Every test
// runs on a real temporary store with real files.
#pragma once

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
#include "store/retention_limits.h"
#include "store/usage.h"
#include "store/vacuum.h"
#include "store/verify.h"
#include "tests/unit/store_test_files.h"

namespace coredumpd {

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
inline std::string random_bytes(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(rng() & 0xFFU);
  return s;
}

inline bool exists_nofollow(const std::string& path) {
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
    r.rule = rule;
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

}  // namespace coredumpd
