// Crash analysis end to end (issue 22): real-kernel crashes of tests/programs' crash_* programs,
// stored by coredumpd with analysis on and analysed by the build tree's coredumpd-analyze; what
// `dumpctl info ID` prints and `dumpctl info --json ID` carries is compared with facts read here
// independently (readelf's build-id, addr2line's file:line, the stored core's NT_PRSTATUS notes).
#include <sys/stat.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <tuple>

#include <nlohmann/json.hpp>

#include "analysis/crash_report.h"
#include "tests/e2e/real_kernel_fixture.h"

using namespace coredumpd;
using namespace coredumpd::test;
using nlohmann::json;

namespace {

std::vector<std::string> words(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

std::vector<std::string> lines(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> out;
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }
bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// The GNU build-id of an ELF file as `readelf -n` prints it (lower-case hex), "" if it has none.
std::string readelf_build_id(const std::string& path) {
  const auto [st, out] = run_capture({"/usr/bin/readelf", "-n", path});
  EXPECT_EQ(st.exit_code(), 0) << "readelf -n " << path;
  for (const auto& l : lines(out)) {
    const auto at = l.find("Build ID: ");
    if (at != std::string::npos) return words(l.substr(at + 10)).at(0);
  }
  return "";
}

// Where `addr2line` puts a file address of `path`: {basename of the source file, line}.
std::pair<std::string, unsigned> addr2line(const std::string& path, std::uint64_t address) {
  char hex[32];
  std::snprintf(hex, sizeof hex, "0x%llx", static_cast<unsigned long long>(address));
  const auto [st, out] = run_capture({"/usr/bin/addr2line", "-e", path, hex});
  EXPECT_EQ(st.exit_code(), 0) << "addr2line -e " << path << " " << hex;
  const auto first = words(out);  // "/src/tests/programs/crash_chain.cc:42" [(discriminator n)]
  if (first.empty()) return {"", 0};
  const auto colon = first[0].rfind(':');
  if (colon == std::string::npos) return {"", 0};
  const auto file = first[0].substr(0, colon);
  return {file.substr(file.rfind('/') + 1), static_cast<unsigned>(std::strtoul(first[0].c_str() + colon + 1, nullptr, 10))};
}

std::string basename_of(const std::string& path) { return path.substr(path.rfind('/') + 1); }

// One "Stack trace of thread N (name):" block of `dumpctl info`: the thread's TID, its name ("" if
// the header has none), its frame lines ("#0  0x... function (module + 0x...)") and the other
// lines of the block (what it says of omitted frames, errors).
struct TextThread {
  std::int64_t tid = 0;
  std::string name;
  std::vector<std::string> frames;
  std::vector<std::string> notes;
};

// The stack-trace blocks of `dumpctl info` output, in the order printed.
std::vector<TextThread> stack_traces(const std::string& info) {
  std::vector<TextThread> out;
  bool in_block = false;
  for (const auto& raw : lines(info)) {
    const auto at = raw.find_first_not_of(' ');
    const std::string l = at == std::string::npos ? "" : raw.substr(at);
    if (starts_with(l, "Stack trace of thread ")) {
      TextThread t;
      t.tid = std::strtoll(l.c_str() + 22, nullptr, 10);
      const auto open = l.find(" ("), close = l.rfind(')');
      if (open != std::string::npos && close != std::string::npos && close > open) t.name = l.substr(open + 2, close - open - 2);
      out.push_back(t);
      in_block = true;
    } else if (l.empty() || starts_with(l, "Module ") || (!starts_with(l, "#") && contains(l, ": ") && !in_block)) {
      in_block = false;
    } else if (in_block && starts_with(l, "#")) {
      out.back().frames.push_back(l);
    } else if (in_block) {
      out.back().notes.push_back(l);
    }
  }
  return out;
}

// A function name without its parameter list ("level3()" demangled is "level3").
std::string bare(const std::string& function) { return function.substr(0, function.find('(')); }

// The function a frame line names, bare(): "#0  0x<pc> <function or n/a> (<module> + 0x<offset>)[ at file:line]".
std::string text_function(const std::string& frame_line) {
  const auto pc = frame_line.find(" 0x");
  const auto offset = frame_line.find(" + 0x");
  if (pc == std::string::npos || offset == std::string::npos) return "";
  const auto module = frame_line.rfind(" (", offset);
  const auto start = frame_line.find(' ', pc + 1);
  if (module == std::string::npos || start == std::string::npos || start >= module) return "";
  return bare(frame_line.substr(start + 1, module - start - 1));
}

// Where `fn` is among the text frames (index), or -1.
int text_frame_index(const TextThread& t, const std::string& fn) {
  for (std::size_t i = 0; i < t.frames.size(); ++i)
    if (text_function(t.frames[i]) == fn) return static_cast<int>(i);
  return -1;
}

// The crashing thread of an analysis (report JSON), or null.
json crashed_thread(const json& analysis) {
  for (const auto& t : analysis.value("threads", json::array()))
    if (t.value("crashed", false)) return t;
  return nullptr;
}

// The functions of a JSON thread's frames, innermost first.
std::vector<std::string> json_functions(const json& thread) {
  std::vector<std::string> out;
  for (const auto& f : thread.value("frames", json::array())) out.push_back(bare(f.value("function", "")));
  return out;
}

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : " | ") + x;
  return s;
}

