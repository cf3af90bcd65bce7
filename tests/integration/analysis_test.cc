// Integration tests of issue 22 item 1, the daemon side: a stored core is analysed after the store,
// never on the crash path. coredumpd runs under the fake kernel with "analysis.analyzer" pointing
// at a stand-in (tests/programs/analyzer_stand_ins.cc) that prints a fixed report, hangs or crashes.
#include <gtest/gtest.h>

#include <signal.h>

#include <fstream>
#include <set>
#include <string>

#include "tests/integration/fake_kernel_daemon_fixture.h"

using namespace coredumpd;
using namespace coredumpd::test;

namespace {

// What the "ok" stand-in signs every core with.
constexpr const char* kFakeSignature = "0123456789abcdef0123456789abcdef";

std::string analysis_config(const std::string& analyzer, const std::string& more = "") {
  return R"({"analysis": {"analyzer": ")" + analyzer + R"(")" + (more.empty() ? "" : ", " + more) + "}}";
}

class Analysis : public FakeKernelDaemon {
 protected:
  void SetUp() override {}  // each test starts the daemon with its own analysis settings

  // The record `id` once its analysis is recorded (bounded wait), or std::nullopt.
  std::optional<DumpRecord> analysed(const std::string& id, std::chrono::milliseconds timeout = 30s) {
    std::optional<DumpRecord> found;
    wait_until(
        [&] {
          try {
            auto r = Index(store_, false).get(id);
            if (r && !r->analysis.is_null()) found = std::move(r);
          } catch (const IndexError&) {
          }
          return found.has_value();
        },
        timeout);
    return found;
  }

  // The record `id` as the index has it now.
  std::optional<DumpRecord> get(const std::string& id) { return Index(store_, false).get(id); }

  // One crash through the fake kernel; the task must be released and the core stored.
  std::string crash() {
    const auto res = fk::run(options());
    EXPECT_TRUE(fk::task_released(res)) << res.error;
    std::string id;
    wait_until(
        [&] {
          for (const auto& r : records())
            if (r.state != DumpState::InProgress && !seen_.contains(r.id)) id = r.id;
          return !id.empty();
        },
        15s);
    EXPECT_FALSE(id.empty()) << "no record for the crash";
    seen_.insert(id);
    if (const auto r = get(id)) {
      EXPECT_EQ(r->state, DumpState::Complete) << r->reason;
    }
    return id;
  }

  // Restarts the daemon on the same store with `config`.
  void restart(const std::string& config) {
    daemon_->stop();
    std::ofstream(*dir_ / "config.json") << config;
    daemon_ = std::make_unique<Daemon>(COREDUMPD_BIN, socket_, store_, *dir_ / ("log" + std::to_string(++restarts_)),
                                       std::vector<std::string>{"--allow-unverified-peers", "--config", *dir_ / "config.json"});
  }

  std::set<std::string> seen_;
  int restarts_ = 0;
};

TEST_F(Analysis, StoredFirstThenTheRecordGainsTheReport) {
  start(analysis_config(FAKE_ANALYZER_OK));
  const std::string id = crash();  // released and stored before any analysis (crash() checks both)
  const auto r = analysed(id);
  ASSERT_TRUE(r) << "the record never gained an analysis";
  EXPECT_EQ(r->analysis.value("state", ""), "ok") << r->analysis.dump();
  EXPECT_EQ(r->signature, kFakeSignature);
  EXPECT_EQ(r->signature_text, "SIGSEGV: fake_frame | main");
  // The analyzer was given this dump's stored core and its compression.
  const auto warnings = r->analysis.value("warnings", nlohmann::json::array());
  EXPECT_NE(std::find(warnings.begin(), warnings.end(), "compression " + r->compression), warnings.end()) << warnings;
  const std::string magic = r->compression == "zstd" ? "28b52ffd" : "7f454c46";
  EXPECT_NE(std::find(warnings.begin(), warnings.end(), "core starts " + magic), warnings.end()) << warnings;
  // One line per analysis, after the dump's own "stored" line.
  const std::string log = daemon_->log();
  const auto stored_at = log.find("dump " + id + ": pid");
  const auto analysed_at = log.find("analysis of " + id + " (");
  ASSERT_NE(analysed_at, std::string::npos) << log;
  EXPECT_LT(stored_at, analysed_at);
  EXPECT_NE(log.find("SIGSEGV: fake_frame | main", analysed_at), std::string::npos);
}

TEST_F(Analysis, HangingAnalyzerTimesOutWhileDumpsGoOn) {
  start(analysis_config(FAKE_ANALYZER_HANG, R"("timeout_s": 1)"));
  const std::string first = crash();
  const std::string second = crash();  // stored whatever the first's analysis does
  const auto r = analysed(first);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->analysis.value("state", ""), "unavailable");
  EXPECT_NE(r->analysis.value("reason", "").find("timed out"), std::string::npos) << r->analysis.dump();
  EXPECT_EQ(r->signature, "");
  ASSERT_TRUE(analysed(second));
  EXPECT_NE(daemon_->log().find("analysis of " + first + " unavailable: "), std::string::npos);
  crash();  // still serving
}

