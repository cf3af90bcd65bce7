// dumpctl and stored crash analyses: info's stack-trace block (laid out as coredumpctl 252's
// Message), its caps and failure states, --json, `signatures` grouping and `list --signature`.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "analysis/crash_report.h"
#include "cli/analysis_commands.h"
#include "cli/stack_trace.h"
#include "tests/unit/dumpctl_analysis_support.h"

namespace coredumpd::cli::unit_analysis {
namespace {

using analysis::CrashReport;
using analysis::Frame;
using analysis::Module;
using analysis::Thread;

Frame frame(std::uint64_t pc, std::string function, std::string module, std::uint64_t offset,
            std::string file = "", std::uint32_t line = 0) {
  Frame f;
  f.pc = pc;
  f.function = std::move(function);
  f.module = std::move(module);
  f.module_offset = offset;
  f.file = std::move(file);
  f.line = line;
  return f;
}

Module module(std::string path, std::string build_id, nlohmann::json package = nullptr) {
  Module m;
  m.path = std::move(path);
  m.build_id = std::move(build_id);
  m.start = 0x1000;
  m.end = 0x2000;
  m.package = std::move(package);
  return m;
}

/// A report with every kind of line: modules with and without package notes and build-ids,
/// a named crashing thread with a symbolised, a file:line and an unsymbolised frame and a frame cap,
/// an unnamed thread with 11 frames whose unwinding stopped, and omitted threads.
CrashReport known_report() {
  CrashReport r;
  r.state = "ok";
  r.signature = "0123456789abcdef0123456789abcdef";
  r.signature_text = "SIGSEGV: crash_here | main";
  r.modules = {module("/usr/bin/prog1", "0123abcd"),
               module("/usr/lib/x86_64-linux-gnu/libc.so.6", "",
                      {{"type", "deb"}, {"name", "libc6"}, {"version", "2.36-9"}, {"architecture", "amd64"}}),
               module("/usr/lib/libz.so.1", "abcd", {{"name", "zlib"}}),
               module("/opt/nobuild.so", "")};
  Thread t;
  t.tid = 1234;
  t.name = "worker-3";
  t.crashed = true;
  t.frames = {frame(0x7f0000001000, "raise", "libc.so.6", 0x3d000),
              frame(0x555555555189, "crash_here", "prog1", 0x1189, "/src/crasher.cc", 12),
              frame(0x1234, "", "", 0)};
  t.frames_omitted = 3;
  r.threads.push_back(t);
  Thread u;
  u.tid = 1235;
  for (std::uint64_t i = 0; i < 11; ++i) u.frames.push_back(frame(0x400000 + i, "f" + std::to_string(i), "prog1", i));
  u.error = "no CFI for 0x40000a";
  r.threads.push_back(u);
  r.threads_total = 4;
  r.threads_omitted = 2;
  r.warnings = {"no ELF for /opt/nobuild.so: frames unsymbolised"};
  return r;
}

class DumpctlAnalysisTest : public AnalysisStoreTest {};

TEST_F(DumpctlAnalysisTest, InfoShowsTheStackTraceAsCoredumpctlDoes) {
  const DumpRecord r = add(1, 1'000'000);
  set_analysis(r, known_report());
  const Result res = run({"info", r.id});
  ASSERT_EQ(res.rc, 0) << res.err;
  const std::vector<std::string> expected = {
      "Process 101 (prog1) of user 1000 dumped core.",
      "",
      "Module prog1, build-id=0123abcd",
      "Module libc.so.6 from deb libc6-2.36-9.amd64",
      "Module libz.so.1 from package zlib, build-id=abcd",
      "Module nobuild.so without build-id.",
      "Stack trace of thread 1234 (worker-3):",
      "#0  0x00007f0000001000 raise (libc.so.6 + 0x3d000)",
      "#1  0x0000555555555189 crash_here (prog1 + 0x1189) at /src/crasher.cc:12",
      "#2  0x0000000000001234 n/a (n/a + 0x0)",
      "... 3 more frames",
      "",
      "Stack trace of thread 1235:",
      "#0  0x0000000000400000 f0 (prog1 + 0x0)",
      "#1  0x0000000000400001 f1 (prog1 + 0x1)",
      "#2  0x0000000000400002 f2 (prog1 + 0x2)",
      "#3  0x0000000000400003 f3 (prog1 + 0x3)",
      "#4  0x0000000000400004 f4 (prog1 + 0x4)",
      "#5  0x0000000000400005 f5 (prog1 + 0x5)",
      "#6  0x0000000000400006 f6 (prog1 + 0x6)",
      "#7  0x0000000000400007 f7 (prog1 + 0x7)",
      "#8  0x0000000000400008 f8 (prog1 + 0x8)",
      "#9  0x0000000000400009 f9 (prog1 + 0x9)",
      "#10 0x000000000040000a f10 (prog1 + 0xa)",
      "(unwinding stopped: no CFI for 0x40000a)",
      "",
      "... 2 more threads not shown",
  };
  EXPECT_EQ(message_lines(res.out), expected) << res.out;
  const auto ls = lines(res.out);
  const auto has = [&](const std::string& l) { return std::find(ls.begin(), ls.end(), l) != ls.end(); };
  EXPECT_TRUE(has("     Signature: 0123456789abcdef0123456789abcdef (SIGSEGV: crash_here | main)")) << res.out;
  EXPECT_TRUE(has("      build-id: 0123abcd")) << res.out;  // coredumpctl's label
  EXPECT_TRUE(has("      Analysis: no ELF for /opt/nobuild.so: frames unsymbolised")) << res.out;
}

TEST_F(DumpctlAnalysisTest, InfoSaysNotAnalysedUnavailableOrNothing) {
  const DumpRecord pending = add(1, 1);
  const DumpRecord failed = add(2, 2);
  set_analysis(failed, analysis::unavailable("analyzer killed by SIGKILL after the 30 s wall timeout"));
  const DumpRecord no_core = add(3, 3, /*core=*/false);
  const DumpRecord bad = add(4, 4);
  ASSERT_TRUE(Index(store_, true).set_analysis(bad.id, {{"version", 99}}, "", ""));

  // The Message is the journal entry's, as coredumpctl shows it; our Analysis line says why there is no trace.
  const Result not_yet = run({"info", pending.id});
  EXPECT_EQ(message_lines(not_yet.out), (std::vector<std::string>{"Process 101 (prog1) of user 1000 dumped core."}));
  EXPECT_NE(not_yet.out.find("\n      Analysis: not analysed yet\n"), std::string::npos) << not_yet.out;
  EXPECT_EQ(message_lines(run({"info", failed.id}).out),
            (std::vector<std::string>{"Process 102 (prog2) of user 1000 dumped core.", "",
                                      "Stack trace: unavailable (analyzer killed by SIGKILL after the 30 s wall timeout)"}));
  const Result none = run({"info", no_core.id});
  EXPECT_EQ(none.rc, 0);
  EXPECT_EQ(message_lines(none.out),
            (std::vector<std::string>{"Process 103 (prog3) of user 1000 terminated abnormally without generating a coredump.",
                                      "", "coredumpd: metadata_only"}))
      << "no core: the journal's words, no stack trace line\n" << none.out;
  const auto invalid = message_lines(run({"info", bad.id}).out);
  ASSERT_EQ(invalid.size(), 3U);
  EXPECT_EQ(invalid[2].rfind("Stack trace: unavailable (the stored report is not valid: ", 0), 0U) << invalid[2];
}

TEST_F(DumpctlAnalysisTest, InfoEscapesBytesFromTheCore) {
  const DumpRecord r = add(1, 1);
  CrashReport rep = known_report();
  rep.threads.resize(1);
  rep.threads_omitted = 0;
  rep.threads[0].name = "w\xff\x1b[31m";
  rep.threads[0].frames = {frame(0x10, "f\xc3(\xe2\x80\xae", "lib\nx.so", 0x10, "/src/\x07.c", 3)};
  rep.threads[0].frames_omitted = 0;
  rep.modules = {module("/lib/\xfe.so", "")};
  set_analysis(r, rep);
  const Result res = run({"info", r.id});
  ASSERT_EQ(res.rc, 0) << res.err;
  const auto msg = message_lines(res.out);
  ASSERT_EQ(msg.size(), 5U) << res.out;
  EXPECT_EQ(msg[2], "Module \\xfe.so without build-id.");
  EXPECT_EQ(msg[3], "Stack trace of thread 1234 (w\\xff\\x1b[31m):");
  EXPECT_EQ(msg[4], "#0  0x0000000000000010 f\\xc3(\\u202e (lib\\nx.so + 0x10) at /src/\\x07.c:3");
  for (const char c : res.out) {
    const auto u = static_cast<unsigned char>(c);
    EXPECT_TRUE(c == '\n' || (u >= 0x20 && u < 0x7f)) << "raw byte " << int(u);
  }
}

TEST_F(DumpctlAnalysisTest, InfoJsonCarriesFramesModulesAndSignature) {
  const DumpRecord r = add(1, 1);
  set_analysis(r, known_report());
  const Result res = run({"info", "--json=pretty", r.id});
  ASSERT_EQ(res.rc, 0) << res.err;
  const auto j = nlohmann::json::parse(res.out);
  EXPECT_EQ(j["signature"], "0123456789abcdef0123456789abcdef");
  EXPECT_EQ(j["signature_text"], "SIGSEGV: crash_here | main");
  const CrashReport back = analysis::report_from_json(j["analysis"]);
  ASSERT_EQ(back.threads.size(), 2U);
  EXPECT_EQ(back.threads[0].name, "worker-3");
  EXPECT_EQ(back.threads[0].frames[1].function, "crash_here");
  EXPECT_EQ(back.threads[0].frames[1].line, 12U);
  ASSERT_EQ(back.modules.size(), 4U);
  EXPECT_EQ(back.modules[1].package["name"], "libc6");

  const DumpRecord other = add(2, 2);
  const auto plain = nlohmann::json::parse(run({"info", "--json=pretty", other.id}).out);
  EXPECT_TRUE(plain["analysis"].is_null());
}

TEST_F(DumpctlAnalysisTest, SignaturesGroupCountFirstLastExecutablesContainers) {
  const std::string a = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", b = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb",
                    c = "cccccccccccccccccccccccccccccccc";
  set_analysis(add(1, 10'000'000, true, "/usr/bin/alpha"), signed_report(a, "SIGSEGV: old words"));
  set_analysis(add(2, 20'000'000, true, "/usr/bin/beta (deleted)"), signed_report(b, "SIGABRT: b"));
  DumpRecord in_ct = add(3, 30'000'000, true, "/usr/bin/alpha");
  in_ct.extra["container"] = {{"in_container", true}, {"key", "docker:0123456789abcdef"}, {"name", "web"}};
  Index(store_, true).update(in_ct);
  set_analysis(in_ct, signed_report(a, "SIGSEGV: crash_here | main"));
  set_analysis(add(4, 40'000'000, true, "/opt/gamma"), signed_report(a, "SIGSEGV: crash_here | main"));
  set_analysis(add(5, 50'000'000, true, "/usr/bin/beta"), signed_report(b, "SIGABRT: b"));
  set_analysis(add(6, 5'000'000, true, "/usr/bin/delta"), signed_report(c, "SIGILL: c"));
  add(7, 60'000'000);  // not analysed: in no group

  const auto groups = group_signatures(Index(store_, false).list());
  ASSERT_EQ(groups.size(), 3U);
  EXPECT_EQ(groups[0].signature, a);
  EXPECT_EQ(groups[0].count, 3U);
  EXPECT_EQ(groups[0].first_us, 10'000'000);
  EXPECT_EQ(groups[0].last_us, 40'000'000);
  EXPECT_EQ(groups[0].text, "SIGSEGV: crash_here | main") << "the newest dump's wording";
  EXPECT_EQ(groups[0].executables, (std::vector<std::string>{"alpha", "gamma"}));
  EXPECT_EQ(groups[0].containers, std::vector<std::string>{"web"});
  EXPECT_EQ(groups[1].signature, b) << "two dumps, newest at 50 s: before c's one";
  EXPECT_EQ(groups[1].executables, std::vector<std::string>{"beta"}) << "\" (deleted)\" is the same executable";
  EXPECT_TRUE(groups[1].containers.empty());
  EXPECT_EQ(groups[2].signature, c);

  const Result res = run({"signatures"});
  ASSERT_EQ(res.rc, 0) << res.err;
  const auto ls = lines(res.out);
  ASSERT_EQ(ls.size(), 4U) << res.out;
  EXPECT_EQ(ls[0].rfind("COUNT FIRST", 0), 0U) << ls[0];
  EXPECT_NE(ls[1].find("    3 Thu 1970-01-01 00:00:10 UTC Thu 1970-01-01 00:00:40 UTC aaaaaaaaaaaa alpha,gamma"),
            std::string::npos) << ls[1];
  EXPECT_NE(ls[1].find(" web "), std::string::npos) << ls[1];
  EXPECT_NE(ls[1].find("SIGSEGV: crash_here | main"), std::string::npos);
  EXPECT_NE(res.err.find("1 dumps have no signature"), std::string::npos) << res.err;

  const auto j = nlohmann::json::parse(run({"signatures", "--json", "--since", "@15"}).out);
  ASSERT_EQ(j.size(), 2U) << "--since drops dump 1 and c's only dump";
  EXPECT_EQ(j[0]["signature"], b) << "two dumps each: b's newest (50 s) is newer than a's (40 s)";
  EXPECT_EQ(j[0]["count"], 2);
  EXPECT_EQ(j[0]["first_us"], 20'000'000);
  EXPECT_EQ(j[1]["signature"], a);
  EXPECT_EQ(j[1]["count"], 2);
  EXPECT_EQ(j[1]["first_us"], 30'000'000);
  EXPECT_EQ(j[1]["executables"], (nlohmann::json{"alpha", "gamma"}));
  EXPECT_EQ(j[1]["containers"], nlohmann::json{"web"});
}

TEST_F(DumpctlAnalysisTest, ListSignatureFiltersByPrefix) {
  const std::string a = "abcdef0123456789abcdef0123456789", b = "abcd99999999999999999999999999ff";
  const DumpRecord r1 = add(1, 1), r2 = add(2, 2), r3 = add(3, 3);
  set_analysis(r1, signed_report(a, "a"));
  set_analysis(r2, signed_report(b, "b"));
  const auto ids = [&](const std::string& sig) {
    const Result res = run({"list", "--json=pretty", "--signature", sig});
    std::vector<std::string> got;
    if (res.rc == 1 && res.err == "No coredumps found.\n") return got;  // coredumpctl 252: no "[]", exit 1
    EXPECT_EQ(res.rc, 0) << res.err;
    for (const auto& j : nlohmann::json::parse(res.out)) got.push_back(j["id"]);
    return got;
  };
  EXPECT_EQ(ids(a), std::vector<std::string>{r1.id});
  EXPECT_EQ(ids("ABCDEF"), std::vector<std::string>{r1.id}) << "case-insensitive prefix";
  EXPECT_EQ(ids("abcd"), (std::vector<std::string>{r1.id, r2.id}));
  EXPECT_TRUE(ids("ff").empty());
  const Result bad = run({"list", "--signature", "xyz"});
  EXPECT_EQ(bad.rc, 1);
  EXPECT_NE(bad.err.find("invalid --signature 'xyz'"), std::string::npos) << bad.err;
  const Result table = run({"list", "--signature", "abcdef"});
  EXPECT_EQ(lines(table.out).size(), 2U) << table.out;
  (void)r3;
}

}  // namespace
}  // namespace coredumpd::cli::unit_analysis