// The head of a signature text ("SIGABRT: check_failed() | main | ..."): "SIGABRT: check_failed",
// its signal and first frame key, bare().
std::string signature_head(const std::string& text) {
  const auto colon = text.find(": ");
  if (colon == std::string::npos) return text;
  const auto bar = text.find(" | ", colon);
  return text.substr(0, colon + 2) + bare(text.substr(colon + 2, bar == std::string::npos ? std::string::npos : bar - colon - 2));
}

// Whether process `pid` exists (the daemon survived).
bool alive(pid_t pid) { return ::kill(pid, 0) == 0; }

// The configuration of every test: analysis on with `analyzer`, defaults otherwise (64 threads x
// 64 frames), but a wall timeout of 240 s: the analyzer runs SCHED_IDLE, and on a CI machine whose
// two CPUs run ASan tests beside this one it waits for a CPU far longer than it works.
std::string analysis_config(const std::string& analyzer = ANALYZER_BIN) {
  return json{{"analysis", {{"enabled", true}, {"analyzer", analyzer}, {"timeout_s", 240}}}}.dump();
}

}  // namespace

class RealKernelAnalysis : public RealKernel {
 protected:
  void SetUp() override { start_daemon(analysis_config()); }

  // Crashes `argv`, expects a Complete dump released promptly, then waits (bounded, polling the
  // index) for its analysis and returns the record as Index::get() reads it, analysis included.
  std::optional<DumpRecord> analysed_dump_of(const std::vector<std::string>& argv, pid_t* pid) {
    const auto rec = complete_dump_of_program(argv, pid);
    if (!rec) return std::nullopt;
    return analysis_of(rec->id);
  }

  // Waits (60 s) until the analysis of dump `id` is in the index; the record (nullopt, with a
  // failure recorded, if it never came).
  std::optional<DumpRecord> analysis_of(const std::string& id, std::chrono::milliseconds timeout = 300s) {
    std::optional<DumpRecord> found;
    wait_until(
        [&] {
          try {
            Index index(store_, false);
            auto r = index.get(id);
            if (r && !r->analysis.is_null()) found = std::move(r);
          } catch (const IndexError&) {
          }
          return found.has_value();
        },
        timeout);
    if (!found) ADD_FAILURE() << "no analysis of dump " << id << " within " << timeout.count() << " ms; log:\n" << daemon_->log();
    return found;
  }

  // `dumpctl info ID` (text), expected to succeed.
  std::string info_text(const std::string& id) {
    const auto [st, out] = run_capture({DUMPCTL_BIN, "--store", store_, "info", id});
    EXPECT_EQ(st.exit_code(), 0) << out;
    return out;
  }

