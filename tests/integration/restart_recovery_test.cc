// Integration tests of issue 20 item 5: a core received in full survives a daemon killed before it
// was stored. coredumpd runs with --enable-test-hooks --test-hold-before-store (every dump stops once its core has
// arrived and been kept, before its file is committed), is killed with SIGKILL, restarted without
// it, and must then store the core from its kept spool and mark the record recovered.
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>

#include "store/index.h"
#include "store/record_extras.h"
#include "tests/fake_kernel/expect_released.h"
#include "tests/fake_kernel/fake_kernel.h"
#include "tests/support/test_support.h"

using namespace coredumpd;
using namespace coredumpd::test;
namespace fk = coredumpd::fake_kernel;
namespace fs = std::filesystem;

namespace {

constexpr std::size_t kMiB = 1 << 20;

class RestartRecovery : public ::testing::Test {
 protected:
  void SetUp() override {
    std::ofstream(dir_ / "config.json") << "{}";
    start({"--enable-test-hooks", "--test-hold-before-store"});
  }
  void TearDown() override {
    if (HasFailure() && daemon_) std::fprintf(stderr, "coredumpd log:\n%s\n", daemon_->log().c_str());
  }
  void start(std::vector<std::string> extra) {
    extra.insert(extra.end(), {"--allow-unverified-peers", "--config", dir_ / "config.json"});
    daemon_ = std::make_unique<Daemon>(COREDUMPD_BIN, socket_, store_, dir_ / "log", extra);
  }

  // Streams `core` through the fake kernel (`o` as the base), waits until the held daemon has kept
  // its spool (its manifest is in the store), and kills the daemon. Returns the record's id.
  std::string dump_and_kill(const std::vector<std::byte>& core, fk::Options o = {}, fk::Outcome want = fk::Outcome::Dumped) {
    o.socket_path = socket_;
    o.core = fk::CoreSource::from_buffer(core);
    o.timeout = std::chrono::milliseconds(15'000);
    const auto res = fk::run(o);
    // The task was released: the hold comes after.
    if (want == fk::Outcome::Dumped) EXPECT_TRUE(fk::task_released(res));
    else EXPECT_EQ(res.outcome, want) << res.error;
    std::string id;
    const bool held = wait_until(
        [&] {
          for (const auto& e : fs::directory_iterator(store_)) {
            const auto name = e.path().filename().string();
            if (name.starts_with(".spool-") && name.ends_with(".json")) id = name.substr(7, 32);
          }
          return !id.empty() && daemon_->log().find("holding before storing") != std::string::npos;
        },
        15s);
    EXPECT_TRUE(held) << "the daemon never kept the spool";
    const auto before = record(id);
    EXPECT_TRUE(before && before->state == DumpState::InProgress);
    EXPECT_FALSE(fs::exists(store_ + "/" + id + ".zst"));  // not stored yet
    daemon_->kill_hard();
    return id;
  }

  // dump_and_kill(), then a restart without the hold: the record of the core, stored from its
  // kept spool (bounded wait), checked to say so and to leave no kept names behind.
  std::optional<DumpRecord> recovered(const std::vector<std::byte>& core, fk::Options o = {},
                                      fk::Outcome want = fk::Outcome::Dumped) {
    const std::string id = dump_and_kill(core, std::move(o), want);
    if (id.empty()) return std::nullopt;
    start({});
    auto r = settled(id);
    if (!r) return r;
    EXPECT_TRUE(r->extra.contains(extras::kRecovered)) << r->extra.dump();
    EXPECT_TRUE(kept_names().empty());
    return r;
  }

  std::optional<DumpRecord> record(const std::string& id) {
    try {
      return Index(store_, false).get(id);
    } catch (const IndexError&) {
      return std::nullopt;
    }
  }

  // The record of `id` once it is neither in progress nor interrupted (bounded wait).
  std::optional<DumpRecord> settled(const std::string& id) {
    std::optional<DumpRecord> r;
    wait_until(
        [&] {
          r = record(id);
          // The record is written before the kept names go and the line is logged.
          return r && r->state != DumpState::InProgress && r->state != DumpState::Interrupted &&
                 daemon_->log().find("recovered after a restart") != std::string::npos;
        },
        30s);
    return r;
  }

  std::optional<std::string> dumped(const DumpRecord& r) {
    const std::string out = dir_ / ("core-" + r.id);
    const auto [st, text] = run_capture({DUMPCTL_BIN, "--store", store_, "dump", r.id, "-o", out});
    if (st.exit_code() != 0) return std::nullopt;
    return read_file(out);
  }

  std::vector<std::string> kept_names() {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(store_))
      if (e.path().filename().string().starts_with(".spool-")) names.push_back(e.path().filename().string());
    return names;
  }

  static bool same(const std::string& bytes, const std::vector<std::byte>& core) {
    return bytes.size() == core.size() && std::memcmp(bytes.data(), core.data(), core.size()) == 0;
  }

