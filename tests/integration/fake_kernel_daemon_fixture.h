// The fixture of the fake-kernel integration tests: a real coredumpd (started with
// --allow-unverified-peers, since the fake kernel's pidfd never shows PIDFD_COREDUMPED) on a fresh
// store, the fake kernel's options for it, and what the tests read back (records, stored cores).
#pragma once

#include <fcntl.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <cerrno>
#include <cstring>
#include <thread>

#include "store/index.h"
#include "store/record_extras.h"
#include "tests/fake_kernel/expect_released.h"
#include "tests/fake_kernel/fake_kernel.h"
#include "tests/support/test_support.h"

namespace coredumpd::test {

namespace fk = coredumpd::fake_kernel;
namespace cp = coredumpd::protocol;

inline constexpr std::uint64_t kCloseFiles = cp::COREDUMP_CLOSE_FILES_DEFAULT;
inline constexpr std::size_t kMebi = 1 << 20;

// Fills [from, to) of `core` with pseudo-random bytes (zstd cannot shrink them).
inline void fill_random(std::vector<std::byte>& core, std::size_t from, std::size_t to, std::uint64_t seed) {
  std::mt19937_64 gen(seed);
  for (std::size_t i = from; i < to; i += 8) {
    const auto w = gen();
    std::memcpy(core.data() + i, &w, std::min<std::size_t>(8, to - i));
  }
}

// Fills [from, to) of `core` with repetitive log-like text (zstd shrinks it by far more than 3 %).
inline void fill_text(std::vector<std::byte>& core, std::size_t from, std::size_t to) {
  const std::string text = "pid 42 request handled in 17 ms; session token cache hit; ";
  for (std::size_t i = from; i < to; ++i) core[i] = static_cast<std::byte>(text[i % text.size()] + (i / 65536) % 3);
}

// The sizes (bytes) of the unnamed files (O_TMPFILE, "<dir>/#<ino> (deleted)", or ".partial-*"
// where the filesystem lacks it) process `pid` holds open in `dir`, one per file however many
// descriptors it has: during a dump, its spool and its compressed core. Empty if /proc cannot be read.
inline std::vector<std::uint64_t> unnamed_file_sizes(pid_t pid, const std::string& dir) {
  namespace fs = std::filesystem;
  std::map<ino_t, std::uint64_t> by_inode;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec)) {
    std::error_code lec;
    const std::string target = fs::read_symlink(e.path(), lec).string();
    if (lec || (target.rfind(dir + "/#", 0) != 0 && target.rfind(dir + "/.partial-", 0) != 0)) continue;
    struct stat sb {};
    if (::stat(e.path().c_str(), &sb) == 0) by_inode[sb.st_ino] = static_cast<std::uint64_t>(sb.st_size);
  }
  std::vector<std::uint64_t> sizes;
  for (const auto& [ino, size] : by_inode) sizes.push_back(size);
  return sizes;
}

class FakeKernelDaemon : public ::testing::Test {
 protected:
  // Starts coredumpd with `config` (a JSON object's text) on a fresh store; `extra_args` go on its
  // command line (--enable-test-hooks for a "testing" section).
  void start(const std::string& config = "{}", const std::vector<std::string>& extra_args = {}) {
    dir_ = std::make_unique<TempDir>();
    socket_ = *dir_ / "s";
    store_ = *dir_ / "store";
    std::ofstream(*dir_ / "config.json") << config;
    std::vector<std::string> args{"--allow-unverified-peers", "--config", *dir_ / "config.json"};
    args.insert(args.end(), extra_args.begin(), extra_args.end());
    daemon_ = std::make_unique<Daemon>(COREDUMPD_BIN, socket_, store_, *dir_ / "log", args);
  }
  void SetUp() override { start(); }
  void TearDown() override {
    if (HasFailure() && daemon_) std::fprintf(stderr, "coredumpd log:\n%s\n", daemon_->log().c_str());
  }

