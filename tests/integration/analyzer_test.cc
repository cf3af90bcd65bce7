// coredumpd-analyze (analyzer/) run as a program on real cores: tests/programs/analyzer_target
// (and its static, stripped, build-id-less twin) stopped by gdb at a known fault and written with
// gcore, which saves the registers at the faulting instruction as the kernel's core would. Also
// the kernel-layout seed core of fuzz_analyzer, cut short, and garbage. Needs gdb (skips without).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <regex>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/support/test_support.h"

namespace coredumpd::test {
namespace {

using nlohmann::json;

// The path of a program on PATH ("" if none): run_capture() takes a path.
std::string which(const std::string& name) {
  auto [st, out] = run_capture({"/bin/sh", "-c", "command -v " + name});
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return st.exit_code() == 0 ? out : "";
}

struct AnalyzerRun {
  ExitStatus status;
  std::string out;
  json report;  // null unless stdout was one JSON object
};

class AnalyzerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { dir_ = new TempDir(); }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
    cores_.clear();
  }
  void SetUp() override {
    if (which("gdb").empty()) GTEST_SKIP() << "gdb is not installed (it writes the cores these tests analyse)";
  }

  // The core of `argv` faulting under gdb (made once per suite), and what the program printed.
  static const std::pair<std::string, std::string>& core_of(const std::string& name, const std::vector<std::string>& argv) {
    if (auto it = cores_.find(name); it != cores_.end()) return it->second;
    const std::string path = *dir_ / (name + ".core");
    std::vector<std::string> cmd{which("gdb"), "-batch", "-nx", "-q", "-ex", "run", "-ex", "gcore " + path, "-ex", "kill", "--args"};
    cmd.insert(cmd.end(), argv.begin(), argv.end());
    const auto [st, text] = run_capture(cmd, std::chrono::seconds(300));
    EXPECT_TRUE(std::filesystem::exists(path)) << "gdb wrote no core: " << text;
    return cores_[name] = {path, text};
  }

  // Runs the analyzer on `core` with `request` (by file paths) and parses its report.
  static AnalyzerRun analyze(const json& request, const std::string& core) {
    const std::string req = *dir_ / ("request-" + std::to_string(++requests_) + ".json");
    std::ofstream(req) << request.dump();
    AnalyzerRun r;
    std::tie(r.status, r.out) = run_capture({ANALYZER_BIN, "--request", req, "--core", core}, std::chrono::seconds(120));
    r.report = json::parse(r.out, nullptr, false);
    if (r.report.is_discarded()) r.report = nullptr;
    return r;
  }

  // The core of a copy of analyzer_target ("victim") that deleted itself before its fault.
  static const std::pair<std::string, std::string>& deleted_core() {
    const std::string victim = *dir_ / "victim";
    if (!cores_.contains("deleted")) {
      std::filesystem::copy_file(TARGET_BIN, victim, std::filesystem::copy_options::overwrite_existing);
      std::filesystem::permissions(victim, std::filesystem::perms::owner_all | std::filesystem::perms::others_read |
                                               std::filesystem::perms::others_exec);
    }
    return core_of("deleted", {victim, "unlink-self"});
  }

  static json base_request() {
    return {{"signal", 11}, {"run_as_uid", 65534}, {"run_as_gid", 65534}, {"temp_dir", dir_->path()}};
  }

  // An analysis that must succeed with a report.
  static json report_of(const json& request, const std::string& core) {
    auto r = analyze(request, core);
    EXPECT_EQ(r.status.exit_code(), 0) << r.out;
    EXPECT_TRUE(r.report.is_object()) << r.out;
    return r.report.is_object() ? r.report : json::object();
  }

  static std::vector<std::string> functions(const json& thread) {
    std::vector<std::string> out;
    for (const auto& f : thread["frames"]) out.push_back(f["function"]);
    return out;
  }

  static std::string build_id_of(const std::string& file) {
    const auto [st, text] = run_capture({which("readelf"), "-n", file});
    std::smatch m;
    return std::regex_search(text, m, std::regex("Build ID: ([0-9a-f]+)")) ? m[1].str() : "";
  }