  // `dumpctl info --json ID`, parsed (an object; a failure recorded if it is not JSON).
  json info_json(const std::string& id) {
    const auto [st, out] = run_capture({DUMPCTL_BIN, "--store", store_, "info", "--json=pretty", id});
    EXPECT_EQ(st.exit_code(), 0) << out;
    try {
      auto j = json::parse(out);
      if (j.is_array() && j.size() == 1) j = j[0];
      return j;
    } catch (const json::exception& e) {
      ADD_FAILURE() << "dumpctl info --json printed no JSON (" << e.what() << "):\n" << out;
      return json::object();
    }
  }

  // analysed_dump_of(), expecting an "ok" analysis with a crashing thread: {record, the analysis as
  // `dumpctl info --json` carries it, its crashing thread} (nullopt, with a failure recorded, if not).
  std::optional<std::tuple<DumpRecord, json, json>> ok_analysis_of(const std::vector<std::string>& argv, pid_t* pid) {
    const auto rec = analysed_dump_of(argv, pid);
    if (!rec) return std::nullopt;
    const auto a = analysis_json(rec->id);
    const auto t = crashed_thread(a);
    if (a.value("state", "") != "ok" || !t.is_object()) {
      ADD_FAILURE() << "not an ok analysis with a crashing thread: " << a.dump(1).substr(0, 4000);
      return std::nullopt;
    }
    return std::tuple{*rec, a, t};
  }

  // The JSON analysis of `id` as `dumpctl info --json` carries it, with its signature beside it.
  json analysis_json(const std::string& id) {
    const auto j = info_json(id);
    EXPECT_TRUE(j.contains("analysis") && j["analysis"].is_object()) << j.dump(1).substr(0, 4000);
    return j.value("analysis", json::object());
  }
};

// A three-deep call chain: the crashing thread's frames are level3, level2, level1, main, in that
// order, in the executable (by name, with its build-id as readelf reads it), and level3 has the
// file:line addr2line finds for its pc.
TEST_F(RealKernelAnalysis, ChainFramesInOrderWithModuleBuildIdAndLine) {
  pid_t pid = 0;
  const auto rec = analysed_dump_of({CRASH_CHAIN_BIN}, &pid);
  ASSERT_TRUE(rec);
  const std::string exe_name = basename_of(CRASH_CHAIN_BIN);
  const std::string build_id = readelf_build_id(CRASH_CHAIN_BIN);
  ASSERT_FALSE(build_id.empty()) << "crash_chain is linked with a build-id";

  // info --json: frames, module, build-id, file:line.
  const auto a = analysis_json(rec->id);
  ASSERT_EQ(a.value("state", ""), "ok") << a.dump(1);
  const auto crashed = crashed_thread(a);
  ASSERT_TRUE(crashed.is_object()) << a.dump(1);
  EXPECT_EQ(a["threads"][0], crashed) << "the crashing thread comes first";
  ASSERT_TRUE(rec->crashing_tid_ns);
  EXPECT_EQ(crashed["tid"], *rec->crashing_tid_ns);
  const auto fns = json_functions(crashed);
  ASSERT_GE(fns.size(), 4u) << joined(fns);
  EXPECT_EQ(std::vector<std::string>(fns.begin(), fns.begin() + 4),
            (std::vector<std::string>{"level3", "level2", "level1", "main"}))
      << joined(fns);
  for (std::size_t i = 0; i < 4; ++i) EXPECT_EQ(crashed["frames"][i]["module"], exe_name) << crashed["frames"][i].dump();
  bool module_found = false;
  for (const auto& m : a["modules"])
    if (basename_of(m.value("path", "")) == exe_name) {
      module_found = true;
      EXPECT_EQ(m["build_id"], build_id) << m.dump();
    }
  EXPECT_TRUE(module_found) << "no module " << exe_name << " in " << a["modules"].dump();
  const auto& f0 = crashed["frames"][0];
  const auto [src, line] = addr2line(CRASH_CHAIN_BIN, f0["module_offset"].get<std::uint64_t>());
  ASSERT_GT(line, 0u) << "addr2line found no line for level3's pc " << f0.dump();
  EXPECT_EQ(basename_of(f0.value("file", "")), src) << f0.dump();
  EXPECT_EQ(f0.value("line", 0u), line) << f0.dump();
  EXPECT_EQ(rec->signature, a.value("signature", "")) << "the index's signature is the report's";
  EXPECT_FALSE(rec->signature.empty());

  // info (text): the crashing thread's block first, the four frames in order, the executable's
  // name on them, its build-id beside its path.
  const auto text = info_text(rec->id);
  const auto blocks = stack_traces(text);
  ASSERT_FALSE(blocks.empty()) << "no \"Stack trace of thread\" in:\n" << text;
  EXPECT_EQ(blocks[0].tid, *rec->crashing_tid_ns) << text;
  const std::vector<std::string> chain{"level3", "level2", "level1", "main"};
  int previous = -1;
  for (const auto& fn : chain) {
    const int at = text_frame_index(blocks[0], fn);
    EXPECT_EQ(at, previous + 1) << fn << " is frame #" << previous + 1 << ":\n" << text;
    if (at >= 0) {
      EXPECT_TRUE(contains(blocks[0].frames[at], exe_name)) << blocks[0].frames[at];
    }
    previous = at;
  }
  bool build_id_line = false;
  for (const auto& l : lines(text)) build_id_line = build_id_line || (contains(l, exe_name) && contains(l, build_id));
  EXPECT_TRUE(build_id_line) << "no line names " << exe_name << " and its build-id " << build_id << ":\n" << text;
}

