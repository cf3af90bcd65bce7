// analysis/crash_report.h: the report's JSON round trip, report_from_json()'s refusals of untrusted
// input, byte strings that are not UTF-8, and fit_report() on a report far over the cap.
#include "analysis/crash_report.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace coredumpd::analysis {
namespace {

using nlohmann::json;
using namespace std::string_literals;

Frame frame(std::string function, std::uint64_t pc) {
  Frame f;
  f.pc = pc;
  f.module = "libfoo.so.1";
  f.module_offset = pc - 0x7f0000000000;
  f.function = std::move(function);
  f.function_offset = 0x1c;
  f.file = "/src/foo.c";
  f.line = 42;
  return f;
}

CrashReport sample() {
  CrashReport r;
  r.state = "ok";
  r.signature = "0123456789abcdef0123456789abcdef";
  r.signature_text = "SIGSEGV: crash_here | main";
  r.threads_total = 3;
  r.threads_omitted = 1;
  r.modules_omitted = 2;
  r.warnings = {"no ELF for /usr/bin/x (deleted): frames unsymbolised"};
  r.elapsed_us = 12345;
  r.maxrss_kib = 6789;
  r.debuginfod_used = true;
  Module m;
  m.path = "/usr/lib/libfoo.so.1";
  m.build_id = "a1b2c3d4";
  m.start = 0x7f0000000000;
  m.end = 0x7f0000010000;
  m.elf = "/usr/lib/libfoo.so.1";
  m.debug = "/usr/lib/debug/.build-id/a1/b2c3d4.debug";
  m.package = json{{"type", "deb"}, {"name", "foo"}, {"version", "1.2"}};
  r.modules.push_back(m);
  Module exe;
  exe.path = "/usr/bin/x (deleted)";
  exe.start = 0x400000;
  exe.end = 0x401000;
  r.modules.push_back(exe);
  Thread t;
  t.tid = 1234;
  t.name = "worker";
  t.crashed = true;
  t.frames = {frame("crash_here", 0x7f0000001000), frame("main", 0x7f0000002000)};
  t.frames_omitted = 7;
  Thread other;
  other.tid = 1235;
  other.error = "no matching address range";
  r.threads = {t, other};
  return r;
}

void expect_same(const CrashReport& a, const CrashReport& b) { EXPECT_EQ(to_json(a), to_json(b)); }

TEST(CrashReport, RoundTripThroughText) {
  const CrashReport r = sample();
  const json j = to_json(r);
  EXPECT_EQ(j["version"], kReportVersion);
  EXPECT_EQ(j["threads"][0]["frames"][1]["function"], "main");
  EXPECT_EQ(j["modules"][1]["package"], nullptr);
  const CrashReport back = report_from_json(json::parse(j.dump()));
  expect_same(r, back);
  EXPECT_EQ(back.threads[0].frames[0].line, 42u);
  EXPECT_EQ(back.modules[0].package["name"], "foo");
  EXPECT_EQ(back.threads[1].error, "no matching address range");
}

TEST(CrashReport, UnavailableRoundTrip) {
  const CrashReport r = unavailable("analyzer timed out after 30000 ms");
  EXPECT_EQ(r.state, "unavailable");
  const CrashReport back = report_from_json(json::parse(to_json(r).dump()));
  EXPECT_EQ(back.state, "unavailable");
  EXPECT_EQ(back.reason, "analyzer timed out after 30000 ms");
  // A reason longer than the cap is cut so that the report still reads back.
  const CrashReport longer = unavailable(std::string(10000, 'x'));
  EXPECT_EQ(longer.reason.size(), 4096u);
  EXPECT_NO_THROW(report_from_json(to_json(longer)));
}

TEST(CrashReport, NonUtf8BytesSurvive) {
  CrashReport r = sample();
  r.threads[0].frames[0].function = "bad\xff\xfe name";
  r.threads[0].name = "\xc0\x80";
  r.modules[0].path = "/tmp/\xe9t\xe9.so";
  r.warnings.push_back("warn \x80");
  const json j = to_json(r);
  EXPECT_TRUE(j["threads"][0]["frames"][0]["function"].is_array());  // bytes_to_json's array form
  const std::string text = j.dump();  // would throw on invalid UTF-8 in a JSON string
  const CrashReport back = report_from_json(json::parse(text));
  EXPECT_EQ(back.threads[0].frames[0].function, "bad\xff\xfe name");
  EXPECT_EQ(back.threads[0].name, "\xc0\x80");
  EXPECT_EQ(back.modules[0].path, "/tmp/\xe9t\xe9.so");
  EXPECT_EQ(back.warnings.back(), "warn \x80");
}

// Each mutation of a valid report must be refused, and the error must name the field.
struct Refusal {
  const char* field;
  std::function<void(json&)> mutate;
};

TEST(CrashReport, RefusesBadInput) {
  const std::vector<Refusal> cases = {
      {"report", [](json& j) { j = json::array(); }},
      {"version", [](json& j) { j["version"] = 2; }},
      {"version", [](json& j) { j["version"] = "1"; }},
      {"version", [](json& j) { j.erase("version"); }},
      {"state", [](json& j) { j["state"] = "partial"; }},
      {"state", [](json& j) { j["state"] = 1; }},
      {"reason", [](json& j) { j["reason"] = "set while ok"; }},
      {"reason", [](json& j) { j["reason"] = std::string(5000, 'r'); }},
      {"reason", [](json& j) { j["state"] = "unavailable"; j["threads"] = json::array(); }},
      {"threads", [](json& j) { j["state"] = "unavailable"; j["reason"] = "x"; }},
      {"signature", [](json& j) { j["signature"] = "0123456789ABCDEF0123456789ABCDEF"; }},
      {"signature", [](json& j) { j["signature"] = "0123"; }},
      {"signature", [](json& j) { j["signature"] = std::string(33, 'a'); }},
      {"signature_text", [](json& j) { j["signature_text"] = ""; }},
      {"signature_text", [](json& j) { j["signature_text"] = std::string(40000, 's'); }},
      {"threads_total", [](json& j) { j["threads_total"] = -1; }},
      {"threads_total", [](json& j) { j["threads_total"] = 1.5; }},
      {"threads_total", [](json& j) { j["threads_total"] = 2; }},  // below 2 shown + 1 omitted
      {"threads_total", [](json& j) { j["threads_total"] = "3"; }},
      {"threads_omitted", [](json& j) { j["threads_omitted"] = true; }},
      {"modules_omitted", [](json& j) { j["modules_omitted"] = std::uint64_t{1} << 50; }},
      {"text_truncated", [](json& j) { j["text_truncated"] = 0; }},
      {"warnings", [](json& j) { j["warnings"] = "x"; }},
      {"warnings[0]", [](json& j) { j["warnings"][0] = 7; }},
      {"warnings[0]", [](json& j) { j["warnings"][0] = json::array({300}); }},
      {"warnings", [](json& j) { j["warnings"] = json(std::vector<std::string>(257, "w")); }},
      {"elapsed_us", [](json& j) { j["elapsed_us"] = -5; }},
      {"maxrss_kib", [](json& j) { j.erase("maxrss_kib"); }},
      {"debuginfod_used", [](json& j) { j["debuginfod_used"] = nullptr; }},
      {"modules", [](json& j) { j["modules"] = json::object(); }},
      {"modules", [](json& j) { j["modules"] = json(std::vector<json>(kMaxModules + 1, j["modules"][0])); }},
      {"modules[0]", [](json& j) { j["modules"][0] = 3; }},
      {"modules[0].path", [](json& j) { j["modules"][0]["path"] = std::string(4097, 'p'); }},
      {"modules[0].path", [](json& j) { j["modules"][0]["path"] = json(std::vector<int>(4097, 65)); }},
      {"modules[0].build_id", [](json& j) { j["modules"][0]["build_id"] = "A1B2"; }},
      {"modules[0].build_id", [](json& j) { j["modules"][0]["build_id"] = "abc"; }},
      {"modules[0].build_id", [](json& j) { j["modules"][0]["build_id"] = std::string(258, 'a'); }},
      {"modules[0].end", [](json& j) { j["modules"][0]["end"] = 1; }},
      {"modules[0].start", [](json& j) { j["modules"][0]["start"] = "0x1000"; }},
      {"modules[0].package", [](json& j) { j["modules"][0]["package"] = "deb"; }},
      {"modules[0].package", [](json& j) { j["modules"][0]["package"] = json::parse(R"({"a":{"b":{"c":{"d":{"e":1}}}}})"); }},
      {"modules[1].elf", [](json& j) { j["modules"][1].erase("elf"); }},
      {"threads", [](json& j) { j["threads"] = json::array(); }},
      {"threads", [](json& j) { j["threads"] = json(std::vector<json>(kDefaultMaxThreads * 16 + 1, j["threads"][1])); }},
      {"threads[1].crashed", [](json& j) { j["threads"][1]["crashed"] = true; }},
      {"threads[0].tid", [](json& j) { j["threads"][0]["tid"] = -1; }},
      {"threads[0].tid", [](json& j) { j["threads"][0]["tid"] = std::int64_t{1} << 40; }},
      {"threads[0].name", [](json& j) { j["threads"][0]["name"] = json::object(); }},
      {"threads[0].frames", [](json& j) { j["threads"][0]["frames"] = json(std::vector<json>(4097, j["threads"][0]["frames"][0])); }},
      {"threads[0].frames[1].pc", [](json& j) { j["threads"][0]["frames"][1]["pc"] = -4096; }},
      {"threads[0].frames[1].function", [](json& j) { j["threads"][0]["frames"][1]["function"] = std::string(4097, 'f'); }},
      {"threads[0].frames[0].line", [](json& j) { j["threads"][0]["frames"][0]["line"] = std::uint64_t{1} << 32; }},
      {"threads[0].frames[0].file", [](json& j) { j["threads"][0]["frames"][0].erase("file"); }},
      {"threads[1].error", [](json& j) { j["threads"][1]["error"] = nullptr; }},
  };
  const json good = to_json(sample());
  ASSERT_NO_THROW(report_from_json(good));
  for (const auto& c : cases) {
    json j = good;
    c.mutate(j);
    try {
      report_from_json(j);
      ADD_FAILURE() << "accepted a bad " << c.field << ": " << j.dump().substr(0, 200);
    } catch (const ReportError& e) {
      EXPECT_NE(std::string(e.what()).find("report: "s + c.field + ":"), std::string::npos)
          << "expected field " << c.field << ", got: " << e.what();
    }
  }
}

TEST(CrashReport, LimitsAreInclusive) {
  json j = to_json(sample());
  j["modules"][0]["path"] = std::string(4096, 'p');
  j["threads"][0]["frames"][0]["line"] = std::uint64_t{0xffffffff};
  j["threads"][0]["frames"][0]["pc"] = std::uint64_t{0xffffffffffffffff};
  j["warnings"] = json(std::vector<std::string>(256, "w"));
  const CrashReport r = report_from_json(j);
  EXPECT_EQ(r.modules[0].path.size(), 4096u);
  EXPECT_EQ(r.threads[0].frames[0].pc, 0xffffffffffffffffu);
  EXPECT_EQ(r.warnings.size(), 256u);
}

TEST(CrashReport, FitReportKeepsTheCrashingThread) {
  CrashReport r;
  r.state = "ok";
  for (int t = 0; t < 2000; ++t) {
    Thread th;
    th.tid = 100 + t;
    th.name = "thread-" + std::to_string(t);
    th.crashed = (t == 0);
    for (int f = 0; f < 64; ++f) {
      th.frames.push_back(frame("function_number_" + std::to_string(f) + "_of_thread_" + std::to_string(t),
                               0x7f0000001000 + static_cast<std::uint64_t>(f)));
    }
    r.threads.push_back(std::move(th));
  }
  r.threads_total = 2000;
  CrashReport one_thread;
  one_thread.threads = {r.threads[1]};
  ASSERT_GT(to_json(one_thread).dump().size() * 2000, 10 * kMaxReportBytes);  // cheaper than dumping it all

  const std::size_t after = fit_report(r);
  const std::string text = to_json(r).dump();
  EXPECT_EQ(after, text.size());
  EXPECT_LE(text.size(), kMaxReportBytes);
  EXPECT_GT(text.size(), kMaxReportBytes / 2);  // dropped what it had to, not everything
  EXPECT_TRUE(r.text_truncated);
  ASSERT_FALSE(r.threads.empty());
  EXPECT_TRUE(r.threads[0].crashed);
  EXPECT_EQ(r.threads[0].tid, 100);
  EXPECT_EQ(r.threads[0].frames.size(), 64u);  // the crashing thread keeps every frame
  EXPECT_EQ(r.threads[0].frames_omitted, 0u);
  // Every dropped thread and frame is counted: shown + omitted == what there was.
  EXPECT_EQ(r.threads.size() + r.threads_omitted, 2000u);
  std::size_t frames = 0;
  for (const auto& t : r.threads) frames += t.frames.size() + t.frames_omitted;
  EXPECT_EQ(frames + 64 * r.threads_omitted, 2000u * 64);
  // The first threads keep their frames, the last lost theirs first.
  EXPECT_EQ(r.threads[1].frames.size(), 64u);
}

TEST(CrashReport, FitReportCutsTheCrashingThreadLast) {
  CrashReport r = sample();
  for (int f = 0; f < 4000; ++f) r.threads[0].frames.push_back(frame(std::string(200, 'g'), 0x7f0000003000));
  const std::size_t cap = 64 * 1024;
  EXPECT_LE(fit_report(r, cap), cap);
  EXPECT_LE(to_json(r).dump().size(), cap);
  ASSERT_EQ(r.threads.size(), 1u);  // the other thread went before any crashing frame
  EXPECT_EQ(r.threads_omitted, 2u);
  EXPECT_EQ(r.threads[0].frames.size() + r.threads[0].frames_omitted, 4002u + 7u);
  EXPECT_EQ(r.threads[0].frames[0].function, "crash_here");  // the innermost frames stay
  EXPECT_TRUE(r.text_truncated);
}

TEST(CrashReport, FitReportLeavesASmallReportAlone) {
  CrashReport r = sample();
  const std::string before = to_json(r).dump();
  EXPECT_EQ(fit_report(r), before.size());
  EXPECT_EQ(to_json(r).dump(), before);
  EXPECT_FALSE(r.text_truncated);
}

}  // namespace
}  // namespace coredumpd::analysis
