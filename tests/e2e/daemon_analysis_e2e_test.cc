// Real-kernel test of issue 22 item 1: a real crash is stored and its task released first, then
// its record gains the analysis, run after the store by coredumpd's analysis thread (here with the
// stand-in analyzer tests/programs/analyzer_stand_ins.cc, so that only the daemon's side is tested).
#include <gtest/gtest.h>

#include <algorithm>

#include "tests/e2e/real_kernel_fixture.h"

using namespace coredumpd;
using namespace coredumpd::test;

namespace {

class RealKernelAnalysis : public RealKernel {
 protected:
  void SetUp() override { start_daemon(std::string(R"({"analysis": {"analyzer": ")") + FAKE_ANALYZER_OK + R"("}})"); }
};

TEST_F(RealKernelAnalysis, RealCrashIsStoredThenAnalysed) {
  pid_t pid = 0;
  const auto rec = complete_dump_of_crash({"--mode", "segv"}, &pid);  // released and stored first
  ASSERT_TRUE(rec);
  std::optional<DumpRecord> analysed;
  wait_until(
      [&] {
        try {
          auto r = Index(store_, false).get(rec->id);
          if (r && !r->analysis.is_null()) analysed = std::move(r);
        } catch (const IndexError&) {
        }
        return analysed.has_value();
      },
      30s);
  ASSERT_TRUE(analysed) << "the record never gained an analysis";
  EXPECT_EQ(analysed->analysis.value("state", ""), "ok") << analysed->analysis.dump();
  EXPECT_EQ(analysed->signature, "0123456789abcdef0123456789abcdef");
  // The analyzer was handed this dump: its stored core (by its magic) and its crashing thread.
  const auto warnings = analysed->analysis.value("warnings", nlohmann::json::array());
  const std::string magic = analysed->compression == "zstd" ? "28b52ffd" : "7f454c46";
  EXPECT_NE(std::find(warnings.begin(), warnings.end(), "core starts " + magic), warnings.end()) << warnings;
  ASSERT_TRUE(rec->crashing_tid_ns);
  EXPECT_EQ(analysed->analysis["threads"][0]["tid"], *rec->crashing_tid_ns);
  EXPECT_NE(daemon_->log().find("analysis of " + rec->id + " ("), std::string::npos);
}

}  // namespace
