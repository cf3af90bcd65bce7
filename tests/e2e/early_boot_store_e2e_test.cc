// Real-kernel tests of the fallback for cores (issue 23, docs/EARLY_BOOT.md): with the store's
// filesystem not mounted yet (its directory and its parent missing, as /var/lib/coredumpd is under
// a /var not mounted in early boot), or read-only, a real crash's core is kept compressed in the
// fallback with its record in the pending journal; dumpctl lists it as pending and dumps it; a
// restart in between loses nothing; once the store appears (a tmpfs mounted, the directory made as
// systemd-tmpfiles would) or turns writable, the core moves in byte for byte and its record into
// the index, complete. A core beyond the fallback's bound is recorded without it, with the reason.
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "store/fallback_core.h"
#include "store/pending_journal.h"
#include "store/record_extras.h"
#include "tests/e2e/real_kernel_fixture.h"

using namespace coredumpd;
using namespace coredumpd::test;
namespace fs = std::filesystem;

namespace {

// The daemon looks at an unusable store again every 10 s (server.cc kStoreRecheck), and at once
// when a dump arrives; a move of a small core takes milliseconds.
constexpr auto kMoveBound = 40s;

class EarlyBootStore : public RealKernel {
 protected:
  void SetUp() override {
    SKIP_WITHOUT_REAL_KERNEL("real-kernel test");
    if (::geteuid() != 0) GTEST_SKIP() << "needs root: mounts tmpfs filesystems";
    dir_ = std::make_unique<TempDir>();
    socket_ = *dir_ / "coredump.socket";
    var_ = *dir_ / "var";
    store_ = var_ + "/lib/coredumpd";  // neither it nor its parent exists: "not mounted yet"
    fallback_ = *dir_ / "fallback";
    pending_ = *dir_ / "pending";
  }
  void TearDown() override {
    RealKernel::TearDown();  // stops the daemon before its filesystems go
    for (auto it = mounts_.rbegin(); it != mounts_.rend(); ++it) ::umount2(it->c_str(), MNT_DETACH);
  }
  std::string config(const std::string& extra = "") const {
    return R"({"defaults": {"post_dump": []}, "pending_dir": ")" + pending_ + R"(", "fallback_dir": ")" + fallback_ +
           "\"" + extra + "}";
  }
  bool mount_tmpfs(const std::string& at, const std::string& options = "size=64m,mode=0755") {
    fs::create_directories(at);
    if (::mount("tmpfs", at.c_str(), "tmpfs", 0, options.c_str()) != 0) return false;
    mounts_.push_back(at);
    return true;
  }
  // The pending journal's entry for `pid` once it has left InProgress.
  std::optional<PendingEntry> pending_of(pid_t pid, std::chrono::milliseconds timeout = 30s) {
    std::optional<PendingEntry> found;
    wait_until(
        [&] {
          for (auto& e : read_pending_journal(pending_).entries)
            if (e.record.pid == pid && e.record.state != DumpState::InProgress) found = e;
          return found.has_value();
        },
        timeout);
    return found;
  }
  std::pair<ExitStatus, std::string> dumpctl(std::vector<std::string> args) {
    std::vector<std::string> argv{DUMPCTL_BIN, "--store", store_, "--pending-dir", pending_};
    argv.insert(argv.end(), args.begin(), args.end());
    return run_capture(argv);
  }
  // The crash's core, kept in the fallback: checked, and its file's bytes returned.
  std::string expect_kept_in_fallback(const PendingEntry& e) {
    const DumpRecord& r = e.record;
    EXPECT_EQ(r.state, DumpState::Complete) << r.reason;
    EXPECT_TRUE(core_in_fallback(r)) << r.extra.dump();
    EXPECT_EQ(fallback_dir_of(r).value_or(""), fallback_);
    EXPECT_EQ(r.extra[extras::kFallback].value("file", ""), r.path);
    struct stat st{};
    EXPECT_EQ(::stat(fallback_.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0700u) << "the fallback holds crashed programs' memory: root only";
    const auto bytes = read_file(fallback_ + "/" + r.path);
    EXPECT_TRUE(bytes && !bytes->empty()) << "no core file " << r.path << " in the fallback";
    return bytes.value_or("");
  }
  // Waits until the index has `id` out of the fallback, and returns that row.
  std::optional<DumpRecord> moved_in(const std::string& id) {
    std::optional<DumpRecord> row;
    wait_until(
        [&] {
          try {
            row = Index(store_, false).get(id);
          } catch (const IndexError&) {
            row.reset();
          }
          return row && !core_in_fallback(*row);
        },
        kMoveBound);
    return row;
  }

  std::string var_, fallback_, pending_;
  std::vector<std::string> mounts_;
};

TEST_F(EarlyBootStore, CoreKeptInTheFallbackMovesInWhenTheStoreIsMounted) {
  restart_daemon(config());
  EXPECT_FALSE(fs::exists(var_)) << "the daemon must not create the store under a missing parent";
  EXPECT_NE(daemon_->log().find("missing, and so is its parent"), std::string::npos) << daemon_->log();

  pid_t pid = 0;
  const auto st = crash({"--mode", "segv", "--touch-mib", "4"}, &pid);
  ASSERT_TRUE(st.exited);
  EXPECT_TRUE(st.core_dumped()) << "the core was taken (into the fallback)";
  const auto kept = pending_of(pid);
  ASSERT_TRUE(kept) << daemon_->log();
  expect_released_promptly(kept->record);
  EXPECT_NE(kept->record.extra[extras::kFallback].value("reason", "").find("store directory is missing"), std::string::npos)
      << kept->record.extra.dump();
  const std::string bytes = expect_kept_in_fallback(*kept);
  EXPECT_FALSE(fs::exists(var_));

  // dumpctl, with no store to read, lists it as pending and dumps it from the fallback.
  const auto [list_st, list] = dumpctl({"list"});
  EXPECT_EQ(list_st.exit_code(), 0) << list;
  EXPECT_NE(list.find(std::to_string(pid)), std::string::npos) << list;
  EXPECT_NE(list.find("pending"), std::string::npos) << list;
  const std::string pending_core = *dir_ / "pending.core";
  const auto [dump_st, dump_out] = dumpctl({"dump", kept->record.id, "-o", pending_core});
  ASSERT_EQ(dump_st.exit_code(), 0) << dump_out;
  const auto check = inspect_core(pending_core);
  EXPECT_TRUE(check.is_core);
  EXPECT_EQ(check.prstatus_signal, SIGSEGV);
  EXPECT_EQ(check.prstatus_pid, pid);

  // A restart meanwhile: the fallback and the journal are found again, nothing is lost.
  restart_daemon(config());
  EXPECT_EQ(read_file(fallback_ + "/" + kept->record.path).value_or(""), bytes);
  ASSERT_TRUE(pending_of(pid, 1s));

  // The store's filesystem is mounted, and systemd-tmpfiles makes the store on it.
  ASSERT_TRUE(mount_tmpfs(var_)) << std::strerror(errno);
  fs::create_directories(store_);
  ::chmod(store_.c_str(), 0750);
  const auto row = moved_in(kept->record.id);
  ASSERT_TRUE(row) << daemon_->log();
  EXPECT_EQ(row->state, DumpState::Complete) << row->reason;
  EXPECT_EQ(row->pid, pid);
  EXPECT_EQ(row->core_size, kept->record.core_size);
  EXPECT_EQ(row->stored_size, kept->record.stored_size);
  EXPECT_TRUE(row->extra[extras::kFallback].contains("moved_us")) << row->extra.dump();
  EXPECT_TRUE(row->extra.contains(extras::kJournaled)) << row->extra.dump();
  EXPECT_EQ(read_file(store_ + "/" + row->path).value_or(""), bytes) << "the core moved in byte for byte";
  EXPECT_FALSE(fs::exists(fallback_ + "/" + row->path)) << "the fallback's copy goes once the store has it";
  EXPECT_TRUE(wait_until([&] { return read_pending_journal(pending_).entries.empty(); }, 5s));
  const std::string stored_core = *dir_ / "stored.core";
  const auto [dump2_st, dump2_out] = dumpctl({"dump", row->id, "-o", stored_core});
  ASSERT_EQ(dump2_st.exit_code(), 0) << dump2_out;
  EXPECT_EQ(read_file(stored_core), read_file(pending_core));

  // And the store serves as usual from now on.
  pid_t after = 0;
  ASSERT_TRUE(complete_dump_of_crash({"--mode", "segv"}, &after));
}

TEST_F(EarlyBootStore, CoreBeyondTheFallbackBoundIsRecordedWithTheReason) {
  restart_daemon(config(R"(, "fallback_max_bytes": "2M", "fallback_keep_free": "0")"));
  pid_t pid = 0;
  const auto st = crash({"--mode", "segv", "--touch-mib", "16", "--fill", "random"}, &pid);
  ASSERT_TRUE(st.exited);
  const auto kept = pending_of(pid);
  ASSERT_TRUE(kept) << daemon_->log();
  const DumpRecord& r = kept->record;
  EXPECT_EQ(r.state, DumpState::Failed);
  EXPECT_NE(r.reason.find("fallback bound reached"), std::string::npos) << r.reason;
  EXPECT_NE(r.reason.find("fallback_max_bytes 2 MiB"), std::string::npos) << r.reason;
  EXPECT_TRUE(r.path.empty());
  EXPECT_FALSE(core_in_fallback(r));
  std::size_t files = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(fallback_)) ++files;
  EXPECT_EQ(files, 0u) << "nothing of the core stays in the fallback";

