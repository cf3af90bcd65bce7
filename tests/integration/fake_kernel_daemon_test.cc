// Integration tests: a real coredumpd (started with --allow-unverified-peers, since the fake kernel's
// pidfd never shows PIDFD_COREDUMPED) driven by the fake kernel through every part of the protocol
// this 6.18 kernel cannot exercise: VER1 requests, CLOSE_FILES, RECORDS/SPARSE, MEMORY_TYPES, error
// markers, hostile timing.
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

using namespace coredumpd;
using namespace coredumpd::test;
namespace fk = coredumpd::fake_kernel;
namespace cp = coredumpd::protocol;

namespace {

constexpr std::uint64_t kCloseFiles = cp::COREDUMP_CLOSE_FILES_DEFAULT;
constexpr std::size_t kMebi = 1 << 20;

// Fills [from, to) of `core` with pseudo-random bytes (zstd cannot shrink them).
void fill_random(std::vector<std::byte>& core, std::size_t from, std::size_t to, std::uint64_t seed) {
  std::mt19937_64 gen(seed);
  for (std::size_t i = from; i < to; i += 8) {
    const auto w = gen();
    std::memcpy(core.data() + i, &w, std::min<std::size_t>(8, to - i));
  }
}

// Fills [from, to) of `core` with repetitive log-like text (zstd shrinks it by far more than 3 %).
void fill_text(std::vector<std::byte>& core, std::size_t from, std::size_t to) {
  const std::string text = "pid 42 request handled in 17 ms; session token cache hit; ";
  for (std::size_t i = from; i < to; ++i) core[i] = static_cast<std::byte>(text[i % text.size()] + (i / 65536) % 3);
}

// The sizes (bytes) of the unnamed files (O_TMPFILE, "<dir>/#<ino> (deleted)", or ".partial-*"
// where the filesystem lacks it) process `pid` holds open in `dir`, one per file however many
// descriptors it has: during a dump, its spool and its compressed core. Empty if /proc cannot be read.
std::vector<std::uint64_t> unnamed_file_sizes(pid_t pid, const std::string& dir) {
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
  // Dumps `core` through the fake kernel (options()) and returns the one record it left; a dump
  // that did not complete fails the test.
  std::optional<DumpRecord> dump_one(const std::vector<std::byte>& core) {
    auto o = options();
    o.core = fk::CoreSource::from_buffer(core);
    const auto res = fk::run(o);
    EXPECT_TRUE(fk::task_released(res));
    auto r = only_record();
    if (r) {
      EXPECT_EQ(r->state, DumpState::Complete) << r->reason;
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

  static std::vector<std::byte> plain(const fk::CoreSource& core) {
    std::string error;
    return core.materialize(error).value();
  }

  std::unique_ptr<TempDir> dir_;
  std::string socket_, store_;
  std::unique_ptr<Daemon> daemon_;
  ScopedCoreLimit core_limit_{~0ULL};  // the peer is this process: its RLIMIT_CORE is policy input
};

TEST_F(FakeKernelDaemon, Ver0KernelWaitStoresTheExactCore) {
  auto o = options();
  const auto res = fk::run(o);
  ASSERT_TRUE(fk::task_released(res));
  ASSERT_TRUE(res.ack);
  EXPECT_EQ(res.ack->mask, cp::COREDUMP_KERNEL | cp::COREDUMP_WAIT);
  EXPECT_EQ(res.ack->size, 16u);
  EXPECT_TRUE(res.waited);
  EXPECT_EQ(res.wait_end, fk::WaitEnd::Eof);
  EXPECT_FALSE(res.server_sent_data) << "the daemon must never send bytes after the ack";

  const auto r = only_record();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->state, DumpState::Complete) << r->reason;
  EXPECT_EQ(r->core_size, o.core.size());
  EXPECT_EQ(r->pid, ::getpid());
  EXPECT_EQ(r->extra["negotiation"]["close_files"], "not offered");
  EXPECT_EQ(r->extra["negotiation"]["wait"], "granted");
  EXPECT_TRUE(r->extra.value("unverified_peer", false));
  EXPECT_EQ(stored_core(*r), plain(o.core));
}

TEST_F(FakeKernelDaemon, LongerRequestOfANewerKernelIsReadAndItsTailDiscarded) {
  auto o = options();
  o.request_size = 48;
  o.size_ack = 40;
  o.mask = fk::MASK_NEXT;
  const auto res = fk::run(o);
  ASSERT_TRUE(fk::task_released(res));
  EXPECT_EQ(res.ack->size, 24u);  // min(sizeof our ack, size_ack)
  const auto r = only_record();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->extra["request"]["size"], 48);
  EXPECT_EQ(r->state, DumpState::Complete) << r->reason;
}

TEST_F(FakeKernelDaemon, RequestBelow16IsRefusedAndNothingStored) {
  auto o = options();
  o.size_field = 8;
  const auto res = fk::run(o);
  EXPECT_EQ(res.outcome, fk::Outcome::HungUpBeforeAck);
  EXPECT_TRUE(wait_until([&] { return daemon_->log().find("below the minimum") != std::string::npos; }, 5s));
  EXPECT_TRUE(records().empty());
}

TEST_F(FakeKernelDaemon, SilentPeerIsDroppedAtTheHandshakeDeadline) {
  auto o = options();
  o.stalls.push_back({fk::Point::Connected, std::chrono::seconds(6)});
  const auto res = fk::run(o);
  EXPECT_FALSE(res.marker_sent);
  EXPECT_TRUE(wait_until([&] { return daemon_->log().find("no complete coredump_req within") != std::string::npos; }, 5s));
  EXPECT_TRUE(records().empty());
}

// Acked, but the marker never comes within the deadline (a storm's late kernel, a killed task):
// the crash happened, so it keeps a record, failed and saying why.
TEST_F(FakeKernelDaemon, AnAckWithoutAMarkerKeepsAFailedRecord) {
  start(R"({"handshake_timeout_ms": 500})");
  auto o = options();
  o.stalls.push_back({fk::Point::AckRead, std::chrono::seconds(3)});
  fk::run(o);
  const auto all = settled_records(1);
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].state, DumpState::Failed);
  EXPECT_NE(all[0].reason.find("did not answer the coredump_ack within 500 ms"), std::string::npos) << all[0].reason;
  EXPECT_EQ(all[0].pid, ::getpid());
}