  static const json* module_named(const json& report, const std::string& suffix) {
    for (const auto& m : report["modules"]) {
      if (std::string(m["path"]).ends_with(suffix)) return &m;
    }
    return nullptr;
  }

  static inline TempDir* dir_ = nullptr;
  static inline std::map<std::string, std::pair<std::string, std::string>> cores_;
  static inline int requests_ = 0;
};

TEST_F(AnalyzerTest, ThreeDeepChainNamesEveryFrameWithFileLineAndBuildIds) {
  const auto& [core, text] = core_of("chain", {TARGET_BIN, "chain"});
  const json r = report_of(base_request(), core);
  ASSERT_EQ(r["state"], "ok") << r.dump();
  EXPECT_EQ(r["threads_total"], 1);
  ASSERT_EQ(r["threads"].size(), 1u);
  const auto& t = r["threads"][0];
  EXPECT_TRUE(t["crashed"]);
  const auto fns = functions(t);
  ASSERT_GE(fns.size(), 4u) << t.dump();
  EXPECT_EQ(std::vector<std::string>(fns.begin(), fns.begin() + 4),
            (std::vector<std::string>{"chain_three", "chain_two", "chain_one", "main"}));
  const json* exe = module_named(r, "/analyzer_target");
  ASSERT_NE(exe, nullptr) << r["modules"].dump();
  EXPECT_EQ((*exe)["build_id"], build_id_of(TARGET_BIN));
  EXPECT_EQ((*exe)["elf"], TARGET_BIN);
  for (int i = 0; i < 4; ++i) {
    const auto& f = t["frames"][i];
    EXPECT_EQ(f["module"], "analyzer_target");
    EXPECT_TRUE(std::string(f["file"]).ends_with("analyzer_target.cc")) << f.dump();
    EXPECT_GT(f["line"], 0);
    EXPECT_EQ(f["module_offset"].get<std::uint64_t>(), f["pc"].get<std::uint64_t>() - (*exe)["start"].get<std::uint64_t>());
  }
  // A shared library, found by its build-id and path: the file libdwfl used has the core's build-id.
  bool libc_seen = false;
  for (const auto& m : r["modules"]) {
    if (std::string(m["path"]).find("libc.so") == std::string::npos || std::string(m["elf"]).empty()) continue;
    libc_seen = true;
    EXPECT_EQ(m["build_id"], build_id_of(m["elf"])) << m.dump();
  }
  EXPECT_TRUE(libc_seen) << r["modules"].dump();
  EXPECT_TRUE(std::string(r["signature_text"]).starts_with("SIGSEGV: chain_three | chain_two | chain_one | main"))
      << r["signature_text"];
  EXPECT_EQ(std::string(r["signature"]).size(), 32u);
  EXPECT_GT(r["elapsed_us"], 0);
  EXPECT_GT(r["maxrss_kib"], 0);
  EXPECT_FALSE(r["debuginfod_used"]);
}

TEST_F(AnalyzerTest, AbortKeepsMachineryFramesButTheSignatureSkipsThem) {
  const auto& [core, text] = core_of("abort", {TARGET_BIN, "abort"});
  json req = base_request();
  req["signal"] = 6;
  const json r = report_of(req, core);
  ASSERT_EQ(r["state"], "ok") << r.dump();
  const auto fns = functions(r["threads"][0]);
  EXPECT_NE(std::find(fns.begin(), fns.end(), "abort"), fns.end()) << r["threads"][0].dump();
  EXPECT_TRUE(std::string(r["signature_text"]).starts_with("SIGABRT: chain_three | chain_two")) << r["signature_text"];
}