  // Its record reaches the index with the reason once the store is there.
  ASSERT_TRUE(mount_tmpfs(var_)) << std::strerror(errno);
  fs::create_directories(store_);
  std::optional<DumpRecord> row;
  ASSERT_TRUE(wait_until(
      [&] {
        try {
          row = Index(store_, false).get(r.id);
        } catch (const IndexError&) {
        }
        return row.has_value();
      },
      kMoveBound))
      << daemon_->log();
  EXPECT_EQ(row->state, DumpState::Failed);
  EXPECT_EQ(row->reason, r.reason);
}

TEST_F(EarlyBootStore, ReadOnlyStoreKeepsTheCoreUntilItIsWritable) {
  ASSERT_TRUE(mount_tmpfs(var_)) << std::strerror(errno);
  fs::create_directories(store_);
  ASSERT_EQ(::mount(nullptr, var_.c_str(), nullptr, MS_REMOUNT | MS_RDONLY, "size=64m"), 0) << std::strerror(errno);
  restart_daemon(config());
  pid_t pid = 0;
  const auto st = crash({"--mode", "segv"}, &pid);
  ASSERT_TRUE(st.exited);
  EXPECT_TRUE(st.core_dumped());
  const auto kept = pending_of(pid);
  ASSERT_TRUE(kept) << daemon_->log();
  EXPECT_NE(kept->record.extra[extras::kFallback].value("reason", "").find("read-only"), std::string::npos)
      << kept->record.extra.dump();
  const std::string bytes = expect_kept_in_fallback(*kept);

  ASSERT_EQ(::mount(nullptr, var_.c_str(), nullptr, MS_REMOUNT, "size=64m"), 0) << std::strerror(errno);
  const auto row = moved_in(kept->record.id);
  ASSERT_TRUE(row) << daemon_->log();
  EXPECT_EQ(row->state, DumpState::Complete) << row->reason;
  EXPECT_EQ(read_file(store_ + "/" + row->path).value_or(""), bytes);
  EXPECT_FALSE(fs::exists(fallback_ + "/" + row->path));
}