TEST_F(Analysis, CrashingAnalyzerIsUnavailableAndTheDaemonLives) {
  start(analysis_config(FAKE_ANALYZER_CRASH));
  const std::string id = crash();
  const auto r = analysed(id);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->analysis.value("state", ""), "unavailable");
  EXPECT_FALSE(r->analysis.value("reason", "").empty());
  crash();  // the daemon is alive and stores the next one
  EXPECT_EQ(::kill(daemon_->pid(), 0), 0);
}

TEST_F(Analysis, FullQueueIsRecordedAndAStopKillsTheRunningAnalyzer) {
  // One waiting slot and an analyzer that would hang for 10 minutes: the first dump's analysis
  // runs (or waits), and of three dumps at least one finds the queue full.
  start(analysis_config(FAKE_ANALYZER_HANG, R"("timeout_s": 600, "queue": 1)"));
  std::vector<std::string> ids{crash(), crash(), crash()};
  std::optional<DumpRecord> full;
  wait_until(
      [&] {
        for (const auto& id : ids)
          if (auto r = get(id); r && !r->analysis.is_null()) full = std::move(r);
        return full.has_value();
      },
      30s);
  ASSERT_TRUE(full) << "no dump's analysis was recorded as queue full";
  EXPECT_EQ(full->analysis.value("reason", ""), "analysis queue full (1 pending)");
  EXPECT_EQ(full->analysis.value("state", ""), "unavailable");
  // SIGTERM while an analyzer hangs with 600 s left: the daemon must not wait for it.
  const auto st = daemon_->stop(60s);
  EXPECT_TRUE(st.exited) << "coredumpd did not stop while its analyzer hung";
  EXPECT_NE(daemon_->log().find("analysis queue full 1"), std::string::npos) << daemon_->log();
  // The analysis the stop killed is not recorded: the next start analyses that dump again.
  int unanalysed = 0;
  for (const auto& id : ids) unanalysed += get(id)->analysis.is_null();
  EXPECT_GE(unanalysed, 1);
}

TEST_F(Analysis, DisabledReloadedOnThenARestartAnalysesWhatWasLeft) {
  start(analysis_config(FAKE_ANALYZER_OK, R"("enabled": false)"));
  const std::string a = crash();
  // A reload turns analysis on for the dumps stored from now on.
  std::ofstream(*dir_ / "config.json") << analysis_config(FAKE_ANALYZER_OK);
  ASSERT_EQ(::kill(daemon_->pid(), SIGHUP), 0);
  ASSERT_TRUE(wait_until([&] { return daemon_->log().find("SIGHUP: configuration reloaded") != std::string::npos; }, 15s));
  const std::string b = crash();
  ASSERT_TRUE(analysed(b));
  // One worker, first in first out: had `a` been queued while analysis was off, it would be done.
  EXPECT_TRUE(get(a)->analysis.is_null()) << get(a)->analysis.dump();
  EXPECT_EQ(daemon_->log().find("analysis of " + a), std::string::npos);
  // The next start analyses the stored dump that has none.
  restart(analysis_config(FAKE_ANALYZER_OK));
  const auto r = analysed(a);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->signature, kFakeSignature);
  EXPECT_NE(daemon_->log().find("1 stored dump(s) without analysis queued"), std::string::npos) << daemon_->log();
}

}  // namespace