// CLOSE_FILES offered: requested; the "kernel" closes the task's descriptors after the ack (here:
// the lock file of this test process, which is the peer), and the record still lists the fd and
// its lock, captured before the ack.
TEST_F(FakeKernelDaemon, CloseFilesIsRequestedAndFdsAreCapturedBeforeTheAck) {
  const std::string lock_path = *dir_ / "held.lock";
  int lock_fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  ASSERT_GE(lock_fd, 0);
  struct flock fl{};
  fl.l_type = F_WRLCK;
  ASSERT_EQ(::fcntl(lock_fd, F_SETLK, &fl), 0);

  auto o = options();
  o.request_size = 32;
  o.size_ack = 24;
  o.mask = cp::COREDUMP_MASK_VER0 | kCloseFiles;
  bool closed_before_stream = false;
  o.close_files = [&] {
    ::close(lock_fd);  // the RFC kernel switches the task to an empty fd table here
    lock_fd = -1;
  };
  o.hook = [&](fk::Point p, int) {
    if (p == fk::Point::StreamDone) closed_before_stream = lock_fd == -1;
  };
  const auto res = fk::run(o);
  ASSERT_TRUE(fk::task_released(res));
  EXPECT_TRUE(res.close_files_acked);
  EXPECT_TRUE(res.ack->mask & kCloseFiles);
  EXPECT_TRUE(res.close_files_called);
  EXPECT_TRUE(closed_before_stream);
  ASSERT_TRUE(res.timeline.files_closed && res.timeline.first_stream_byte);
  EXPECT_LE(*res.timeline.files_closed, *res.timeline.first_stream_byte);

  const auto r = only_record();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->extra["negotiation"]["close_files"], "granted");
  bool listed = false;
  for (const auto& fd : r->extra["proc"]["fds"]) {
    if (fd.value("target", std::string()) != lock_path) continue;
    listed = true;
    ASSERT_TRUE(fd.contains("locks")) << fd.dump();
    EXPECT_NE(fd["locks"][0].get<std::string>().find("POSIX  ADVISORY  WRITE"), std::string::npos);
  }
  EXPECT_TRUE(listed) << "the lock file was not captured: " << r->extra["proc"]["fds"].dump();
  bool in_proc_locks = false;
  for (const auto& l : r->extra["proc"]["locks"]) in_proc_locks |= l.get<std::string>().find(std::to_string(::getpid())) != std::string::npos;
  EXPECT_TRUE(in_proc_locks);
}

TEST_F(FakeKernelDaemon, CloseFilesNotOfferedIsNeverSent) {
  auto o = options();
  o.mask = fk::MASK_NEXT;  // everything but CLOSE_FILES
  o.request_size = 32;
  o.size_ack = 24;
  const auto res = fk::run(o);
  ASSERT_TRUE(fk::task_released(res));
  EXPECT_FALSE(res.ack->mask & kCloseFiles);
  EXPECT_FALSE(res.close_files_called);
  const auto r = only_record();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->extra["negotiation"]["close_files"], "not offered");
}

TEST_F(FakeKernelDaemon, CloseFilesDeclinedByPolicy) {
  start(R"({"defaults": {"close_files": false}})");
  auto o = options();
  o.mask = cp::COREDUMP_MASK_VER0 | kCloseFiles;
  const auto res = fk::run(o);
  ASSERT_TRUE(fk::task_released(res));
  EXPECT_FALSE(res.ack->mask & kCloseFiles);
  const auto r = only_record();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->extra["negotiation"]["close_files"], "declined by policy");
}

TEST_F(FakeKernelDaemon, ConfiguredCloseFilesBitIsUsed) {
  start(R"({"close_files_bit": 4096})");
  auto o = options();
  o.mask = cp::COREDUMP_MASK_VER0 | 4096;
  o.close_files_bit = 4096;
  const auto res = fk::run(o);
  ASSERT_TRUE(fk::task_released(res));
  EXPECT_TRUE(res.close_files_acked);
}