  fk::Options options(std::uint64_t size = 256 * 1024) {
    fk::Options o;
    o.socket_path = socket_;
    o.core = fk::CoreSource::pattern(size, 3, 4096, 7, true);  // every third page data, rest zero
    o.timeout = std::chrono::milliseconds(15'000);
    return o;
  }

  // The single record the daemon wrote for this test, once it has left InProgress.
  std::optional<DumpRecord> only_record() {
    std::optional<DumpRecord> found;
    wait_until(
        [&] {
          try {
            Index index(store_, false);
            auto all = index.list();
            if (all.size() == 1 && all[0].state != DumpState::InProgress) found = all[0];
          } catch (const IndexError&) {
          }
          return found.has_value();
        },
        15s);
    return found;
  }
  // Dumps `core` through the fake kernel (options()) and returns the one record it left; a task
  // not released, or a record in another state than `want`, fails the test.
  std::optional<DumpRecord> dump_one(const std::vector<std::byte>& core, DumpState want = DumpState::Complete) {
    auto o = options();
    o.core = fk::CoreSource::from_buffer(core);
    const auto res = fk::run(o);
    EXPECT_TRUE(fk::task_released(res));
    auto r = only_record();
    if (r) {
      EXPECT_EQ(r->state, want) << r->reason;
    }
    return r;
  }

  std::vector<DumpRecord> records() {
    try {
      return Index(store_, false).list();
    } catch (const IndexError&) {
      return {};
    }
  }

  // The stored core, decompressed by dumpctl.
  std::optional<std::vector<std::byte>> stored_core(const DumpRecord& r) {
    const std::string out = *dir_ / ("core-" + r.id);
    const auto [st, text] = run_capture({DUMPCTL_BIN, "--store", store_, "dump", r.id, "-o", out});
    if (st.exit_code() != 0) return std::nullopt;
    const auto bytes = read_file(out);
    if (!bytes) return std::nullopt;
    const auto* p = reinterpret_cast<const std::byte*>(bytes->data());
    return std::vector<std::byte>(p, p + bytes->size());
  }

  // `dumpctl verify --deep`: every core file read through, sizes checked. Empty if clean, else its output.
  std::string verify_problems() {
    const auto [st, text] = run_capture({DUMPCTL_BIN, "--store", store_, "verify", "--deep"});
    return st.exit_code() == 0 ? std::string() : "exit " + std::to_string(st.exit_code()) + ": " + text;
  }

  // Names in the store other than the index's files.
  std::vector<std::string> store_files() {
    std::vector<std::string> names;
    const auto [st, ls] = run_capture({"/bin/ls", "-A", store_});
    std::size_t start = 0;
    for (std::size_t nl; (nl = ls.find('\n', start)) != std::string::npos; start = nl + 1) {
      const std::string name = ls.substr(start, nl - start);
      if (!name.empty() && name.rfind("index.sqlite", 0) != 0) names.push_back(name);
    }
    return names;
  }

  // Every record, once `n` exist and none is InProgress (bounded wait).
  std::vector<DumpRecord> settled_records(std::size_t n, std::chrono::milliseconds timeout = 30s) {
    std::vector<DumpRecord> all;
    wait_until(
        [&] {
          all = records();
          return all.size() == n && std::none_of(all.begin(), all.end(), [](const DumpRecord& r) {
                   return r.state == DumpState::InProgress;
                 });
        },
        timeout);
    return all;
  }

  // dumpctl dump of `r` gives exactly the first `n` bytes of `core`.
  ::testing::AssertionResult stored_prefix_is(const DumpRecord& r, std::size_t n, const std::vector<std::byte>& core) {
    const auto back = stored_core(r);
    if (!back) return ::testing::AssertionFailure() << "dumpctl dump " << r.id << " failed";
    if (back->size() != n) return ::testing::AssertionFailure() << back->size() << " bytes stored, want " << n;
    if (!std::equal(back->begin(), back->end(), core.begin())) return ::testing::AssertionFailure() << "not the exact prefix";
    return ::testing::AssertionSuccess();
  }

  // `n` fake-kernel crashes at once (options()); each must be dumped.
  void crash_all_at_once(int n) {
    std::vector<std::thread> threads;
    std::atomic<int> dumped{0};
    for (int i = 0; i < n; ++i)
      threads.emplace_back([&] {
        if (fk::task_released(fk::run(options()))) ++dumped;
      });
    for (auto& t : threads) t.join();
    EXPECT_EQ(dumped, n);
  }

  // Starts the daemon with `config` and its test hooks on (--enable-test-hooks), then crashes `n`
  // times at once; every record, once `n` have settled (fewer if the bounded wait ran out).
  std::vector<DumpRecord> crashes_at_once_with_test_hooks(const std::string& config, int n) {
    start(config, {"--enable-test-hooks"});
    crash_all_at_once(n);
    return settled_records(static_cast<std::size_t>(n));
  }

  static std::vector<std::byte> plain(const fk::CoreSource& core) {
    std::string error;
    return core.materialize(error).value();
  }

  std::unique_ptr<TempDir> dir_;
  std::string socket_, store_;
  std::unique_ptr<Daemon> daemon_;
  ScopedCoreLimit core_limit_{~0ULL};  // the peer is this process: its RLIMIT_CORE is policy input
};

}  // namespace coredumpd::test
