// `dumpctl info` laid out as coredumpctl 252's print_info() (labels, order, alignment, user names,
// the unified control group), hostile bytes kept escaped on their line, and the JSON shapes of
// `list --json` (coredumpctl's keys and ours, without the /proc capture) and `info --json`.
// The comparison with coredumpctl itself: tests/integration/coredumpctl_compare_test.cc.
#include <chrono>
#include <fstream>
#include <regex>
#include <set>

#include <nlohmann/json.hpp>

#include "cli/format.h"
#include "tests/unit/dumpctl_analysis_support.h"

namespace coredumpd::cli {
namespace {

using unit_analysis::AnalysisStoreTest;
using unit_analysis::Result;

std::int64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

/// The labels of an info text, in order (a label is right-aligned in 14 columns, then ": ").
std::vector<std::string> labels_of(const std::vector<std::string>& lines) {
  std::vector<std::string> out;
  for (const auto& l : lines)
    if (l.size() >= 16 && l.compare(14, 2, ": ") == 0 && l[13] != ' ') out.push_back(l.substr(l.find_first_not_of(' '), 14 - l.find_first_not_of(' ')));
  return out;
}

class DumpctlInfoJson : public AnalysisStoreTest {
 protected:
  /// A session crash of root's, with the unit facts the daemon identifies.
  DumpRecord session_crash(int n) {
    DumpRecord r = add(n, now_us() - 19'000'000);
    r.uid = r.euid = r.gid = r.egid = 0;
    r.hostname = "box";
    r.boot_id = "0123456789abcdef0123456789abcdef";
    r.cgroup = "0::/user.slice/user-0.slice/session-7.scope\n";
    r.extra["container"] = {{"key", "host"}, {"in_container", false}, {"unit", "session-7.scope"},
                            {"slice", "user-0.slice"}, {"owner_uid", 0}};
    r.container_key = "host";
    Index(store_, true).update(r);
    return r;
  }
};

TEST_F(DumpctlInfoJson, CoredumpctlsLinesComeFirstInItsOrderThenOurs) {
  const DumpRecord r = session_crash(1);
  const Result res = run({"info", r.id});
  ASSERT_EQ(res.rc, 0) << res.err;
  const auto ls = lines(res.out);
  std::vector<std::string> want = {"PID", "UID", "GID", "Signal", "Timestamp", "Command Line", "Executable",
                                   "Control Group", "Unit", "Slice", "Session", "Owner UID", "Boot ID"};
  if (std::ifstream("/etc/machine-id").good()) want.push_back("Machine ID");
  for (const char* l : {"Hostname", "Storage", "Size on Disk", "Message", "ID", "State"}) want.push_back(l);
  const auto got = labels_of(ls);
  ASSERT_GE(got.size(), want.size()) << res.out;
  EXPECT_EQ(std::vector<std::string>(got.begin(), got.begin() + static_cast<std::ptrdiff_t>(want.size())), want) << res.out;

  const auto has = [&](const std::string& l) { return std::find(ls.begin(), ls.end(), l) != ls.end(); };
  EXPECT_TRUE(has("           PID: 101 (prog1)")) << res.out;
  EXPECT_TRUE(has("           UID: 0 (root)")) << res.out;
  EXPECT_TRUE(has("           GID: 0 (root)")) << res.out;
  EXPECT_TRUE(has("        Signal: 11 (SEGV)")) << res.out;
  EXPECT_TRUE(has(" Control Group: /user.slice/user-0.slice/session-7.scope")) << res.out;
  EXPECT_TRUE(has("       Session: 7")) << res.out;
  EXPECT_TRUE(has("     Owner UID: 0 (root)")) << res.out;
  EXPECT_TRUE(has("       Storage: " + store_ + "/" + r.path + " (present)")) << res.out;
  EXPECT_TRUE(has("       Message: Process 101 (prog1) of user 0 dumped core.")) << res.out;
  EXPECT_TRUE(std::regex_search(res.out, std::regex("\n     Timestamp: \\w{3} \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d UTC \\((19|20|21)s ago\\)\n")))
      << res.out;
}

TEST_F(DumpctlInfoJson, RelativeAgesReadAsSystemds) {
  constexpr std::int64_t s = 1'000'000, now = 2'000'000'000 * s;
  EXPECT_EQ(format_relative(now, now), "now");
  EXPECT_EQ(format_relative(now - 19 * s, now), "19s ago");
  EXPECT_EQ(format_relative(now - 150 * s, now), "2min 30s ago");
  EXPECT_EQ(format_relative(now - 3 * 3600 * s - 120 * s, now), "3h 2min ago");
  EXPECT_EQ(format_relative(now - 26 * 3600 * s, now), "1 day 2h ago");
  EXPECT_EQ(format_relative(now - 8 * 86400 * s, now), "1 week 1 day ago");
  EXPECT_EQ(format_relative(now + 5 * s, now), "5s left");
  EXPECT_EQ(format_relative(now - 31'557'600 * s - 2'629'800 * s, now), "1 year 1 month ago");
}

// Newlines, escape sequences and invalid UTF-8 in every string that comes from the crashing
// process: escaped, each value on its own line, no raw control byte in the output.
TEST_F(DumpctlInfoJson, HostileBytesStayEscapedOnTheirLine) {
  DumpRecord r = add(1, now_us());
  r.comm = "a\nb\x1b[31m";
  r.exe = "/x\n\xff";
  r.argv = {"/x\n\xff", "--p=\x1b]0;t\x07"};
  r.hostname = "h\r\nx";
  // As the daemon stores byte strings in extra: a JSON string when UTF-8, else an array of bytes.
  r.extra["container"] = {{"cgroup_path", bytes_to_json("/a\nb\xff")},
                          {"unit", bytes_to_json("u\n\xc3.service")},
                          {"slice", bytes_to_json("s\xc2\x9b.slice")}};
  Index(store_, true).update(r);
  const Result res = run({"info", r.id});
  ASSERT_EQ(res.rc, 0) << res.err;
  for (const char c : res.out) {
    const auto u = static_cast<unsigned char>(c);
    EXPECT_TRUE(c == '\n' || (u >= 0x20 && u < 0x7f)) << "raw byte " << int(u) << "\n" << res.out;
  }
  const auto ls = lines(res.out);
  const auto has = [&](const std::string& l) { return std::find(ls.begin(), ls.end(), l) != ls.end(); };
  EXPECT_TRUE(has("           PID: 101 (a\\nb\\x1b[31m)")) << res.out;
  EXPECT_TRUE(has("    Executable: /x\\n\\xff")) << res.out;
  EXPECT_TRUE(has("  Command Line: $'/x\\n\\377' $'--p=\\033]0;t\\007'")) << res.out;
  EXPECT_TRUE(has(" Control Group: /a\\nb\\xff")) << res.out;
  EXPECT_TRUE(has("          Unit: u\\n\\xc3.service")) << res.out;
  EXPECT_TRUE(has("         Slice: s\\u009b.slice")) << res.out;
  EXPECT_TRUE(has("      Hostname: h\\r\\nx")) << res.out;
  // Every line is a label's, or a continuation of a multi-line value (the Message) indented by 16:
  // no value broke out onto a line of its own.
  for (const auto& l : ls) {
    const bool label = l.size() >= 16 && l.compare(14, 2, ": ") == 0 && l[13] != ' ';
    EXPECT_TRUE(label || l.rfind(std::string(16, ' '), 0) == 0) << "a line of its own: " << l << "\n" << res.out;
  }
}

TEST_F(DumpctlInfoJson, ListJsonHasCoredumpctlsKeysAndOursWithoutTheProcCapture) {
  DumpRecord a = add(1, 1'000'000);
  a.extra["proc"] = {{"maps", std::string(100'000, 'm')}, {"status", std::string(5'000, 's')}};
  a.extra["environ"] = {std::string(20'000, 'e')};
  Index(store_, true).update(a);
  DumpRecord b = add(2, 2'000'000, /*core=*/false);
  b.uid = b.euid = -1;
  b.signal.reset();
  b.exe.clear();
  Index(store_, true).update(b);

  const Result res = run({"list", "--json=pretty"});
  ASSERT_EQ(res.rc, 0) << res.err;
  const auto j = nlohmann::json::parse(res.out);
  ASSERT_EQ(j.size(), 2U);
  const std::set<std::string> keys = {"time", "pid", "uid", "gid", "sig", "corefile", "exe", "size", "id",
                                      "short_id", "state", "reason", "comm", "container", "signature"};
  for (const auto& e : j) {
    std::set<std::string> got;
    for (const auto& [k, v] : e.items()) got.insert(k);
    EXPECT_EQ(got, keys) << e;
  }
  EXPECT_EQ(j[0]["time"], 1'000'000);
  EXPECT_EQ(j[0]["pid"], 101);
  EXPECT_EQ(j[0]["uid"], 1000);
  EXPECT_EQ(j[0]["sig"], SIGSEGV);
  EXPECT_EQ(j[0]["corefile"], "present");
  EXPECT_EQ(j[0]["exe"], "/usr/bin/prog1");
  EXPECT_EQ(j[0]["size"], a.stored_size);
  EXPECT_EQ(j[0]["state"], "complete");
  EXPECT_TRUE(j[1]["uid"].is_null());
  EXPECT_TRUE(j[1]["sig"].is_null());
  EXPECT_EQ(j[1]["corefile"], "none");
  EXPECT_EQ(j[1]["exe"], "prog2") << "coredumpctl's exe ?: comm";
  EXPECT_TRUE(j[1]["size"].is_null());
  EXPECT_LT(res.out.size(), 1200U) << "no /proc capture in the listing:\n" << res.out;

  // info --json: the whole record, the capture included, with the same coredumpctl keys.
  const auto info = nlohmann::json::parse(run({"info", "--json=pretty", a.id}).out);
  EXPECT_EQ(info["extra"]["proc"]["maps"].get<std::string>().size(), 100'000U);
  for (const auto& k : keys) EXPECT_EQ(info[k], j[0][k]) << k;
  EXPECT_EQ(info["signal"], SIGSEGV) << "the record's own keys stay";
  EXPECT_EQ(info["argv"], nlohmann::json::array({"/usr/bin/prog1"}));
}

}  // namespace
}  // namespace coredumpd::cli