TEST_F(FakeKernelDaemon, RejectByPolicyStoresNothingAndReadsNoBytes) {
  start(R"({"rules": [{"name": "no-tests", "match": {"comm": ")" + read_file("/proc/self/comm").value().substr(0, read_file("/proc/self/comm")->size() - 1) + R"("}, "action": "reject"}]})");
  auto o = options();
  o.mask = cp::COREDUMP_MASK_VER0 | kCloseFiles;
  const auto res = fk::run(o);
  EXPECT_EQ(res.outcome, fk::Outcome::Rejected) << res.error;
  EXPECT_EQ(res.ack->mask, cp::COREDUMP_REJECT) << "REJECT carries neither WAIT nor CLOSE_FILES";
  EXPECT_EQ(res.bytes_streamed, 0u);
  EXPECT_FALSE(res.wcoredump);
  const auto r = only_record();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->state, DumpState::Rejected);
  EXPECT_EQ(r->extra["rule"], "no-tests");
  EXPECT_EQ(r->rule, "no-tests") << "the index's rule column";
  EXPECT_TRUE(r->container_key.has_value()) << "the index's container_key column";
  EXPECT_TRUE(r->path.empty());
}

TEST_F(FakeKernelDaemon, MetadataOnlyUsesUserspaceMode) {
  start(R"({"defaults": {"action": "metadata-only"}})");
  const auto res = fk::run(options());
  EXPECT_TRUE(fk::task_released(res));
  EXPECT_EQ(*res.mode, cp::Mode::Userspace);
  EXPECT_EQ(res.bytes_streamed, 0u);
  EXPECT_TRUE(res.wcoredump);
  const auto r = only_record();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->state, DumpState::MetadataOnly);
  EXPECT_TRUE(r->path.empty());
  EXPECT_FALSE(r->exe.empty()) << "metadata was collected";
}

TEST_F(FakeKernelDaemon, SparseRecordsReassembleToThePlainCore) {
  auto o = options(4 << 20);
  o.mask = fk::MASK_NEXT;
  o.request_size = 32;
  o.size_ack = 24;
  const auto res = fk::run(o);
  ASSERT_TRUE(fk::task_released(res));
  EXPECT_TRUE(res.records_acked);
  EXPECT_TRUE(res.sparse_acked);
  EXPECT_LT(res.bytes_streamed, o.core.size()) << "zero pages were sent as ZERO records";
  const auto r = only_record();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->state, DumpState::Complete) << r->reason;
  EXPECT_EQ(r->core_size, o.core.size());
  EXPECT_GT(r->extra.value("records", 0), 1);
  EXPECT_EQ(stored_core(*r), plain(o.core));
}

TEST_F(FakeKernelDaemon, RecordsWithoutSparse) {
  auto o = options(1 << 20);
  o.mask = cp::COREDUMP_MASK_VER0 | cp::COREDUMP_RECORDS;
  o.request_size = 32;
  o.size_ack = 24;
  const auto res = fk::run(o);
  ASSERT_TRUE(fk::task_released(res));
  EXPECT_TRUE(res.records_acked);
  EXPECT_FALSE(res.sparse_acked);
  EXPECT_GT(res.bytes_streamed, o.core.size());
  const auto r = only_record();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->extra["negotiation"]["sparse"], "not offered");
  EXPECT_EQ(stored_core(*r), plain(o.core));
}

TEST_F(FakeKernelDaemon, RecordsStreamCutWithoutEndIsTruncated) {
  auto o = options(2 << 20);
  o.mask = fk::MASK_NEXT;
  o.request_size = 32;
  o.size_ack = 24;
  o.kill_after_bytes = 100'000;
  const auto res = fk::run(o);
  EXPECT_EQ(res.outcome, fk::Outcome::Killed);
  const auto r = only_record();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->state, DumpState::Truncated);
  EXPECT_NE(r->reason.find("without an END"), std::string::npos) << r->reason;
}

TEST_F(FakeKernelDaemon, MalformedRecordsFailWithAReasonAndNoFile) {
  const struct { fk::RecordFault fault; const char* expect; } cases[] = {
      {{fk::RecordFault::Kind::OffsetGap, 2, 4096}, "gap or overlap"},
      {{fk::RecordFault::Kind::Type, 1, 9}, "unknown record type 9"},
      {{fk::RecordFault::Kind::Flags, 0, 1}, "non-zero flags"},
      {{fk::RecordFault::Kind::HeaderSize, 0, 8}, "< 32"},
  };
  for (const auto& c : cases) {
    start();
    auto o = options(1 << 20);
    o.mask = fk::MASK_NEXT;
    o.request_size = 32;
    o.size_ack = 24;
    o.records.faults.push_back(c.fault);
    EXPECT_NE(fk::run(o).outcome, fk::Outcome::NotReleased) << c.expect << ": a failed dump still releases the task";
    const auto r = only_record();
    ASSERT_TRUE(r) << c.expect;
    EXPECT_EQ(r->state, DumpState::Failed) << c.expect;
    EXPECT_NE(r->reason.find(c.expect), std::string::npos) << r->reason;
    EXPECT_TRUE(r->path.empty());
    // No core file is left in the store.
    const auto [st, ls] = run_capture({"/bin/ls", "-A", store_});
    EXPECT_EQ(ls.find(".zst"), std::string::npos) << ls;
  }
}