// A threaded program whose thread "faulter" faults while the others sleep: the crashing thread is
// first, named, in faulter_crash; the sleepers follow, each with its name.
TEST_F(RealKernelAnalysis, ThreadsCrashingThreadFirstAndNamed) {
  pid_t pid = 0;
  const auto rec = analysed_dump_of({CRASH_THREADS_BIN}, &pid);
  ASSERT_TRUE(rec);
  const auto a = analysis_json(rec->id);
  ASSERT_EQ(a.value("state", ""), "ok") << a.dump(1);
  ASSERT_GE(a["threads"].size(), 2u) << a.dump(1);
  const auto& first = a["threads"][0];
  EXPECT_TRUE(first.value("crashed", false)) << first.dump();
  EXPECT_EQ(first["name"], "faulter");
  const auto fns = json_functions(first);
  EXPECT_NE(std::find(fns.begin(), fns.end(), "faulter_crash"), fns.end()) << joined(fns);
  EXPECT_EQ(first["tid"], *rec->crashing_tid_ns);
  EXPECT_NE(first["tid"], pid) << "the faulter is not the main thread";
  // The others: the four sleepers ("sleeper-<i>", crash_threads' default) and main (its comm).
  std::size_t sleepers = 0;
  for (std::size_t i = 1; i < a["threads"].size(); ++i) {
    const auto& t = a["threads"][i];
    EXPECT_FALSE(t.value("crashed", true)) << t.dump();
    const std::string name = t.value("name", "");
    if (starts_with(name, "sleeper-")) {
      ++sleepers;
    } else {
      EXPECT_EQ(t["tid"], pid) << "only main is not a sleeper: " << t.dump();
      EXPECT_EQ(name, rec->comm) << t.dump();
    }
  }
  EXPECT_EQ(sleepers, 4u) << a["threads"].dump();
  // The core's first NT_PRSTATUS is the crashing thread's: the faulter's TID, not the pid.
  const auto core = dumped_core_of(*rec, static_cast<pid_t>(*rec->crashing_tid_ns), SIGSEGV);
  ASSERT_TRUE(core);
  const std::int64_t dumped = inspect_core(*core).prstatus_notes;
  EXPECT_EQ(a["threads_total"], dumped) << "one thread per NT_PRSTATUS note";
  EXPECT_EQ(a["threads"].size(), static_cast<std::size_t>(dumped)) << "under the 64-thread cap, all shown";

  const auto text = info_text(rec->id);
  const auto blocks = stack_traces(text);
  ASSERT_EQ(blocks.size(), a["threads"].size()) << text;
  EXPECT_EQ(blocks[0].tid, *rec->crashing_tid_ns) << text;
  EXPECT_EQ(blocks[0].name, "faulter") << text;
  EXPECT_GE(text_frame_index(blocks[0], "faulter_crash"), 0) << text;
  for (std::size_t i = 1; i < blocks.size(); ++i) {
    EXPECT_EQ(blocks[i].tid, a["threads"][i]["tid"]) << text;
    EXPECT_EQ(blocks[i].name, a["threads"][i]["name"]) << text;
  }
}