TEST_F(AnalyzerTest, JumpToAddressZeroStillUnwindsToMain) {
  const auto& [core, text] = core_of("pc0", {TARGET_BIN, "pc0"});
  const json r = report_of(base_request(), core);
  ASSERT_EQ(r["state"], "ok") << r.dump();
  const auto& frames = r["threads"][0]["frames"];
  ASSERT_GE(frames.size(), 2u);
  EXPECT_EQ(frames[0]["pc"], 0);
  EXPECT_EQ(frames[0]["module"], "");
  EXPECT_EQ(frames[0]["function"], "");
  const auto fns = functions(r["threads"][0]);
  // The caller, found from the return address the call pushed (frame pointers would skip it).
  EXPECT_NE(fns.at(1).find("call_null"), std::string::npos) << r["threads"][0].dump();
  EXPECT_NE(std::find(fns.begin(), fns.end(), "main"), fns.end()) << r["threads"][0].dump();
  EXPECT_TRUE(std::string(r["signature_text"]).starts_with("SIGSEGV: 0x0 | call_null")) << r["signature_text"];
}

TEST_F(AnalyzerTest, CrashingThreadFirstWithItsNameThenOthersByTid) {
  const auto& [core, text] = core_of("threads", {TARGET_BIN, "threads", "5"});
  std::smatch m;
  ASSERT_TRUE(std::regex_search(text, m, std::regex("TID ([0-9]+) faulter"))) << text;
  const std::int64_t tid = std::stoll(m[1]);
  json req = base_request();
  req["crashing_tid"] = tid;
  req["thread_names"] = {{std::to_string(tid), "faulter"}};
  const json r = report_of(req, core);
  ASSERT_EQ(r["state"], "ok") << r.dump();
  EXPECT_EQ(r["threads_total"], 7);  // main, 5 sleepers, the faulter
  ASSERT_EQ(r["threads"].size(), 7u);
  EXPECT_EQ(r["threads"][0]["tid"], tid);
  EXPECT_EQ(r["threads"][0]["name"], "faulter");
  EXPECT_TRUE(r["threads"][0]["crashed"]);
  EXPECT_EQ(functions(r["threads"][0]).at(0), "faulter_crash");
  int sleepers = 0;
  for (std::size_t i = 1; i < r["threads"].size(); ++i) {
    EXPECT_FALSE(r["threads"][i]["crashed"]);
    EXPECT_EQ(r["threads"][i]["name"], "");
    if (i > 1) {
      EXPECT_LT(r["threads"][i - 1]["tid"], r["threads"][i]["tid"]);
    }
    const auto fns = functions(r["threads"][i]);
    sleepers += std::find(fns.begin(), fns.end(), "sleeper_main") != fns.end();
  }
  EXPECT_EQ(sleepers, 5);
  EXPECT_TRUE(std::string(r["signature_text"]).starts_with("SIGSEGV: faulter_crash | faulter_main")) << r["signature_text"];

  // The thread cap: the crashing thread and the two lowest other TIDs; the rest counted.
  req["max_threads"] = 3;
  const json capped = report_of(req, core);
  ASSERT_EQ(capped["threads"].size(), 3u);
  EXPECT_EQ(capped["threads"][0]["tid"], tid);
  EXPECT_EQ(capped["threads"][1]["tid"], r["threads"][1]["tid"]);
  EXPECT_EQ(capped["threads_total"], 7);
  EXPECT_EQ(capped["threads_omitted"], 4);
}

TEST_F(AnalyzerTest, TwoThousandThreadsAreCappedAndCounted) {
  const auto& [core, text] = core_of("threads2000", {TARGET_BIN, "threads", "2000"});
  std::smatch m;
  ASSERT_TRUE(std::regex_search(text, m, std::regex("TID ([0-9]+) faulter"))) << text;
  json req = base_request();
  req["crashing_tid"] = std::stoll(m[1]);
  const json r = report_of(req, core);
  ASSERT_EQ(r["state"], "ok") << r.dump().substr(0, 2000);
  EXPECT_EQ(r["threads_total"], 2002);
  EXPECT_EQ(r["threads"].size(), 64u);
  EXPECT_EQ(r["threads_omitted"], 2002 - 64);
  EXPECT_EQ(r["threads"][0]["tid"], std::stoll(m[1]));
}