TEST_F(FakeKernelDaemon, MemoryTypesSentOnlyWhenTheAckHasRoom) {
  start(R"({"defaults": {"memory_types": ["anon_private", "elf_headers", "dax_shared"]}})");
  auto o = options();
  o.mask = fk::MASK_NEXT;
  o.request_size = 32;
  o.size_ack = 24;
  o.memory_types_mask = 0x3F;  // this kernel knows no DAX types
  auto res = fk::run(o);
  ASSERT_TRUE(fk::task_released(res));
  EXPECT_TRUE(res.memory_types_acked);
  EXPECT_EQ(res.ack->memory_types, 0x11u) << "restricted to the kernel's memory_types_mask";
  EXPECT_EQ(res.effective_memory_types, 0x11u);

  start(R"({"defaults": {"memory_types": 17}})");
  o = options();
  o.mask = fk::MASK_NEXT;
  o.request_size = 32;
  o.size_ack = 16;  // no room for the memory_types field
  res = fk::run(o);
  ASSERT_TRUE(fk::task_released(res));
  EXPECT_FALSE(res.memory_types_acked);
  EXPECT_EQ(res.ack->size, 16u);
  EXPECT_EQ(res.effective_memory_types, fk::DEFAULT_COREDUMP_FILTER);
}

// The kernel may answer any marker; each refusal is logged with its reason and nothing is stored
// as complete.
TEST_F(FakeKernelDaemon, EveryRefusalMarkerIsRecordedAsFailed) {
  for (std::uint32_t marker : {1u, 2u, 3u, 4u, 9u}) {
    start();
    auto o = options();
    o.force_marker = marker;
    const auto res = fk::run(o);
    EXPECT_EQ(res.outcome, fk::Outcome::Refused) << marker;
    const auto r = only_record();
    ASSERT_TRUE(r) << marker;
    EXPECT_EQ(r->state, DumpState::Failed);
    const char* names[] = {"", "MINSIZE", "MAXSIZE", "UNSUPPORTED", "CONFLICTING"};
    EXPECT_NE(r->reason.find(marker < 5 ? names[marker] : "UNKNOWN"), std::string::npos) << r->reason;
    EXPECT_TRUE(r->path.empty());
  }
}

// A collector that blocks must not keep the task frozen past the handshake deadline.
TEST_F(FakeKernelDaemon, HandshakeDeadlineHoldsWhenACollectorBlocks) {
  start(R"({"handshake_timeout_ms": 2000, "testing": {"collector_delay_ms": 5000}})", {"--enable-test-hooks"});
  const auto res = fk::run(options());
  ASSERT_TRUE(fk::task_released(res));
  ASSERT_TRUE(res.timeline.request_sent && res.timeline.ack_read);
  const auto frozen_us = *res.timeline.ack_read - *res.timeline.request_sent;
  EXPECT_LT(frozen_us, 2'500'000) << "the ack came after " << frozen_us << " us";
  EXPECT_GT(frozen_us, 1'000'000) << "the delay collector did run";
  const auto r = only_record();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->state, DumpState::Complete);
  EXPECT_TRUE(r->extra["collect_errors"].contains("collect")) << r->extra["collect_errors"].dump();
}

// Issue 20.2: six crashes at once while one /proc read stalls for 1 s ("testing":
// {"collector_delay_ms": 1000, "collector_delay_in": "cwd"}); the peer is this test process.
constexpr int kSlowProcCrashes = 6;