// A call through a null function pointer: frame #0 is at pc 0, and the caller is found by its
// return address (or the analysis says why unwinding stopped).
TEST_F(RealKernelAnalysis, JumpToZeroShowsPcZeroAndTheCaller) {
  pid_t pid = 0;
  const auto analysed = ok_analysis_of({CRASH_NULL_CALL_BIN}, &pid);
  ASSERT_TRUE(analysed);
  const auto& [rec, a, t] = *analysed;
  ASSERT_FALSE(t["frames"].empty()) << a.dump(1);
  EXPECT_EQ(t["frames"][0]["pc"], 0u) << t.dump();
  // The caller is call_null, whose return address the call pushed at the stack pointer (frame
  // pointers would skip it: call_null's frame pointer leads to main's return address).
  const std::string exe_name = basename_of(CRASH_NULL_CALL_BIN);
  const bool caller = t["frames"].size() >= 2 && t["frames"][1]["module"] == exe_name &&
                      bare(t["frames"][1].value("function", "")) == "call_null";
  EXPECT_TRUE(caller || (t["frames"].size() == 1 && !t.value("error", "").empty()))
      << "neither the caller call_null (frame #1) nor a reason why unwinding stopped at #0: " << t.dump();
  if (caller) {
    ASSERT_GE(t["frames"].size(), 3u) << t.dump();
    EXPECT_EQ(bare(t["frames"][2].value("function", "")), "main") << t.dump();
  }

  const auto text = info_text(rec.id);
  std::fprintf(stderr, "jump to 0: %s\n%s\n", caller ? "caller found" : "unwinding stopped", text.c_str());
  const auto blocks = stack_traces(text);
  ASSERT_FALSE(blocks.empty()) << text;
  ASSERT_FALSE(blocks[0].frames.empty()) << text;
  EXPECT_EQ(words(blocks[0].frames[0]).at(1), "0x0000000000000000") << text;
  if (caller) {
    ASSERT_GE(blocks[0].frames.size(), 2u) << text;
    EXPECT_EQ(text_function(blocks[0].frames[1]), bare(t["frames"][1]["function"])) << text;
  }
}