TEST_F(AnalyzerTest, DeepRecursionKeepsTheFrameCapAndCountsTheRest) {
  const auto& [core, text] = core_of("recurse", {TARGET_BIN, "recurse", "200"});
  const json r = report_of(base_request(), core);
  ASSERT_EQ(r["state"], "ok") << r.dump().substr(0, 2000);
  const auto& t = r["threads"][0];
  ASSERT_EQ(t["frames"].size(), 64u);
  // 200 recurse frames, then main, __libc_start_call_main, __libc_start_main, _start.
  EXPECT_GE(t["frames_omitted"].get<int>(), 200 - 64);
  for (const auto& fn : functions(t)) EXPECT_EQ(fn, "recurse");

  json wide = base_request();
  wide["max_frames"] = 1000;
  const json all = report_of(wide, core);
  const auto& ta = all["threads"][0];
  EXPECT_EQ(ta["frames_omitted"], 0);
  EXPECT_EQ(ta["frames"].size(), 64u + t["frames_omitted"].get<std::size_t>());
  const auto fns = functions(ta);
  EXPECT_EQ(std::count(fns.begin(), fns.end(), "recurse"), 200);
}

TEST_F(AnalyzerTest, StaticStrippedBinaryWithoutBuildIdIsShownAsModulePlusOffset) {
  ASSERT_EQ(build_id_of(STATIC_TARGET_BIN), "");
  const auto& [core, text] = core_of("static", {STATIC_TARGET_BIN, "chain"});
  const json r = report_of(base_request(), core);
  ASSERT_EQ(r["state"], "ok") << r.dump();
  const json* exe = module_named(r, "/analyzer_target_static");
  ASSERT_NE(exe, nullptr) << r["modules"].dump();
  EXPECT_EQ((*exe)["build_id"], "");
  const auto& frames = r["threads"][0]["frames"];
  ASSERT_GE(frames.size(), 3u) << r.dump();
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(frames[i]["module"], "analyzer_target_static");
    EXPECT_EQ(frames[i]["function"], "");
  }
  EXPECT_TRUE(std::string(r["signature_text"]).starts_with("SIGSEGV: analyzer_target_static+0x")) << r["signature_text"];
  EXPECT_NE(r["warnings"].dump().find("no build-id"), std::string::npos) << r["warnings"];
}

TEST_F(AnalyzerTest, DeletedExecutableGivesModuleOffsetsAndAWarning) {
  const auto& [core, text] = deleted_core();
  ASSERT_FALSE(std::filesystem::exists(*dir_ / "victim"));
  const json r = report_of(base_request(), core);
  ASSERT_EQ(r["state"], "ok") << r.dump();
  EXPECT_NE(r["warnings"].dump().find("victim (deleted): deleted before the crash"), std::string::npos) << r["warnings"];
  const auto& f0 = r["threads"][0]["frames"].at(0);
  EXPECT_EQ(f0["module"], "victim");
  EXPECT_EQ(f0["function"], "");
  // The same code as the intact executable's chain_three: the same offset in its module.
  const json intact = report_of(base_request(), core_of("chain", {TARGET_BIN, "chain"}).first);
  EXPECT_EQ(f0["module_offset"], intact["threads"][0]["frames"][0]["module_offset"]);
}

