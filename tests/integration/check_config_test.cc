// `coredumpd --check-config`: reads the main file and its conf.d/ drop-ins, prints the effective
// configuration as JSON and exits 0, or prints the error (file: key: reason) and exits 1.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "tests/support/test_support.h"

using namespace coredumpd::test;

namespace {

class CheckConfig : public ::testing::Test {
 protected:
  void SetUp() override { std::filesystem::create_directories(dir_ / "conf.d"); }
  void write(const std::string& relative, const std::string& text) { std::ofstream(dir_ / relative) << text; }
  // Runs `coredumpd --check-config ARGS`; returns {exit code, stdout, stderr}.
  std::tuple<int, std::string, std::string> check(const std::vector<std::string>& args) {
    const std::string err_file = dir_ / "stderr";
    // run_capture() keeps stdout; sh sends stderr to a file of its own.
    std::vector<std::string> argv{"/bin/sh", "-c", "f=$1; shift; exec \"$@\" 2>\"$f\"", "sh", err_file,
                                  COREDUMPD_BIN, "--check-config"};
    argv.insert(argv.end(), args.begin(), args.end());
    const auto [st, out] = run_capture(argv);
    return {st.exited ? st.exit_code() : -1, out, read_file(err_file).value_or("")};
  }
  TempDir dir_;
};

TEST_F(CheckConfig, PrintsTheEffectiveConfigurationOfMainFileAndDropIns) {
  write("coredumpd.json", R"({
    // comments are fine
    "dump_workers": 5, "defaults": {"compression_level": 7},
    "rules": [{"name": "first", "match": {"comm": "a"}, "action": "reject"}]})");
  write("conf.d/10-more.json", R"({"defaults": {"capture_environ": true},
    "rules": [{"name": "second", "match": {"runtime": "docker"}, "max_core_bytes": 8192,
               "rate_limit": {"burst": 2, "interval_s": 600}, "max_use": "64K"}]})");
  const auto [rc, out, err] = check({"--config", dir_ / "coredumpd.json", "--store", "/srv/cores"});
  ASSERT_EQ(rc, 0) << err;
  const auto j = nlohmann::json::parse(out);
  EXPECT_EQ(j["dump_workers"], 5);
  EXPECT_EQ(j["store"], "/srv/cores") << "command-line settings are part of the effective configuration";
  EXPECT_EQ(j["socket"], "/run/coredumpd/coredump.socket");
  EXPECT_EQ(j["defaults"]["compression_level"], 7);
  EXPECT_EQ(j["defaults"]["capture_environ"], true);
  EXPECT_TRUE(j["retention"].contains("max_use"));
  ASSERT_EQ(j["rules"].size(), 2u);
  EXPECT_EQ(j["rules"][0]["name"], "first");
  EXPECT_EQ(j["rules"][0]["action"], "reject");
  EXPECT_EQ(j["rules"][1]["name"], "second");
  EXPECT_EQ(j["rules"][1]["match"], (nlohmann::json{{"runtime", "docker"}}));
  // Every rule carries its full effective policy, the merged defaults included.
  for (const char* key : {"action", "close_files", "records", "sparse", "memory_types", "post_dump", "honor_rlimit_core",
                          "capture_environ", "compression_level", "max_core_bytes", "over_size", "rate_limit", "max_use",
                          "forward_socket"})
    EXPECT_TRUE(j["rules"][1].contains(key)) << key;
  EXPECT_EQ(j["rules"][1]["compression_level"], 7);
  EXPECT_EQ(j["rules"][1]["capture_environ"], true);
  EXPECT_EQ(j["rules"][1]["max_core_bytes"], 8192);
  EXPECT_EQ(j["rules"][1]["rate_limit"], (nlohmann::json{{"burst", 2}, {"interval_s", 600}}));
  EXPECT_EQ(j["rules"][1]["max_use"], 65536);
  EXPECT_EQ(j["rules"][0]["rate_limit"], nullptr);
  EXPECT_EQ(j["accept_forwarded"], false);
  EXPECT_NE(err.find(dir_ / "conf.d/10-more.json"), std::string::npos) << "the files read are listed on stderr";
}

TEST_F(CheckConfig, ErrorNamesTheDropInTheKeyAndTheReason) {
  write("coredumpd.json", "{}");
  write("conf.d/20-bad.json", R"({"rules": [{"name": "x", "match": {"comm": "y"}, "acton": "reject"}]})");
  const auto [rc, out, err] = check({"--config", dir_ / "coredumpd.json"});
  EXPECT_EQ(rc, 1);
  EXPECT_TRUE(out.empty()) << out;
  EXPECT_EQ(err, "coredumpd: " + dir_ / "conf.d/20-bad.json" + ": rules[0].acton: unknown key\n");
}

TEST_F(CheckConfig, NoFilesAtAllMeansTheBuiltInDefaults) {
  const auto [rc, out, err] = check({"--config", dir_ / "absent.json"});
  ASSERT_EQ(rc, 0) << err;
  const auto j = nlohmann::json::parse(out);
  EXPECT_EQ(j["dump_workers"], 64);
  EXPECT_EQ(j["rules"], nlohmann::json::array());
  EXPECT_NE(err.find("built-in defaults"), std::string::npos) << err;
}

}  // namespace
