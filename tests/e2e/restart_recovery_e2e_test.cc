// Real-kernel tests of issue 20 item 5: a real crash's core, received in full, survives a SIGKILL of
// the daemon before it was stored. coredumpd runs with --enable-test-hooks --test-hold-before-store (each dump stops
// after its core has arrived and been kept, before its file is committed), is killed, restarted,
// and must store the core from its kept spool: the ELF core of the crasher, the record recovered.
#include <csignal>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "store/record_extras.h"
#include "tests/e2e/real_kernel_fixture.h"

using namespace coredumpd;
using namespace coredumpd::test;
namespace fs = std::filesystem;

namespace {

std::vector<std::string> kept_names(const std::string& store) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(store))
    if (e.path().filename().string().starts_with(".spool-")) names.push_back(e.path().filename().string());
  return names;
}

}  // namespace

class RealKernelRecovery : public RealKernel {
 public:
  // Crashes the crasher with `fill` into a held daemon, kills the daemon once the core is kept,
  // restarts it, and checks the recovered dump. Returns it (nullopt with a failure recorded).
  std::optional<DumpRecord> run_case(const std::string& fill, pid_t* pid) {
    restart_daemon("", {"--enable-test-hooks", "--test-hold-before-store"});
    const auto st = crash({"--mode", "segv", "--touch-mib", "96", "--fill", fill}, pid);
    EXPECT_TRUE(st.exited) << "the crasher stayed frozen: the hold must come after the release";
    EXPECT_TRUE(st.core_dumped());
    const bool kept = wait_until(
        [&] {
          for (const auto& name : kept_names(store_))
            if (name.ends_with(".json")) return daemon_->log().find("holding before storing") != std::string::npos;
          return false;
        },
        60s);
    EXPECT_TRUE(kept) << "the core was never kept";
    if (!kept) return std::nullopt;
    {
      Index index(store_, false);
      for (const auto& r : index.list())
        if (r.pid == *pid) {
          EXPECT_EQ(r.state, DumpState::InProgress) << "stored before the kill";
        }
    }
    daemon_->kill_hard();
    restart_daemon();
    std::optional<DumpRecord> rec;
    wait_until(
        [&] {
          rec = stored_dump_of(*pid, 1s);
          // The record is written before the kept names go and the line is logged.
          return rec && rec->state != DumpState::Interrupted &&
                 daemon_->log().find("recovered after a restart") != std::string::npos;
        },
        60s);
    if (!rec) {
      ADD_FAILURE() << "no record for pid " << *pid;
      return std::nullopt;
    }
    EXPECT_EQ(rec->state, DumpState::Complete) << rec->reason;
    EXPECT_TRUE(rec->extra.contains(extras::kRecovered)) << rec->extra.dump();
    expect_released_promptly(*rec);
    EXPECT_NE(daemon_->log().find("recovered after a restart"), std::string::npos) << daemon_->log();
    EXPECT_TRUE(kept_names(store_).empty());
    const auto [vst, vtext] = run_capture({DUMPCTL_BIN, "--store", store_, "verify", "--deep"});
    EXPECT_EQ(vst.exit_code(), 0) << vtext;
    return rec;
  }
};

// A compressible core (half of its pages zero): stored as zstd at the restart, and dumpctl gives
// back the ELF core of the crasher, killed by SIGSEGV.
TEST_F(RealKernelRecovery, CoreReceivedBeforeAKillIsStoredAtTheNextStart) {
  pid_t pid = 0;
  const auto rec = run_case("half-zero", &pid);
  ASSERT_TRUE(rec);
  EXPECT_EQ(rec->compression, "zstd");
  EXPECT_GT(rec->core_size, 96u << 20);
  EXPECT_TRUE(dumped_core_of(*rec, pid, SIGSEGV));
}

// An incompressible core: its kept spool becomes the raw core, as it would have been.
TEST_F(RealKernelRecovery, IncompressibleCoreReceivedBeforeAKillIsStoredRaw) {
  pid_t pid = 0;
  const auto rec = run_case("random", &pid);
  ASSERT_TRUE(rec);
  EXPECT_EQ(rec->compression, "none");
  EXPECT_EQ(rec->stored_size, rec->core_size);
  EXPECT_TRUE(dumped_core_of(*rec, pid, SIGSEGV));
}