TEST_F(AnalyzerTest, ZstdCoreGivesTheSameReportAndLeavesNoTempFile) {
  const auto& [core, text] = core_of("chain", {TARGET_BIN, "chain"});
  const std::string zst = *dir_ / "chain.core.zst";
  ASSERT_EQ(run_capture({which("zstd"), "-q", "-f", core, "-o", zst}).first.exit_code(), 0);
  const std::string temp = *dir_ / "tmp";
  std::filesystem::create_directories(temp);
  std::filesystem::permissions(temp, std::filesystem::perms::all);
  json req = base_request();
  req["compression"] = "zstd";
  req["temp_dir"] = temp;
  const json z = report_of(req, zst);
  const json raw = report_of(base_request(), core);
  ASSERT_EQ(z["state"], "ok") << z.dump();
  EXPECT_EQ(z["threads"], raw["threads"]);
  EXPECT_EQ(z["signature"], raw["signature"]);
  EXPECT_TRUE(std::filesystem::is_empty(temp));

  // Cut short: the decompressed prefix is analysed with a warning, or it is unavailable with a reason.
  const std::string cut = *dir_ / "cut.core.zst";
  std::filesystem::copy_file(zst, cut, std::filesystem::copy_options::overwrite_existing);
  std::filesystem::resize_file(cut, std::filesystem::file_size(zst) / 2);
  const json c = report_of(req, cut);
  EXPECT_NE(c["warnings"].dump().find("zstd stream truncated"), std::string::npos) << c.dump();
  if (c["state"] == "unavailable") {
    EXPECT_NE(c["reason"], "");
  }

  // Not zstd at all.
  const json g = report_of(req, core);
  EXPECT_EQ(g["state"], "unavailable");
  EXPECT_NE(std::string(g["reason"]).find("zstd"), std::string::npos) << g.dump();
}

TEST_F(AnalyzerTest, TruncatedKernelLayoutCoresGiveAReportAtEveryLength) {
  const std::string seed = SEED_CORE;
  const json full = report_of(base_request(), seed);
  ASSERT_EQ(full["state"], "ok") << full.dump();
  ASSERT_GE(full["threads"][0]["frames"].size(), 3u);
  const auto size = std::filesystem::file_size(seed);
  const std::string cut = *dir_ / "cut.core";
  int ok = 0, unavailable = 0;
  for (const std::uintmax_t len : {std::uintmax_t{1}, std::uintmax_t{63}, std::uintmax_t{64}, std::uintmax_t{600}, std::uintmax_t{4000},
                                   std::uintmax_t{20000}, size / 4, size / 2, size - 4096, size - 1}) {
    std::filesystem::copy_file(seed, cut, std::filesystem::copy_options::overwrite_existing);
    std::filesystem::resize_file(cut, len);
    const json r = report_of(base_request(), cut);
    if (r["state"] == "ok") {
      ++ok;
      EXPECT_TRUE(r["threads"][0]["crashed"]) << len;
    } else {
      ++unavailable;
      EXPECT_EQ(r["state"], "unavailable") << len;
      EXPECT_NE(r["reason"], "") << len;
    }
  }
  // Past its notes a cut core still has its threads; before them it has none.
  EXPECT_GE(ok, 3);
  EXPECT_GE(unavailable, 3);
}

TEST_F(AnalyzerTest, GarbageEmptyAndNonCoreInputsAreUnavailableWithAReason) {
  const std::string garbage = *dir_ / "garbage";
  std::ofstream(garbage) << std::string(100000, 'x');
  const std::string empty = *dir_ / "empty";
  std::ofstream{empty};
  for (const auto& [file, why] : std::vector<std::pair<std::string, std::string>>{
           {garbage, "not an ELF file"}, {empty, "empty"}, {TARGET_BIN, "not a core"}}) {
    const json r = report_of(base_request(), file);
    EXPECT_EQ(r["state"], "unavailable") << file;
    EXPECT_NE(std::string(r["reason"]).find(why), std::string::npos) << r["reason"];
  }
}

TEST_F(AnalyzerTest, FdInterfaceMatchesTheDocumentedOne) {
  const auto& [core, text] = core_of("chain", {TARGET_BIN, "chain"});
  const std::string req = *dir_ / "fd-request.json";
  std::ofstream(req) << base_request().dump();
  const auto [st, out] = run_capture({"/bin/sh", "-c", "exec \"$0\" --request-fd 0 --core-fd 3 <\"$1\" 3<\"$2\"", ANALYZER_BIN, req, core});
  ASSERT_EQ(st.exit_code(), 0) << out;
  EXPECT_EQ(json::parse(out)["signature"], report_of(base_request(), core)["signature"]);
}

