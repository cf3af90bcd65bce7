// analysis/analyzer_run.h: run_analyzer() against a stand-in analyzer (tests/programs/fake_analyzer.cc)
// that keeps the interface and misbehaves on request: every failure becomes an "unavailable"
// report with its reason, and after each run no child is left (no zombie) and no descriptor leaks.
#include "analysis/analyzer_run.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

#include "util/unique_fd.h"

namespace coredumpd::analysis {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

std::size_t open_fd_count() {
  std::size_t n = 0;
  DIR* d = ::opendir("/proc/self/fd");
  if (d == nullptr) return 0;
  while (const dirent* e = ::readdir(d)) n += e->d_name[0] != '.';
  ::closedir(d);
  return n;
}

class AnalyzerRunTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (std::filesystem::temp_directory_path() / "analyzer_run_test.XXXXXX").string();
    const int fd = ::mkstemp(tmpl.data());
    ASSERT_GE(fd, 0);
    core_path_ = tmpl;
    ASSERT_EQ(::write(fd, "\177ELF-core-bytes", 15), 15);
    core_.reset(fd);
    fds_before_ = open_fd_count();
  }
  void TearDown() override {
    ::unsetenv("FAKE_ANALYZER_MODE");
    // No child left behind, reaped or not: waitpid() finds none.
    int status = 0;
    errno = 0;
    EXPECT_EQ(::waitpid(-1, &status, WNOHANG), -1) << "a child is left";
    EXPECT_EQ(errno, ECHILD);
    EXPECT_EQ(open_fd_count(), fds_before_) << "a descriptor leaked";
    core_.reset();
    ::unlink(core_path_.c_str());
  }

  CrashReport run(const char* mode, std::chrono::milliseconds timeout = 20s) {
    ::setenv("FAKE_ANALYZER_MODE", mode, 1);
    options_.analyzer_path = FAKE_ANALYZER;
    options_.wall_timeout = timeout;
    input_.core_fd = core_.get();
    return run_analyzer(input_, options_);
  }

  UniqueFd core_;
  std::string core_path_;
  std::size_t fds_before_ = 0;
  AnalyzerInput input_{-1, "none", 11, 1234, json{{"1234", "worker"}}};
  AnalyzerOptions options_;
};

TEST_F(AnalyzerRunTest, ValidReport) {
  const CrashReport r = run("report");
  ASSERT_EQ(r.state, "ok") << r.reason;
  ASSERT_EQ(r.threads.size(), 1U);
  EXPECT_EQ(r.threads[0].frames.at(0).function, "crash_here");
}

TEST_F(AnalyzerRunTest, ChildGetsTheRequestOnFd0AndTheCoreOnFd3) {
  const CrashReport r = run("echo");
  ASSERT_EQ(r.state, "ok") << r.reason;
  ASSERT_EQ(r.warnings.size(), 6U);
  EXPECT_EQ(r.warnings[0], "argv=--request-fd 0 --core-fd 3");
  EXPECT_EQ(r.warnings[1], "fds=0,1,2,3") << "every other descriptor closed";
  EXPECT_EQ(r.warnings[2], "core=\177ELF-core-bytes");
  const json request = json::parse(r.warnings[3].substr(std::string("request=").size()));
  EXPECT_EQ(request, request_json(input_, options_));
  EXPECT_EQ(request["signal"], 11);
  EXPECT_EQ(request["crashing_tid"], 1234);
  EXPECT_EQ(request["thread_names"]["1234"], "worker");
  EXPECT_EQ(r.warnings[4], "blocking=yes") << "the child's fd 0 and 1 are blocking, as a program expects";
}

// More than a pipe's default 64 KiB: the runner grows the pipe to hold the whole request.
TEST_F(AnalyzerRunTest, LargeRequestArrivesWhole) {
  input_.thread_names = json::object();
  for (int tid = 1; tid <= 5000; ++tid) input_.thread_names[std::to_string(tid)] = "worker-thread-" + std::to_string(tid);
  ASSERT_GT(request_json(input_, options_).dump().size(), 65536U);
  const CrashReport r = run("echo");
  ASSERT_EQ(r.state, "ok") << r.reason;
  EXPECT_EQ(r.warnings.at(5), "thread_names=5000");
}

