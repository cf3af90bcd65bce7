// `dumpctl analyze` with a stand-in analyzer (tests/programs/stand_in_analyzer.cc, run through
// COREDUMPD_ANALYZER): what it is given, printing, saving to a writable index, --no-save, failures.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <nlohmann/json.hpp>

#include "cli/analysis_commands.h"
#include "tests/unit/dumpctl_analysis_support.h"

namespace coredumpd::cli::unit_analysis {
namespace {

class DumpctlAnalyzeTest : public AnalysisStoreTest {
 protected:
  void SetUp() override {
    AnalysisStoreTest::SetUp();
    ::setenv("COREDUMPD_ANALYZER", STAND_IN_ANALYZER, 1);
    ::setenv("TMPDIR", root_.c_str(), 1);
  }
  void TearDown() override {
    ::unsetenv("COREDUMPD_ANALYZER");
    ::unsetenv("DEBUGINFOD_URLS");
    ::unsetenv("TMPDIR");
    AnalysisStoreTest::TearDown();
  }
};

TEST_F(DumpctlAnalyzeTest, AnalyzeSavesToAWritableIndex) {
  DumpRecord r = add(1, 1);
  r.extra["thread_names"] = {{"101", "crashy"}};
  Index(store_, true).update(r);
  const Result res = run({"analyze", r.id});
  ASSERT_EQ(res.rc, 0) << res.err << res.out;
  EXPECT_NE(res.out.find("      Signature: 5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a (SIGSEGV: stand_in | main)"), std::string::npos)
      << res.out;
  EXPECT_NE(res.out.find("Stack trace of thread 101 (crashy):"), std::string::npos) << res.out;
  EXPECT_NE(res.out.find("#1  0x0000000000001001 main (prog + 0x1)"), std::string::npos) << res.out;
  EXPECT_NE(res.out.find("core fd 3: " + std::to_string(r.stored_size) + " bytes, compression zstd"), std::string::npos)
      << "the stored core is given on fd 3\n" << res.out;
  EXPECT_NE(res.out.find("debuginfod: off"), std::string::npos) << "off by default\n" << res.out;
  EXPECT_NE(res.out.find("          Saved: yes"), std::string::npos) << res.out;

  const auto stored = Index(store_, false).get(r.id);
  ASSERT_TRUE(stored);
  EXPECT_EQ(stored->signature, "5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a");
  EXPECT_EQ(stored->signature_text, "SIGSEGV: stand_in | main");
  EXPECT_EQ(stored->analysis["state"], "ok");
  // info now shows what analyze stored.
  EXPECT_NE(run({"info", r.id}).out.find("Stack trace of thread 101 (crashy):"), std::string::npos);
}

TEST_F(DumpctlAnalyzeTest, NoSaveLeavesTheIndexAlone) {
  const DumpRecord r = add(1, 1);
  const Result res = run({"analyze", "--no-save", "--json", r.id});
  ASSERT_EQ(res.rc, 0) << res.err;
  const auto j = nlohmann::json::parse(res.out);
  EXPECT_EQ(j["id"], r.id);
  EXPECT_EQ(j["saved"], false);
  EXPECT_EQ(j["not_saved_reason"], "--no-save");
  EXPECT_EQ(j["report"]["signature"], "5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a");
  const auto stored = Index(store_, false).get(r.id);
  ASSERT_TRUE(stored);
  EXPECT_TRUE(stored->analysis.is_null());
  EXPECT_TRUE(stored->signature.empty());
}

TEST_F(DumpctlAnalyzeTest, OptionsReachTheAnalyzer) {
  const DumpRecord r = add(1, 1);
  Result res = run({"analyze", r.id, "--no-save", "--max-frames", "1", "--max-threads", "3",
                    "--debuginfod", "https://debuginfod.example/", "http://other.example/"});
  ASSERT_EQ(res.rc, 0) << res.err;
  EXPECT_NE(res.out.find("max_frames 1, max_threads 3"), std::string::npos) << res.out;
  EXPECT_NE(res.out.find("debuginfod: https://debuginfod.example/ http://other.example/"), std::string::npos) << res.out;
  EXPECT_EQ(res.out.find("#1 "), std::string::npos) << "one frame only\n" << res.out;

  ::setenv("DEBUGINFOD_URLS", "https://env.example/  https://env2.example/", 1);
  res = run({"analyze", r.id, "--no-save", "--debuginfod"});
  ASSERT_EQ(res.rc, 0) << res.err;
  EXPECT_NE(res.out.find("debuginfod: https://env.example/ https://env2.example/"), std::string::npos) << res.out;

  ::unsetenv("DEBUGINFOD_URLS");
  res = run({"analyze", r.id, "--debuginfod"});
  EXPECT_EQ(res.rc, 1);
  EXPECT_NE(res.err.find("--debuginfod needs URLs"), std::string::npos) << res.err;
  res = run({"analyze", "--debuginfod", r.id});
  EXPECT_EQ(res.rc, 1);
  EXPECT_NE(res.err.find("is not a URL"), std::string::npos) << res.err;
}

TEST_F(DumpctlAnalyzeTest, FailuresAndDumpsWithoutCore) {
  DumpRecord ok = add(1, 1);
  ASSERT_EQ(run({"analyze", ok.id}).rc, 0);
  ok.signal = SIGABRT;  // the stand-in answers "unavailable"
  Index(store_, true).update(ok);
  Result res = run({"analyze", ok.id});
  EXPECT_EQ(res.rc, 1);
  EXPECT_NE(res.out.find("Stack trace: unavailable (stand-in: asked to fail)"), std::string::npos) << res.out;
  EXPECT_NE(res.err.find("the stored analysis (state ok) is kept"), std::string::npos) << res.err;
  EXPECT_EQ(Index(store_, false).get(ok.id)->analysis["state"], "ok");

  DumpRecord fresh = add(2, 2);
  fresh.signal = SIGABRT;
  Index(store_, true).update(fresh);
  EXPECT_EQ(run({"analyze", fresh.id}).rc, 1);
  EXPECT_EQ(Index(store_, false).get(fresh.id)->analysis["state"], "unavailable") << "nothing better was stored";

  const DumpRecord none = add(3, 3, /*core=*/false);
  res = run({"analyze", none.id});
  EXPECT_EQ(res.rc, 1);
  EXPECT_NE(res.err.find("dumpctl: "), std::string::npos) << res.err;
  EXPECT_TRUE(Index(store_, false).get(none.id)->analysis.is_null());
  res = run({"analyze", "nosuchcomm"});
  EXPECT_EQ(res.rc, 1);
  EXPECT_NE(res.err.find("No match found."), std::string::npos) << res.err;
  // coredumpctl's matches (cli/options.h): two ids ORed, each analysed; a FIELD=VALUE ANDed with
  // them that none has selects nothing.
  res = run({"analyze", "--no-save", "--json", ok.id, fresh.id});
  ASSERT_EQ(res.rc, 1) << res.err;  // fresh's analysis is unavailable
  EXPECT_NE(res.out.find(ok.id), std::string::npos) << res.out;
  EXPECT_NE(res.out.find(fresh.id), std::string::npos) << res.out;
  res = run({"analyze", ok.id, "COREDUMP_PID=1"});
  EXPECT_EQ(res.rc, 1);
  EXPECT_NE(res.err.find("No match found."), std::string::npos) << res.err;
}

}  // namespace
}  // namespace coredumpd::cli::unit_analysis