TEST_F(AnalyzerTest, BadRequestWritesNoReport) {
  const auto& [core, text] = core_of("chain", {TARGET_BIN, "chain"});
  for (const json& bad : {json{{"compression", "lz4"}}, json{{"max_frames", -1}}, json{{"thread_names", {{"x", "a"}}}}}) {
    const auto r = analyze(bad, core);
    EXPECT_EQ(r.status.exit_code(), 2) << bad.dump();
    EXPECT_EQ(r.out, "") << bad.dump();
  }
}

TEST_F(AnalyzerTest, SandboxRefusesSocketsExecPtraceAndWrites) {
  const auto& [core, text] = core_of("chain", {TARGET_BIN, "chain"});
  const std::string req = *dir_ / "check.json";
  json request = base_request();
  request["cpu_seconds"] = 7;
  request["memory_bytes"] = 512 << 20;
  std::ofstream(req) << request.dump();
  const auto [st, out] = run_capture({ANALYZER_BIN, "--request", req, "--core", core, "--sandbox-self-check"});
  ASSERT_EQ(st.exit_code(), 0) << out;
  const json j = json::parse(out, nullptr, false);
  ASSERT_TRUE(j.is_object() && j.contains("socket_inet")) << "no self-check, sandbox failed? " << out;
  const std::string eperm = std::strerror(EPERM);
  for (const char* call : {"socket_inet", "socket_unix", "execve", "ptrace", "kill_init", "open_write"}) {
    EXPECT_EQ(j[call], eperm) << call << ": " << out;
  }
  EXPECT_EQ(j["open_read"], "allowed");
  EXPECT_EQ(j["no_new_privs"], 1);
  EXPECT_EQ(j["seccomp_mode"], 2);  // SECCOMP_MODE_FILTER
  EXPECT_TRUE(j["sched_idle"]);
  EXPECT_EQ(j["rlimit_cpu"], 7);
  EXPECT_EQ(j["rlimit_core"], 0);
  if (!j["asan"].get<bool>()) {
    EXPECT_EQ(j["rlimit_as"], 512 << 20);
  }
  if (::geteuid() == 0) {
    EXPECT_EQ(j["uid"], 65534);
    EXPECT_EQ(j["gid"], 65534);
  }
}

TEST_F(AnalyzerTest, TinyMemoryLimitEndsCleanly) {
  const auto& [core, text] = core_of("threads2000", {TARGET_BIN, "threads", "2000"});
  for (const std::uint64_t bytes : {std::uint64_t{1} << 20, std::uint64_t{40} << 20}) {
    json req = base_request();
    req["memory_bytes"] = bytes;
    const auto r = analyze(req, core);
    ASSERT_TRUE(r.status.exited) << "hung";
    EXPECT_FALSE(r.status.signaled()) << "signal " << r.status.term_signal();
    if (r.status.exit_code() == 0) {
      ASSERT_TRUE(r.report.is_object()) << r.out;
      // Under ASan no RLIMIT_AS is set (its shadow reservation is terabytes): nothing to refuse.
      if (bytes == std::uint64_t{1} << 20 && r.report["warnings"].dump().find("ASan") == std::string::npos) {
        EXPECT_NE(std::string(r.report["reason"]).find("memory_bytes"), std::string::npos);
      }
    }
  }
}

TEST_F(AnalyzerTest, DebuginfodIsAskedOnlyWhenConfigured) {
  const auto& [core, text] = deleted_core();
  json req = base_request();
  const json off = report_of(req, core);
  EXPECT_FALSE(off["debuginfod_used"]);
  // A server that refuses connections (loopback, closed port): asked, nothing found, report made.
  req["debuginfod"] = {{"urls", {"http://127.0.0.1:9"}}, {"budget_s", 5}, {"cache_dir", *dir_ / "debuginfod-cache"}};
  const json on = report_of(req, core);
  ASSERT_EQ(on["state"], "ok") << on.dump();
  EXPECT_TRUE(on["debuginfod_used"]);
  EXPECT_EQ(on["threads"], off["threads"]);
}

}  // namespace
}  // namespace coredumpd::test