TEST_F(AnalyzerRunTest, TimeoutKillsAChildThatIgnoresSigterm) {
  const CrashReport r = run("hang", 300ms);
  EXPECT_EQ(r.state, "unavailable");
  EXPECT_EQ(r.reason, "analyzer timed out after 300 ms");
}

TEST_F(AnalyzerRunTest, KilledBySignal) {
  const CrashReport r = run("segv");
  EXPECT_EQ(r.state, "unavailable");
  EXPECT_EQ(r.reason, "analyzer killed by SIGSEGV: fake analyzer: about to fault");
}

TEST_F(AnalyzerRunTest, OutputOverTheCapIsRefused) {
  options_.max_report_bytes = 100000;
  const CrashReport r = run("flood");
  EXPECT_EQ(r.state, "unavailable");
  EXPECT_EQ(r.reason, "analyzer output exceeds 100000 bytes");
}

TEST_F(AnalyzerRunTest, NotJson) {
  const CrashReport r = run("badjson");
  EXPECT_EQ(r.state, "unavailable");
  EXPECT_EQ(r.reason, "analyzer report refused: not JSON");
}

TEST_F(AnalyzerRunTest, InvalidReport) {
  const CrashReport r = run("refused");
  EXPECT_EQ(r.state, "unavailable");
  EXPECT_EQ(r.reason, "analyzer report refused: crash report: version: not 1");
}

TEST_F(AnalyzerRunTest, NonZeroExitGivesStderrsLastLine) {
  const CrashReport r = run("exit3");
  EXPECT_EQ(r.state, "unavailable");
  EXPECT_EQ(r.reason, "analyzer exited with status 3: fake analyzer: cannot read the core: truncated");
}

TEST_F(AnalyzerRunTest, MissingAnalyzerThrows) {
  options_.analyzer_path = "/nonexistent/coredumpd-analyze";
  input_.core_fd = core_.get();
  EXPECT_THROW(run_analyzer(input_, options_), std::system_error);
  input_.core_fd = -1;
  options_.analyzer_path = FAKE_ANALYZER;
  EXPECT_THROW(run_analyzer(input_, options_), std::system_error);
}

TEST_F(AnalyzerRunTest, RequestKeys) {
  json r = request_json(input_, options_);
  std::vector<std::string> keys;
  for (const auto& [k, v] : r.items()) keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{"compression", "cpu_seconds", "crashing_tid", "debuginfod", "idle",
                                            "max_frames", "max_report_bytes", "max_threads", "memory_bytes",
                                            "run_as_gid", "run_as_uid", "signal", "temp_dir", "thread_names"}));
  EXPECT_TRUE(r["debuginfod"].is_null()) << "no URLs: no debuginfod";
  EXPECT_EQ(r["memory_bytes"], options_.memory_bytes);
  options_.debuginfod_urls = {"https://debuginfod.example"};
  options_.debuginfod_budget = 7s;
  r = request_json(input_, options_);
  EXPECT_EQ(r["debuginfod"], (json{{"urls", {"https://debuginfod.example"}}, {"budget_s", 7}, {"cache_dir", ""}}));
  input_.signal.reset();
  input_.thread_names = "not an object";
  r = request_json(input_, options_);
  EXPECT_TRUE(r["signal"].is_null());
  EXPECT_TRUE(r["thread_names"].is_null());
}

TEST_F(AnalyzerRunTest, DefaultAnalyzerPath) {
  ::setenv("COREDUMPD_ANALYZER", "/opt/x/analyze", 1);
  EXPECT_EQ(default_analyzer_path(), "/opt/x/analyze");
  ::unsetenv("COREDUMPD_ANALYZER");
  // This test runs from the build tree.
  EXPECT_EQ(default_analyzer_path(), std::string(COREDUMPD_TEST_BINARY_DIR) + "/analyzer/coredumpd-analyze");
}

}  // namespace
}  // namespace coredumpd::analysis
