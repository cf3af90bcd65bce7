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
    std::vector<std::string> with_flag{"--check-config"};
    with_flag.insert(with_flag.end(), args.begin(), args.end());
    return run(with_flag);
  }
  // Runs `coredumpd ARGS`; returns {exit code, stdout, stderr}.
  std::tuple<int, std::string, std::string> run(const std::vector<std::string>& args) {
    const std::string err_file = dir_ / "stderr";
    // run_capture() keeps stdout; sh sends stderr to a file of its own.
    std::vector<std::string> argv{"/bin/sh", "-c", "f=$1; shift; exec \"$@\" 2>\"$f\"", "sh", err_file,
                                  COREDUMPD_BIN};
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

// Socket paths the kernel cannot connect to (docs/PROTOCOL.md §2.2, §2.3) are refused by
// --check-config and at start, before anything listens or core_pattern is touched.
TEST_F(CheckConfig, RefusesSocketPathsTheKernelCannotUse) {
  std::filesystem::create_directory(dir_ / "real");
  std::filesystem::create_directory_symlink(dir_ / "real", dir_ / "link");
  const std::string symlinked = dir_ / "link/coredump.socket";
  const std::string spaced = dir_ / "a b/coredump.socket";
  const std::string too_long = dir_.path() + "/" + std::string(119 - dir_.path().size(), 's');
  const struct {
    std::string path, why;
  } cases[] = {{symlinked, dir_ / "link is a symlink (to " + dir_ / "real" + "), and the kernel follows no symlink"},
               {spaced, "it has a space at byte " + std::to_string(dir_.path().size() + 2)},
               {too_long, "120 bytes, over the 107 bytes sockaddr_un's sun_path holds"}};
  for (const auto& c : cases) {
    const std::string expected = "coredumpd: socket path " + c.path + " cannot be used by the kernel: " + c.why;
    const auto [rc, out, err] = check({"--config", dir_ / "absent.json", "--socket", c.path});
    EXPECT_EQ(rc, 1) << c.path;
    EXPECT_TRUE(out.empty()) << out;
    EXPECT_NE(err.find(expected), std::string::npos) << err;

    const std::string store = dir_ / "store";
    const auto [start_rc, start_out, start_err] =
        run({"--config", dir_ / "absent.json", "--socket", c.path, "--store", store, "--install-pattern"});
    EXPECT_EQ(start_rc, 1) << c.path;
    EXPECT_NE(start_err.find(expected), std::string::npos) << start_err;
    EXPECT_FALSE(std::filesystem::exists(store)) << "refused before the store is opened";
    EXPECT_FALSE(std::filesystem::exists(dir_ / "real/coredump.socket")) << "nothing listens through the symlink";
  }
  // The same directory without the symlink passes.
  const auto [rc, out, err] = check({"--config", dir_ / "absent.json", "--socket", dir_ / "real/coredump.socket"});
  EXPECT_EQ(rc, 0) << err;
}

// The built-in retention limits are percentages of the store's filesystem: --check-config says
// what they come to there, in bytes (on stderr; stdout stays the JSON).
TEST_F(CheckConfig, SaysTheRetentionLimitsInBytesForTheStoresFilesystem) {
  const auto [rc, out, err] = check({"--config", dir_ / "absent.json", "--store", dir_ / "store"});
  ASSERT_EQ(rc, 0) << err;
  const auto j = nlohmann::json::parse(out);
  EXPECT_EQ(j["retention"]["max_use"], "10%");
  EXPECT_EQ(j["retention"]["keep_free"], "15%");
  EXPECT_EQ(j["retention"]["percent_cap"], 4294967296ULL);
  EXPECT_EQ(j["retention"]["max_core_age"], 259200);
  EXPECT_TRUE(j["retention"]["max_age"].is_null());
  EXPECT_EQ(j["defaults"]["max_core_bytes"], 34359738368ULL);
  EXPECT_NE(err.find("coredumpd: retention for " + dir_ / "store" + " (filesystem of "), std::string::npos) << err;
  EXPECT_NE(err.find("max_age none, max_core_age 259200 s"), std::string::npos) << err;
  const auto lifted_file = dir_ / "lifted.json";
  write("lifted.json", R"({"retention": {"max_use": "1G", "keep_free": null}})");
  const auto [rc2, out2, err2] = check({"--config", lifted_file, "--store", dir_ / "store"});
  ASSERT_EQ(rc2, 0) << err2;
  EXPECT_NE(err2.find("max_use 1073741824 bytes, keep_free none"), std::string::npos) << err2;
}