// The stall outlasts the handshake (800 ms): every crash is acked at its deadline with what the
// collectors before cwd found, and the record names the collectors that missed.
TEST_F(FakeKernelDaemon, EveryRecordKeepsWhatWasCollectedBeforeTheStall) {
  start(R"({"handshake_timeout_ms": 800, "testing": {"collector_delay_ms": 1000, "collector_delay_in": "cwd"}})",
        {"--enable-test-hooks"});
  crash_all_at_once(kSlowProcCrashes);
  const auto all = settled_records(kSlowProcCrashes);
  ASSERT_EQ(all.size(), static_cast<std::size_t>(kSlowProcCrashes));
  const std::string exe = std::filesystem::read_symlink("/proc/self/exe").string();
  for (const auto& r : all) {
    SCOPED_TRACE(r.id);
    EXPECT_EQ(r.state, DumpState::Complete) << r.reason;
    EXPECT_EQ(r.pid, ::getpid());
    EXPECT_EQ(r.exe, exe);
    EXPECT_EQ(r.comm, std::filesystem::path(exe).filename().string().substr(0, 15));
    EXPECT_FALSE(r.argv.empty());
    EXPECT_EQ(r.argv[0], ::program_invocation_name);
    EXPECT_TRUE(r.cwd.empty()) << "cwd stalled past the deadline";
    const auto& inc = r.extra[extras::kMetadataIncomplete];
    ASSERT_TRUE(inc.is_object()) << r.extra.dump();
    const auto missed = inc["missed"].get<std::vector<std::string>>();
    ASSERT_FALSE(missed.empty());
    EXPECT_EQ(missed.front(), "cwd");
    EXPECT_NE(std::find(missed.begin(), missed.end(), "cgroup"), missed.end());
    EXPECT_NE(std::find(missed.begin(), missed.end(), "maps"), missed.end());
    EXPECT_EQ(std::find(missed.begin(), missed.end(), "comm"), missed.end());
    EXPECT_EQ(r.extra[extras::kCollectErrors].value("cwd", ""), "missed: handshake deadline");
  }
  // dumpctl info says so.
  const auto [st, info] = run_capture({DUMPCTL_BIN, "--store", store_, "info", all[0].id});
  EXPECT_EQ(st.exit_code(), 0) << info;
  EXPECT_NE(info.find("incomplete (handshake deadline reached while collecting); missed: cwd, cgroup"), std::string::npos)
      << info;
  // And the log, once per crash, with its pid and the missed collectors.
  const std::string log = daemon_->log();
  std::size_t lines = 0;
  for (std::size_t at = 0; (at = log.find("metadata incomplete", at)) != std::string::npos; ++at) ++lines;
  EXPECT_EQ(lines, static_cast<std::size_t>(kSlowProcCrashes)) << log;
  EXPECT_NE(log.find("pid " + std::to_string(::getpid())), std::string::npos);
  EXPECT_NE(log.find("missed: cwd, cgroup, limits, fds"), std::string::npos) << log;
}

// The stall ends just as the handshake deadline expires (both 1000 ms): whichever comes first, the
// ack is sent and every crash stored. The deadline used to close the socket under an ack being
// written when the collection came back at that moment.
TEST_F(FakeKernelDaemon, ACollectionReturningAtTheDeadlineStillAcks) {
  start(R"({"handshake_timeout_ms": 1000, "testing": {"collector_delay_ms": 1000, "collector_delay_in": "cwd"}})",
        {"--enable-test-hooks"});
  crash_all_at_once(kSlowProcCrashes);
  const auto all = settled_records(kSlowProcCrashes);
  ASSERT_EQ(all.size(), static_cast<std::size_t>(kSlowProcCrashes));
  for (const auto& r : all) {
    EXPECT_EQ(r.state, DumpState::Complete) << r.reason;
    EXPECT_FALSE(r.comm.empty());
    EXPECT_TRUE(r.extra.contains(extras::kMetadataIncomplete)) << "cgroup and later ran after the 800 ms collection deadline";
  }
}

// The stall is shorter than the collection deadline (80 % of 3000 ms). With two collector threads
// serving every handshake, the six collections ran two at a time behind the stalled reads, and the
// last two reached their deadline; each now has a thread of its own, so none misses anything.
TEST_F(FakeKernelDaemon, AStalledReadDoesNotStarveOtherCrashes) {
  start(R"({"handshake_timeout_ms": 3000, "collector_threads": 2,
            "testing": {"collector_delay_ms": 1000, "collector_delay_in": "cwd"}})",
        {"--enable-test-hooks"});
  crash_all_at_once(kSlowProcCrashes);
  const auto all = settled_records(kSlowProcCrashes);
  ASSERT_EQ(all.size(), static_cast<std::size_t>(kSlowProcCrashes));
  for (const auto& r : all) {
    SCOPED_TRACE(r.id);
    EXPECT_EQ(r.state, DumpState::Complete) << r.reason;
    EXPECT_FALSE(r.extra.contains(extras::kMetadataIncomplete)) << r.extra[extras::kMetadataIncomplete].dump();
    EXPECT_FALSE(r.cwd.empty());
    EXPECT_FALSE(r.cgroup.empty());
    EXPECT_TRUE(r.extra[extras::kProc].contains("maps"));
  }
}