// The daemon in a mount namespace like the unit's (ProtectSystem=strict: the host's tree, read-only,
// receiving the host's later mounts as a slave): the store's filesystem mounted on the host after
// the start shows up inside, writable, and the kept core moves in (docs/EARLY_BOOT.md, "A mount
// that appears after the start"). The namespace is made with unshare(1), not by systemd: the
// machine's systemd is not PID 1.
TEST_F(EarlyBootStore, StoreMountedAfterTheStartIsSeenInsideAReadOnlyNamespace) {
  if (!fs::exists("/usr/bin/unshare")) GTEST_SKIP() << "no /usr/bin/unshare (util-linux)";
  const std::string root = *dir_ / "root";  // stands for "/": var_ below it is the mount point
  ASSERT_TRUE(mount_tmpfs(root)) << std::strerror(errno);
  ASSERT_EQ(::mount(nullptr, root.c_str(), nullptr, MS_SHARED, nullptr), 0) << std::strerror(errno);
  var_ = root + "/var";
  store_ = var_ + "/lib/coredumpd";
  fs::create_directories(var_);
  {
    std::ofstream(*dir_ / "config.json") << config();
  }
  const std::string ro = "mount -o remount,bind,ro " + root + " && exec \"$0\" \"$@\"";
  daemon_ = std::make_unique<Daemon>(COREDUMPD_BIN, socket_, store_, *dir_ / "coredumpd.log",
                                     std::vector<std::string>{"--config", *dir_ / "config.json"},
                                     std::vector<std::string>{"/usr/bin/unshare", "--mount", "--propagation", "slave", "--",
                                                              "/bin/sh", "-c", ro});
  pattern_ = std::make_unique<CorePatternLock>("@@" + socket_);
  pid_t pid = 0;
  ASSERT_TRUE(crash({"--mode", "segv"}, &pid).exited);
  const auto kept = pending_of(pid);
  ASSERT_TRUE(kept) << daemon_->log();
  const std::string bytes = expect_kept_in_fallback(*kept);

  // On the host, after the start: /var mounted, the store made on it (systemd-tmpfiles).
  ASSERT_TRUE(mount_tmpfs(var_)) << std::strerror(errno);
  fs::create_directories(store_);
  const auto row = moved_in(kept->record.id);
  ASSERT_TRUE(row) << daemon_->log();
  EXPECT_EQ(row->state, DumpState::Complete) << row->reason;
  EXPECT_EQ(read_file(store_ + "/" + row->path).value_or(""), bytes);
  pid_t after = 0;
  ASSERT_TRUE(complete_dump_of_crash({"--mode", "segv"}, &after)) << daemon_->log();
}

}  // namespace