// An executable deleted before its crash: the dump is stored complete, the daemon lives, and the
// analysis either symbolises it or shows its frames as module + offset with a warning saying why
// (or is unavailable with the reason).
TEST_F(RealKernelAnalysis, DeletedExecutableStillStoredAndExplained) {
  // The program deletes its own executable: run a copy.
  const std::string exe = *dir_ / basename_of(CRASH_DELETED_EXE_BIN);
  std::filesystem::copy_file(CRASH_DELETED_EXE_BIN, exe);
  ::chmod(exe.c_str(), 0755);
  pid_t pid = 0;
  const auto rec = analysed_dump_of({exe, "delete"}, &pid);
  ASSERT_TRUE(rec);
  EXPECT_FALSE(std::filesystem::exists(exe)) << "the program did not delete itself";
  EXPECT_TRUE(dumped_core_of(*rec, pid, SIGSEGV));
  EXPECT_TRUE(alive(daemon_->pid()));
  const auto a = analysis_json(rec->id);
  const auto text = info_text(rec->id);
  std::fprintf(stderr, "deleted executable: analysis %s\n%s\n", a.value("state", "").c_str(), text.c_str());
  if (a.value("state", "") != "ok") {
    EXPECT_EQ(a["state"], "unavailable") << a.dump(1);
    EXPECT_FALSE(a.value("reason", "").empty()) << a.dump(1);
    EXPECT_TRUE(contains(text, a.value("reason", ""))) << "info does not say why:\n" << text;
    return;
  }
  const auto t = crashed_thread(a);
  ASSERT_TRUE(t.is_object() && !t["frames"].empty()) << a.dump(1);
  const auto& f0 = t["frames"][0];
  EXPECT_TRUE(contains(f0.value("module", ""), basename_of(exe))) << f0.dump();
  if (bare(f0.value("function", "")) != "deleted_crash") {
    EXPECT_EQ(f0.value("function", ""), "") << "a wrong symbol: " << f0.dump();
    EXPECT_FALSE(a["warnings"].empty()) << "unsymbolised without a warning: " << a.dump(1);
    for (const auto& w : a["warnings"]) EXPECT_TRUE(contains(text, w.get<std::string>())) << w << " not in:\n" << text;
  }
  const auto blocks = stack_traces(text);
  ASSERT_FALSE(blocks.empty() || blocks[0].frames.empty()) << text;
  EXPECT_TRUE(contains(blocks[0].frames[0], basename_of(exe))) << text;
  EXPECT_TRUE(contains(blocks[0].frames[0], " + 0x")) << "module + offset: " << text;
}

// A static, stripped binary without build-id: analysed (its module without build-id) or
// unavailable with the reason; the dump stored either way.
TEST_F(RealKernelAnalysis, StaticBinaryWithoutBuildIdAnalysedOrExplained) {
  ASSERT_EQ(readelf_build_id(CRASH_STATIC_NOBUILDID_BIN), "") << "the program is meant to have no build-id";
  pid_t pid = 0;
  const auto rec = analysed_dump_of({CRASH_STATIC_NOBUILDID_BIN}, &pid);
  ASSERT_TRUE(rec);
  EXPECT_TRUE(dumped_core_of(*rec, pid, SIGSEGV));
  const auto a = analysis_json(rec->id);
  const auto text = info_text(rec->id);
  std::fprintf(stderr, "static binary without build-id: analysis %s\n%s\n", a.value("state", "").c_str(), text.c_str());
  if (a.value("state", "") == "ok") {
    for (const auto& m : a["modules"])
      if (contains(m.value("path", ""), basename_of(CRASH_STATIC_NOBUILDID_BIN))) {
        EXPECT_EQ(m["build_id"], "") << m.dump();
      }
    const auto t = crashed_thread(a);
    ASSERT_TRUE(t.is_object()) << a.dump(1);
    EXPECT_TRUE(!t["frames"].empty() || !t.value("error", "").empty()) << t.dump();
    EXPECT_FALSE(stack_traces(text).empty()) << text;
  } else {
    EXPECT_EQ(a["state"], "unavailable") << a.dump(1);
    EXPECT_FALSE(a.value("reason", "").empty()) << a.dump(1);
    EXPECT_TRUE(contains(text, a.value("reason", ""))) << text;
  }
}