TEST_F(FakeKernelDaemon, ConcurrentCrashesAreAllStored) {
  std::vector<std::thread> threads;
  std::atomic<int> dumped{0};
  for (int i = 0; i < 12; ++i)
    threads.emplace_back([&] {
      if (fk::task_released(fk::run(options(512 * 1024)))) ++dumped;
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(dumped, 12);
  EXPECT_TRUE(wait_until(
      [&] {
        const auto all = records();
        return all.size() == 12 && std::all_of(all.begin(), all.end(), [](const DumpRecord& r) { return r.state == DumpState::Complete; });
      },
      20s));
}

// Long zero runs (untouched memory the kernel sends as literal zeros) become holes of the spool,
// and the compressor skips them: a core of 24 MiB data, 48 MiB zeros, 8 MiB data is stored exactly.
// (That the holes cost no disk is checked on a raw core, RawCoreWithZeroRunsAndATrailingHoleIsExact.)
TEST_F(FakeKernelDaemon, CoreWithALongZeroRunIsStoredExactly) {
  constexpr std::uint64_t kMiB = 1 << 20;
  std::vector<std::byte> core(80 * kMiB);
  for (std::uint64_t i = 0; i < core.size(); ++i)
    if (i < 24 * kMiB || i >= 72 * kMiB) core[i] = fk::CoreSource::pattern_byte(i, 3);
  auto o = options();
  o.core = fk::CoreSource::from_buffer(core);
  const auto res = fk::run(o);
  ASSERT_TRUE(fk::task_released(res));

  const auto r = only_record();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->state, DumpState::Complete) << r->reason;
  EXPECT_EQ(r->core_size, core.size());
  EXPECT_EQ(stored_core(*r), core);
}

// spool_direct_io = false (the spool through the page cache): a compressible and an incompressible
// core are stored exactly, as zstd and raw.
TEST_F(FakeKernelDaemon, SpoolThroughThePageCacheStoresTheSameCores) {
  start(R"({"spool_direct_io": false})");
  std::vector<std::byte> core(40 * kMebi);
  fill_text(core, 0, core.size());
  auto r = dump_one(core);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->compression, "zstd");
  EXPECT_TRUE(stored_core(*r) == core);

  start(R"({"spool_direct_io": false})");
  fill_random(core, 0, core.size(), 91);
  r = dump_one(core);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->compression, "none");
  EXPECT_TRUE(stored_core(*r) == core);
  EXPECT_EQ(verify_problems(), "");
}

// compress_while_streaming: with it, a compressible core is compressed while it still streams in
// (the compressor follows the spool); without it, nothing is compressed until the stream has ended.
// The stream is held at 48 MiB until the daemon's compressed file shows output, polled with a 60 s
// bound: the compressor is SCHED_IDLE while the core streams, so on a busy machine it runs late, and
// a fixed stall only hoped it would run in time. Without the option the file must stay empty for the
// hold (a few seconds, then the stream goes on). Either way the stored core is exact.
TEST_F(FakeKernelDaemon, CompressWhileStreamingDecidesWhenCompressionStarts) {
  // 64 KiB of text, then 64 KiB of random bytes, over and over: zstd halves it, so the compressed
  // file fills whole 1 MiB blocks (and grows on the disk) long before the stream ends, and the
  // drain's samples (the head of a 1 MiB block) fall on text: the core is judged compressible.
  constexpr std::size_t kPiece = 64 * 1024;
  std::vector<std::byte> core(64 * kMebi);
  for (std::size_t at = 0; at < core.size(); at += 2 * kPiece) {
    fill_text(core, at, at + kPiece);
    fill_random(core, at + kPiece, at + 2 * kPiece, at);
  }
  for (const bool beside : {true, false}) {
    SCOPED_TRACE(beside ? "compress_while_streaming" : "after the stream");
    // stream_idle_timeout_ms: the hold below must not count as a stalled stream.
    start(std::string(R"({"stream_idle_timeout_ms": 600000, "compress_while_streaming": )") + (beside ? "true}" : "false}"));
    std::uint64_t compressed_out = 0;  // size of the compressed file while the stream was held
    bool seen = false;
    auto o = options();
    o.core = fk::CoreSource::from_buffer(core);
    // Held at 48 MiB: the compressor waits for the drain's verdict, two samples (taken as the
    // spool reaches 16 and 32 MiB), and looks at it again after each 8 MiB spooled, so it may
    // need 40 MiB in the spool before it starts.
    o.hook_stream_offset = 48 * kMebi;
    o.hook = [&](fk::Point point, int) {
      if (point != fk::Point::StreamOffset) return;
      const auto core_file_size = [&] {
        const auto sizes = unnamed_file_sizes(daemon_->pid(), store_);
        // The smaller of the two is the compressed core: the spool holds more than it was given.
        compressed_out = sizes.size() >= 2 ? *std::min_element(sizes.begin(), sizes.end()) : 0;
        return compressed_out;
      };
      seen = wait_until([&] { return core_file_size() >= kMebi; }, beside ? 60s : 3s);
    };
    o.timeout = std::chrono::milliseconds(180'000);  // the hold counts against the session's deadline
    const auto res = fk::run(o);
    ASSERT_TRUE(fk::task_released(res));
    const auto r = only_record();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->state, DumpState::Complete) << r->reason;
    EXPECT_EQ(r->compression, "zstd");
    const auto early = r->extra.value("compressed_while_streaming", std::uint64_t{0});
    if (beside) {
      EXPECT_TRUE(seen) << "no compressed output within 60 s while the stream was held at 48 MiB";
      // Output was on the disk before the stream went on, so at least as many input bytes were
      // compressed before the compressor saw the stream end.
      EXPECT_GE(early, compressed_out);
      EXPECT_GT(early, 0u);
    } else {
      EXPECT_FALSE(seen) << compressed_out << " bytes compressed while the stream was held";
      EXPECT_EQ(compressed_out, 0u);
      EXPECT_EQ(early, 0u);
    }
    EXPECT_TRUE(stored_core(*r) == core);
  }
}

