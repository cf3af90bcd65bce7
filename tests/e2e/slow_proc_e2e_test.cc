// Real-kernel tests of issue 20.2: a real crash whose /proc collection stalls past the handshake
// deadline ("testing": {"collector_delay_ms", "collector_delay_in"}) keeps what was read before the
// stall, and the rest of comm, exe, the command line, the mappings and the signal come from the
// core's own notes, marked as such (extra.from_core).
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <csignal>
#include <filesystem>

#include "store/record_extras.h"
#include "tests/e2e/real_kernel_fixture.h"

using namespace coredumpd;
using namespace coredumpd::test;

namespace {

std::vector<std::string> strings_of(const nlohmann::json& j) {
  std::vector<std::string> out;
  if (j.is_array())
    for (const auto& s : j)
      if (s.is_string()) out.push_back(s.get<std::string>());
  return out;
}

bool has(const std::vector<std::string>& v, const std::string& s) { return std::find(v.begin(), v.end(), s) != v.end(); }

class SlowProcRealKernel : public RealKernel {
 protected:
  // A segfaulting crasher whose `collector` read stalls 2 s against a 1 s handshake: its stored
  // record (a failed assertion if there is none, or it is not complete), and the collectors it
  // names as missed.
  std::optional<DumpRecord> crash_with_stall(const std::string& collector, std::vector<std::string>& missed) {
    start_daemon(R"({"handshake_timeout_ms": 1000, "testing": {"collector_delay_ms": 2000, "collector_delay_in": ")" +
                 collector + R"("}})");
    pid_t pid = 0;
    const auto st = crash({"--mode", "segv"}, &pid);
    EXPECT_TRUE(st.exited && st.core_dumped());
    auto rec = stored_dump_of(pid);
    if (!rec) return rec;
    EXPECT_EQ(rec->state, DumpState::Complete) << rec->reason;
    expect_released_promptly(*rec);
    missed = strings_of(rec->extra[extras::kMetadataIncomplete]["missed"]);
    return rec;
  }
};

// The very first read (comm) stalls 2 s against a 1 s handshake: nothing comes from /proc, and
// the record still names the crasher, from NT_PRPSINFO, NT_FILE and NT_AUXV.
TEST_F(SlowProcRealKernel, StalledCommReadIsFilledFromTheCore) {
  std::vector<std::string> missed;
  const auto rec = crash_with_stall("comm", missed);
  ASSERT_TRUE(rec);
  ASSERT_FALSE(missed.empty()) << rec->extra.dump();
  EXPECT_EQ(missed.front(), "comm");
  const auto from_core = strings_of(rec->extra[extras::kFromCore]);
  for (const char* field : {"comm", "exe", "argv", "maps", "signal"}) EXPECT_TRUE(has(from_core, field)) << field;
  EXPECT_EQ(rec->comm, "crasher");
  EXPECT_EQ(rec->exe, std::filesystem::canonical(CRASHER_BIN).string());
  ASSERT_GE(rec->argv.size(), 3u);
  EXPECT_EQ(rec->argv[0], CRASHER_BIN);
  EXPECT_EQ(rec->argv[1], "--mode");
  EXPECT_EQ(rec->signal, SIGSEGV);
  EXPECT_TRUE(rec->extra[extras::kCoreMappedFiles].is_array());
  const auto [dst, info] = run_capture({DUMPCTL_BIN, "--store", store_, "info", rec->id});
  EXPECT_EQ(dst.exit_code(), 0) << info;
  EXPECT_NE(info.find("From Core"), std::string::npos) << info;
  EXPECT_NE(info.find("missed: comm, exe"), std::string::npos) << info;
}

// A later read (cwd) stalls: comm, exe and the command line come from /proc, and only what the
// handshake did not get (the mappings, the signal) from the core.
TEST_F(SlowProcRealKernel, StalledCwdReadKeepsCommAndExeFromProc) {
  std::vector<std::string> missed;
  const auto rec = crash_with_stall("cwd", missed);
  ASSERT_TRUE(rec);
  ASSERT_FALSE(missed.empty()) << rec->extra.dump();
  EXPECT_EQ(missed.front(), "cwd");
  const auto from_core = strings_of(rec->extra[extras::kFromCore]);
  EXPECT_FALSE(has(from_core, "comm") || has(from_core, "exe") || has(from_core, "argv")) << rec->extra[extras::kFromCore];
  EXPECT_TRUE(has(from_core, "maps"));
  EXPECT_EQ(rec->comm, "crasher");
  EXPECT_EQ(rec->exe, std::filesystem::canonical(CRASHER_BIN).string());
  ASSERT_FALSE(rec->argv.empty());
  EXPECT_EQ(rec->argv[0], CRASHER_BIN);
  EXPECT_TRUE(rec->cwd.empty());
}

}  // namespace