// Two crashes at the same site share a signature; a crash at another site gets another; `dumpctl
// signatures` counts them (2 and 1) and `list --signature` lists the two.
TEST_F(RealKernelAnalysis, SameSiteSameSignatureOtherSiteAnother) {
  pid_t p1 = 0, p2 = 0, p3 = 0;
  const auto r1 = analysed_dump_of({CRASH_CHAIN_BIN}, &p1);
  const auto r2 = analysed_dump_of({CRASH_CHAIN_BIN}, &p2);
  const auto r3 = analysed_dump_of({CRASH_CHAIN_BIN, "other"}, &p3);
  ASSERT_TRUE(r1 && r2 && r3);
  ASSERT_EQ(r1->signature.size(), 32u) << r1->signature;
  EXPECT_EQ(r1->signature, r2->signature) << r1->signature_text << " vs " << r2->signature_text;
  EXPECT_EQ(r1->signature_text, r2->signature_text);
  ASSERT_EQ(r3->signature.size(), 32u) << r3->signature;
  EXPECT_NE(r1->signature, r3->signature) << r3->signature_text;
  EXPECT_EQ(signature_head(r1->signature_text), "SIGSEGV: level3") << r1->signature_text;
  EXPECT_EQ(info_json(r1->id).value("signature", ""), r1->signature);

  const auto [st, out] = run_capture({DUMPCTL_BIN, "--store", store_, "signatures"});
  EXPECT_EQ(st.exit_code(), 0) << out;
  // The row of a signature: the line naming its hash (or the hash's first 12 characters).
  const auto row_of = [&out = out](const std::string& hash) -> std::vector<std::string> {
    for (const auto& l : lines(out))
      if (contains(l, hash.substr(0, 12))) return words(l);
    return {};
  };
  const auto row1 = row_of(r1->signature), row3 = row_of(r3->signature);
  ASSERT_FALSE(row1.empty()) << out;
  ASSERT_FALSE(row3.empty()) << out;
  EXPECT_NE(row1, row3) << out;
  const auto count_in = [](const std::vector<std::string>& row) -> int {
    for (std::size_t i = 0; i < row.size(); ++i)  // the first number that is not a date/time/hash
      if (!row[i].empty() && std::all_of(row[i].begin(), row[i].end(), ::isdigit)) return std::stoi(row[i]);
    return -1;
  };
  EXPECT_EQ(count_in(row1), 2) << out;
  EXPECT_EQ(count_in(row3), 1) << out;

  const auto [lst, listed] = run_capture({DUMPCTL_BIN, "--store", store_, "list", "--signature", r1->signature});
  EXPECT_EQ(lst.exit_code(), 0) << listed;
  EXPECT_EQ(lines(listed).size(), 2u + (contains(lines(listed).at(0), "TIME") ? 1u : 0u)) << listed;
  EXPECT_TRUE(contains(listed, std::to_string(p1)) && contains(listed, std::to_string(p2))) << listed;
  EXPECT_FALSE(contains(listed, " " + std::to_string(p3) + " ")) << listed;
}

// abort() from check_failed: the signature starts at check_failed (abort and raise skipped); an
// assert() in validate: it starts at validate.
TEST_F(RealKernelAnalysis, AbortAndAssertSignaturesSkipTheMachinery) {
  pid_t pid = 0;
  const auto aborted = analysed_dump_of({CRASH_ABORT_BIN}, &pid);
  ASSERT_TRUE(aborted);
  EXPECT_EQ(signature_head(aborted->signature_text), "SIGABRT: check_failed") << aborted->signature_text;
  const auto fns = json_functions(crashed_thread(analysis_json(aborted->id)));
  EXPECT_NE(std::find(fns.begin(), fns.end(), "abort"), fns.end()) << "abort is in the frames, only not in the signature: " << joined(fns);

  const auto asserted = analysed_dump_of({CRASH_ASSERT_BIN}, &pid);
  ASSERT_TRUE(asserted);
  EXPECT_EQ(signature_head(asserted->signature_text), "SIGABRT: validate") << asserted->signature_text;
  EXPECT_NE(aborted->signature, asserted->signature);
}

// A 200-deep recursion: 64 frames kept, the rest counted, and info says how many more there were.
TEST_F(RealKernelAnalysis, DeepRecursionCappedAndCounted) {
  pid_t pid = 0;
  const auto analysed = ok_analysis_of({CRASH_RECURSION_BIN}, &pid);
  ASSERT_TRUE(analysed);
  const auto& [rec, a, t] = *analysed;
  EXPECT_EQ(t["frames"].size(), analysis::kDefaultMaxFrames);
  const auto omitted = t.value("frames_omitted", std::size_t{0});
  EXPECT_GE(omitted + analysis::kDefaultMaxFrames, 200u + 1u) << "200 recursive frames and main: " << t.dump().substr(0, 2000);
  const auto text = info_text(rec.id);
  const auto blocks = stack_traces(text);
  ASSERT_FALSE(blocks.empty()) << text;
  EXPECT_EQ(blocks[0].frames.size(), analysis::kDefaultMaxFrames) << text;
  bool counted = false;
  for (const auto& n : blocks[0].notes) counted = counted || (contains(n, std::to_string(omitted)) && contains(n, "more frame"));
  EXPECT_TRUE(counted) << "no \"" << omitted << " more frames\" after the crashing thread's frames:\n" << text;
}