// A core zstd cannot shrink (random bytes past its head) is kept as the drain spooled it: no
// compression, a raw "<id>.core" file that is the exact core. One that compresses (the same size of
// repetitive text) is stored as zstd.
TEST_F(FakeKernelDaemon, IncompressibleCoreIsStoredUncompressed) {
  constexpr std::size_t kMiB = 1 << 20;
  std::vector<std::byte> core(48 * kMiB);
  std::mt19937_64 gen(11);
  for (std::size_t i = 0; i < core.size(); i += 8) {
    const auto w = gen();
    std::memcpy(core.data() + i, &w, 8);
  }
  auto o = options();
  o.core = fk::CoreSource::from_buffer(core);
  auto res = fk::run(o);
  ASSERT_TRUE(fk::task_released(res));
  auto r = only_record();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->state, DumpState::Complete) << r->reason;
  EXPECT_EQ(r->compression, "none");
  EXPECT_EQ(r->path, r->id + ".core");
  EXPECT_EQ(r->stored_size, core.size());
  EXPECT_GE(r->extra.value("compressibility_samples", 0), 2);
  const auto raw = read_file(store_ + "/" + r->path);
  ASSERT_TRUE(raw);
  EXPECT_TRUE(raw->size() == core.size() && std::memcmp(raw->data(), core.data(), core.size()) == 0)
      << "the stored file is the core, byte for byte";
  EXPECT_TRUE(stored_core(*r) == core) << "dumpctl dump reads it back";

  const std::string text = "pid 42 request handled in 17 ms; session token cache hit; ";
  for (std::size_t i = 0; i < core.size(); ++i) core[i] = static_cast<std::byte>(text[i % text.size()] + (i / 65536) % 3);
  o.core = fk::CoreSource::from_buffer(core);
  res = fk::run(o);
  ASSERT_TRUE(fk::task_released(res));
  std::vector<DumpRecord> all;
  ASSERT_TRUE(wait_until(
      [&] {
        all = records();
        return all.size() == 2 && all[0].state != DumpState::InProgress && all[1].state != DumpState::InProgress;
      },
      15s));
  const auto& z = all[0].id == r->id ? all[1] : all[0];
  EXPECT_EQ(z.state, DumpState::Complete) << z.reason;
  EXPECT_EQ(z.compression, "zstd");
  EXPECT_EQ(z.path, z.id + ".zst");
  EXPECT_LT(z.stored_size, core.size() / 10);
  EXPECT_TRUE(stored_core(z) == core);
}

// A rule's own policy decides the size limit, WAIT and the environment, not the defaults: the
// rule matching this process cuts its core at max_core_bytes (flagged truncated, the first bytes
// kept exactly), asks for no WAIT (post_dump []) and keeps the environment; the defaults would
// have stored it whole, with WAIT, without the environment.
TEST_F(FakeKernelDaemon, RuleSizeLimitTruncatesAndRulePicksWaitAndEnviron) {
  std::string comm = read_file("/proc/self/comm").value();
  comm.pop_back();
  start(R"({"rules": [{"name": "small", "match": {"comm": ")" + comm + R"("}, "max_core_bytes": 65536,
                        "over_size": "truncate", "post_dump": [], "capture_environ": true}]})");
  auto o = options(256 * 1024);
  const auto res = fk::run(o);
  ASSERT_TRUE(fk::task_released(res));
  ASSERT_TRUE(res.ack);
  EXPECT_FALSE(res.ack->mask & cp::COREDUMP_WAIT) << "post_dump [] in the rule: no WAIT";
  EXPECT_EQ(res.bytes_streamed, o.core.size()) << "the kernel's stream is drained whole";
  const auto r = only_record();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->extra.value("rule", ""), "small");
  EXPECT_EQ(r->state, DumpState::Truncated) << r->reason;
  EXPECT_NE(r->reason.find("cut at max_core_bytes 65536"), std::string::npos) << r->reason;
  const auto core = stored_core(*r);
  ASSERT_TRUE(core);
  const auto whole = plain(o.core);
  ASSERT_EQ(core->size(), 65536u);
  EXPECT_TRUE(std::equal(core->begin(), core->end(), whole.begin())) << "the first max_core_bytes, unchanged";
  ASSERT_TRUE(r->extra.contains("environ"));
  EXPECT_FALSE(r->extra["environ"].empty());

  // Another comm: the defaults (whole core, WAIT, no environment).
  start(R"({"rules": [{"name": "other", "match": {"comm": "not-)" + comm + R"("}, "max_core_bytes": 65536,
                        "post_dump": [], "capture_environ": true}]})");
  const auto res2 = fk::run(options(256 * 1024));
  ASSERT_TRUE(fk::task_released(res2));
  EXPECT_TRUE(res2.ack->mask & cp::COREDUMP_WAIT);
  const auto r2 = only_record();
  ASSERT_TRUE(r2);
  EXPECT_EQ(r2->extra.value("rule", "?"), "");
  EXPECT_EQ(r2->state, DumpState::Complete) << r2->reason;
  EXPECT_EQ(r2->core_size, 256u * 1024);
  EXPECT_FALSE(r2->extra.contains("environ"));
}

