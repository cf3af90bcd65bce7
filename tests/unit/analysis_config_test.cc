// Unit tests of the "analysis" configuration section (daemon/policy/config_analysis.cc): defaults,
// values read, the user resolved at load, and errors that name the key.
#include <gtest/gtest.h>

#include "daemon/policy/config_json.h"
#include "tests/unit/config_test_util.h"

using namespace coredumpd;

using coredumpd::unit::error_of;
using coredumpd::unit::parse;

TEST(AnalysisConfig, Defaults) {
  const AnalysisSettings a = parse("{}").analysis;
  EXPECT_TRUE(a.enabled);
  EXPECT_EQ(a.analyzer, "");
  EXPECT_EQ(a.timeout.count(), 120);
  EXPECT_EQ(a.cpu.count(), 20);
  EXPECT_EQ(a.memory_mib, 1024u);
  EXPECT_EQ(a.max_threads, 64);
  EXPECT_EQ(a.max_frames, 64);
  EXPECT_EQ(a.queue, 64);
  EXPECT_EQ(a.temp_dir, "/var/tmp");
  EXPECT_EQ(a.run_as_user, "nobody");
  EXPECT_FALSE(a.debuginfod.enabled);
  EXPECT_TRUE(a.debuginfod.urls.empty());
  EXPECT_EQ(a.debuginfod.budget.count(), 10);
  EXPECT_EQ(a.debuginfod.cache_dir, "/var/cache/coredumpd/debuginfod");
}

TEST(AnalysisConfig, ValuesAreRead) {
  const AnalysisSettings a = parse(R"({"analysis": {"enabled": false, "analyzer": "/opt/x/analyze", "timeout_s": 5,
      "cpu_s": 3, "memory_mib": 256, "max_threads": 8, "max_frames": 16, "queue": 2, "temp_dir": "/srv/tmp",
      "run_as_user": "root", "debuginfod": {"enabled": true, "urls": ["https://debuginfod.example.org"],
      "budget_s": 7, "cache_dir": "/srv/cache"}}})").analysis;
  EXPECT_FALSE(a.enabled);
  EXPECT_EQ(a.analyzer, "/opt/x/analyze");
  EXPECT_EQ(a.timeout.count(), 5);
  EXPECT_EQ(a.cpu.count(), 3);
  EXPECT_EQ(a.memory_mib, 256u);
  EXPECT_EQ(a.max_threads, 8);
  EXPECT_EQ(a.max_frames, 16);
  EXPECT_EQ(a.queue, 2);
  EXPECT_EQ(a.temp_dir, "/srv/tmp");
  EXPECT_EQ(a.run_as_user, "root");
  EXPECT_EQ(a.run_as_uid, 0);
  EXPECT_EQ(a.run_as_gid, 0);
  EXPECT_TRUE(a.debuginfod.enabled);
  EXPECT_EQ(a.debuginfod.urls, std::vector<std::string>{"https://debuginfod.example.org"});
  EXPECT_EQ(a.debuginfod.budget.count(), 7);
  EXPECT_EQ(a.debuginfod.cache_dir, "/srv/cache");
}

TEST(AnalysisConfig, ErrorsNameTheKey) {
  EXPECT_EQ(error_of(R"({"analysis": {"timeout_s": 0}})"), "test.json: analysis.timeout_s: value 0 out of range [1, 600]");
  EXPECT_EQ(error_of(R"({"analysis": {"timeout_s": 601}})"), "test.json: analysis.timeout_s: value 601 out of range [1, 600]");
  EXPECT_EQ(error_of(R"({"analysis": {"run_as_user": "no-such-user-x9"}})"),
            "test.json: analysis.run_as_user: no such user \"no-such-user-x9\"");
  EXPECT_EQ(error_of(R"({"analysis": {"analyzer": "coredumpd-analyze"}})"),
            "test.json: analysis.analyzer: expected an absolute path, got \"coredumpd-analyze\"");
  EXPECT_EQ(error_of(R"({"analysis": {"debuginfod": {"urls": ["ftp://x"]}}})"),
            "test.json: analysis.debuginfod.urls[0]: expected an http:// or https:// URL, got \"ftp://x\"");
  EXPECT_EQ(error_of(R"({"analysis": {"debuginfod": {"urls": "https://x"}}})"),
            "test.json: analysis.debuginfod.urls: expected a list of URLs");
  EXPECT_NE(error_of(R"({"analysis": {"timeout": 5}})").find("analysis.timeout: unknown key (known: enabled, analyzer, timeout_s"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"analysis": {"debuginfod": {"url": []}}})").find("analysis.debuginfod.url: unknown key (known: enabled, urls"),
            std::string::npos);
  EXPECT_EQ(error_of(R"({"analysis": []})"), "test.json: analysis: expected an object");
}

TEST(AnalysisConfig, WrittenBackItLoadsTheSame) {
  const Config c = parse(R"({"analysis": {"queue": 3, "run_as_user": "root", "analyzer": "/a/b",
      "debuginfod": {"urls": ["http://d"]}}})");
  const nlohmann::json j = config_to_json(c);
  EXPECT_EQ(j["analysis"]["queue"], 3);
  EXPECT_EQ(j["analysis"]["run_as_user"], "root");
  const AnalysisSettings again = parse(j.dump()).analysis;
  EXPECT_EQ(again.queue, 3);
  EXPECT_EQ(again.run_as_uid, 0);
  EXPECT_EQ(again.analyzer, "/a/b");
  EXPECT_EQ(again.debuginfod.urls, std::vector<std::string>{"http://d"});
}