// 2,000 threads: 64 shown (the crashing one first), the rest counted against the core's own
// NT_PRSTATUS notes; the dump complete and the daemon alive.
TEST_F(RealKernelAnalysis, TwoThousandThreadsCappedAndCounted) {
  pid_t pid = 0;
  const auto rec = analysed_dump_of({CRASH_MANY_THREADS_BIN}, &pid);
  ASSERT_TRUE(rec);
  const auto core = dumped_core_of(*rec, pid, SIGSEGV);
  ASSERT_TRUE(core);
  const auto notes = inspect_core(*core).prstatus_notes;
  EXPECT_GE(notes, 2000u);
  EXPECT_TRUE(alive(daemon_->pid()));
  const auto a = analysis_json(rec->id);
  ASSERT_EQ(a.value("state", ""), "ok") << a.dump(1).substr(0, 4000);
  EXPECT_EQ(a["threads_total"], notes);
  EXPECT_EQ(a["threads"].size(), analysis::kDefaultMaxThreads);
  EXPECT_EQ(a["threads_omitted"], notes - analysis::kDefaultMaxThreads);
  EXPECT_TRUE(a["threads"][0].value("crashed", false));
  const auto text = info_text(rec->id);
  EXPECT_EQ(stack_traces(text).size(), analysis::kDefaultMaxThreads) << text.substr(0, 4000);
  EXPECT_TRUE(contains(text, std::to_string(notes - analysis::kDefaultMaxThreads))) << "the omitted threads counted in info";
}

// The analysis comes after the store: with the analyzer held at a gate (a wrapper that waits for a
// file, then runs the real one), the record is Complete with its stored_us and no analysis, and
// the crashed task was released; once the gate opens, the analysis lands.
TEST_F(RealKernelAnalysis, AnalysisLandsAfterTheRecordIsStored) {
  // World-readable: the daemon may start the analyzer as nobody.
  char tmpl[] = "/tmp/cdt-gate-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string gate_dir = tmpl;
  ::chmod(gate_dir.c_str(), 0755);
  const std::string wrapper = gate_dir + "/gated-analyze", gate = gate_dir + "/open";
  {
    std::ofstream w(wrapper);
    w << "#!/bin/sh\nwhile [ ! -e " << gate << " ]; do /bin/sleep 0.05; done\nexec " << ANALYZER_BIN << " \"$@\"\n";
  }
  ::chmod(wrapper.c_str(), 0755);
  restart_daemon(analysis_config(wrapper));

  pid_t pid = 0;
  const auto rec = complete_dump_of_program({CRASH_CHAIN_BIN}, &pid);
  ASSERT_TRUE(rec);
  EXPECT_TRUE(rec->extra.contains(extras::kStoredUs)) << rec->extra.dump();
  {
    Index index(store_, false);
    const auto held = index.get(rec->id);
    ASSERT_TRUE(held);
    EXPECT_EQ(held->state, DumpState::Complete);
    EXPECT_TRUE(held->analysis.is_null()) << "analysed while its analyzer was held: " << held->analysis.dump();
    EXPECT_EQ(held->signature, "");
  }
  { std::ofstream(gate.c_str()) << "go\n"; }
  const auto analysed = analysis_of(rec->id);
  std::filesystem::remove_all(gate_dir);
  ASSERT_TRUE(analysed);
  EXPECT_EQ(analysed->analysis.value("state", ""), "ok") << analysed->analysis.dump(1);
  EXPECT_FALSE(analysed->signature.empty());
  EXPECT_EQ(analysed->state, DumpState::Complete);
  EXPECT_EQ(analysed->stored_size, rec->stored_size) << "the analysis leaves the stored core alone";
}