// "over_size": "reject" refuses up front when the mappings alone are sure to exceed the limit: the
// kernel gets REJECT and streams nothing.
TEST_F(FakeKernelDaemon, RuleOverSizeRejectRefusesUpFront) {
  std::string comm = read_file("/proc/self/comm").value();
  comm.pop_back();
  start(R"({"rules": [{"name": "tiny", "match": {"comm": ")" + comm + R"("}, "max_core_bytes": 4096,
                        "over_size": "reject"}]})");
  const auto res = fk::run(options());
  EXPECT_EQ(res.outcome, fk::Outcome::Rejected) << res.error;
  EXPECT_EQ(res.bytes_streamed, 0u);
  const auto r = only_record();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->state, DumpState::Rejected);
  EXPECT_EQ(r->extra.value("rule", ""), "tiny");
  EXPECT_NE(r->reason.find("over max_core_bytes 4096"), std::string::npos) << r->reason;
  EXPECT_TRUE(r->path.empty());
}

// ---- Incompressible cores kept raw ("<id>.core", compression "none"): ways to break that path ----

// A core that starts random (the first two samples say "incompressible") and then turns to text:
// the later samples flip the verdict, the core is compressed from its first byte, and every byte
// comes back. The reverse (text, then random) is compressed as soon as the first samples say so.
// Either way the stored core is exact and verify reads it through.
TEST_F(FakeKernelDaemon, CoreChangingCompressibilityMidStreamIsStoredExactly) {
  std::vector<std::byte> core(120 * kMebi);
  fill_random(core, 0, 40 * kMebi, 21);
  fill_text(core, 40 * kMebi, core.size());
  auto o = options();
  o.core = fk::CoreSource::from_buffer(core);
  auto res = fk::run(o);
  ASSERT_TRUE(fk::task_released(res));
  auto r = only_record();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->state, DumpState::Complete) << r->reason;
  EXPECT_EQ(r->compression, "zstd") << "most samples (the text) compress";
  EXPECT_EQ(r->path, r->id + ".zst");
  EXPECT_GE(r->extra.value("compressibility_samples", 0), 3);
  EXPECT_LT(r->stored_size, 48 * kMebi);
  EXPECT_TRUE(stored_core(*r) == core) << "random then text: stored bytes differ";
  EXPECT_EQ(verify_problems(), "");

  start();
  fill_text(core, 0, 40 * kMebi);
  fill_random(core, 40 * kMebi, core.size(), 22);
  o = options();
  o.core = fk::CoreSource::from_buffer(core);
  res = fk::run(o);
  ASSERT_TRUE(fk::task_released(res));
  r = only_record();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->state, DumpState::Complete) << r->reason;
  EXPECT_EQ(r->compression, "zstd") << "the first samples (text) compress";
  EXPECT_TRUE(stored_core(*r) == core) << "text then random: stored bytes differ";
  EXPECT_EQ(verify_problems(), "");
}

// max_core_bytes cuts an incompressible core: the raw file holds exactly the limit, the record is
// truncated and says so, dumpctl gives back the exact prefix and verify --deep is clean.
TEST_F(FakeKernelDaemon, IncompressibleCoreCutAtMaxCoreBytesIsKeptRawAsTheExactPrefix) {
  constexpr std::uint64_t kLimit = 40 * kMebi + 12345;
  start(R"({"defaults": {"max_core_bytes": )" + std::to_string(kLimit) + R"(, "over_size": "truncate"}})");
  std::vector<std::byte> core(64 * kMebi);
  fill_random(core, 0, core.size(), 31);
  auto o = options();
  o.core = fk::CoreSource::from_buffer(core);
  const auto res = fk::run(o);
  ASSERT_TRUE(fk::task_released(res));
  EXPECT_EQ(res.bytes_streamed, core.size()) << "the kernel's stream is drained whole";
  const auto r = only_record();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->state, DumpState::Truncated) << r->reason;
  EXPECT_NE(r->reason.find("cut at max_core_bytes " + std::to_string(kLimit)), std::string::npos) << r->reason;
  EXPECT_EQ(r->compression, "none");
  EXPECT_EQ(r->path, r->id + ".core");
  EXPECT_EQ(r->core_size, core.size());
  EXPECT_EQ(r->stored_size, kLimit);
  EXPECT_EQ(r->extra.value("stored_core_bytes", std::uint64_t{0}), kLimit);
  const auto raw = read_file(store_ + "/" + r->path);
  ASSERT_TRUE(raw);
  EXPECT_EQ(raw->size(), kLimit);
  EXPECT_TRUE(stored_prefix_is(*r, kLimit, core));
  EXPECT_EQ(verify_problems(), "");
}

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
  auto o = options();
  o.core = fk::CoreSource::from_buffer(core);
  const auto res = fk::run(o);
  ASSERT_TRUE(fk::task_released(res));
  const auto r = only_record();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->state, DumpState::Truncated) << r->reason;
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