  TempDir dir_;
  std::string socket_ = dir_ / "s", store_ = dir_ / "store";
  std::unique_ptr<Daemon> daemon_;
  ScopedCoreLimit core_limit_{~0ULL};  // the peer is this process: its RLIMIT_CORE is policy input
};

// Compressible text with a long zero run: stored as zstd after the restart, byte for byte.
TEST_F(RestartRecovery, CoreKeptBeforeAKillIsStoredCompressedAtTheNextStart) {
  std::vector<std::byte> core(40 * kMiB);
  const std::string text = "pid 42 request handled in 17 ms; session token cache hit; ";
  for (std::size_t i = 0; i < core.size(); ++i)
    if (i < 12 * kMiB || i >= 30 * kMiB) core[i] = static_cast<std::byte>(text[i % text.size()] + (i / 65536) % 3);
  const auto r = recovered(core);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->state, DumpState::Complete) << r->reason;
  EXPECT_EQ(r->compression, "zstd");
  EXPECT_EQ(r->core_size, core.size());
  EXPECT_LT(r->stored_size, core.size() / 4);
  ASSERT_TRUE(r->extra.contains(extras::kRecovered)) << r->extra.dump();
  EXPECT_EQ(r->extra[extras::kRecovered].value("spooled", 0ULL), core.size());
  EXPECT_TRUE(r->extra.contains(extras::kReleasedUs));  // the drain's extras were kept
  const auto back = dumped(*r);
  ASSERT_TRUE(back);
  EXPECT_TRUE(same(*back, core));
  EXPECT_TRUE(kept_names().empty());
  const auto [vst, vtext] = run_capture({DUMPCTL_BIN, "--store", store_, "verify", "--deep"});
  EXPECT_EQ(vst.exit_code(), 0) << vtext;
  EXPECT_NE(daemon_->log().find("recovered after a restart"), std::string::npos);

  // The restarted daemon serves as usual, and without the hold keeps no spool behind.
  fk::Options o;
  o.socket_path = socket_;
  o.core = fk::CoreSource::pattern(256 * 1024, 3, 4096, 7, true);
  o.timeout = std::chrono::milliseconds(15'000);
  ASSERT_TRUE(fk::task_released(fk::run(o)));
  std::vector<DumpRecord> all;
  wait_until(
      [&] {
        all = Index(store_, false).list();
        return all.size() == 2 && std::all_of(all.begin(), all.end(), [](const DumpRecord& x) { return x.state == DumpState::Complete; });
      },
      15s);
  ASSERT_EQ(all.size(), 2u);
  for (const auto& x : all) EXPECT_EQ(x.state, DumpState::Complete) << x.reason;
  EXPECT_TRUE(kept_names().empty());
}

// Incompressible bytes: the spool itself becomes the raw core, as it would have without the kill.
TEST_F(RestartRecovery, IncompressibleCoreKeptBeforeAKillIsStoredRaw) {
  std::vector<std::byte> core(48 * kMiB);
  std::mt19937_64 gen(11);
  for (std::size_t i = 0; i < core.size(); i += 8) {
    const auto w = gen();
    std::memcpy(core.data() + i, &w, 8);
  }
  const auto r = recovered(core);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->state, DumpState::Complete) << r->reason;
  EXPECT_EQ(r->compression, "none");
  EXPECT_EQ(r->path, r->id + ".core");
  EXPECT_EQ(r->stored_size, core.size());
  EXPECT_TRUE(r->extra.contains(extras::kRecovered));
  const auto raw = read_file(store_ + "/" + r->path);
  ASSERT_TRUE(raw);
  EXPECT_TRUE(same(*raw, core));
  EXPECT_TRUE(kept_names().empty());
}

// A record stream cut without its END record (the task killed mid-dump) ended short: what came is
// kept, and recovered as Truncated with the reason, as it would have been stored.
TEST_F(RestartRecovery, ShortStreamKeptBeforeAKillIsRecoveredAsTruncated) {
  std::vector<std::byte> core(8 * kMiB);
  for (std::size_t i = 0; i < core.size(); ++i) core[i] = static_cast<std::byte>((i / 4096) % 7 + (i % 13));
  fk::Options o;
  o.mask = fk::MASK_NEXT;
  o.request_size = 32;
  o.size_ack = 24;
  o.kill_after_bytes = 3 * kMiB;
  const auto r = recovered(core, o, fk::Outcome::Killed);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->state, DumpState::Truncated) << r->reason;
  EXPECT_NE(r->reason.find("without an END"), std::string::npos) << r->reason;
  EXPECT_TRUE(r->extra.contains(extras::kRecovered));
  const auto back = dumped(*r);
  ASSERT_TRUE(back);
  const auto kept = r->extra.value(extras::kStoredCoreBytes, 0ULL);
  EXPECT_GT(kept, 0u);
  EXPECT_LT(kept, core.size());
  EXPECT_EQ(back->size(), kept);
  EXPECT_TRUE(back->size() <= core.size() && std::memcmp(back->data(), core.data(), back->size()) == 0);
}

}  // namespace
