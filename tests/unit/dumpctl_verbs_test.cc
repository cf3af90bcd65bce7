// dumpctl driven as coredumpctl 252 is (issue 24): matches on every verb, -1/-n/-r, -F, --json
// modes, exit codes, info of every match, dump/debug of the newest match, $SYSTEMD_DEBUGGER, -A and
// the gdb alias — in-process through dumpctl_main() on a store built by hand. The behaviour each
// test expects was checked against coredumpctl 252 on the same records (docs/DUMPCTL.md).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/dumpctl.h"
#include "cli/table.h"
#include "store/index.h"
#include "store/record_extras.h"
#include "tests/unit/store_test_files.h"

namespace coredumpd::cli {
namespace {

namespace fs = std::filesystem;
using unit::make_id;
using unit::read_file;
using unit::write_file;
using unit::zstd_compress;

struct Result {
  int rc = -1;
  std::string out;
  std::string err;
};

class DumpctlVerbsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ::setenv("TZ", "UTC", 1);
    ::tzset();
    ::unsetenv("SYSTEMD_DEBUGGER");
    std::string tmpl = (fs::temp_directory_path() / "dumpctl_verbs_test.XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    root_ = tmpl;
    store_ = root_ + "/store";
    fs::create_directory(store_);
    fs::create_directory(root_ + "/tmp");
    ::setenv("TMPDIR", (root_ + "/tmp").c_str(), 1);
    Index create(store_, true);
    // Four crashes, oldest first: prog1 (pid 101), cat (pid 102), prog1 again (pid 103), bash (pid 104).
    add(1, 10'000'000, "prog1", "/usr/bin/prog1", "foo.service", "core one");
    add(2, 20'000'000, "cat", "/usr/bin/cat", "user@1000.service", "core two");
    add(3, 30'000'000, "prog1", "/usr/bin/prog1", "foo.service", "core three");
    add(4, 40'000'000, "bash", "/usr/bin/bash", "user@1000.service", "core four");
    // A stand-in debugger: records its argv, one per line, and exits 7.
    debugger_ = root_ + "/debugger.sh";
    args_file_ = root_ + "/debugger.args";
    write_file(debugger_, "#!/bin/sh\nprintf '%s\\n' \"$@\" > '" + args_file_ + "'\nexit 7\n");
    ::chmod(debugger_.c_str(), 0755);
  }
  void TearDown() override {
    ::unsetenv("TMPDIR");
    ::unsetenv("SYSTEMD_DEBUGGER");
    fs::remove_all(root_);
  }

  void add(int n, std::int64_t ts, const std::string& comm, const std::string& exe, const std::string& unit,
           const std::string& core) {
    DumpRecord r;
    r.id = make_id(n);
    r.state = DumpState::Complete;
    r.timestamp_us = ts;
    r.pid = 100 + n;
    r.uid = r.euid = 1000 + n;
    r.gid = r.egid = 1000 + n;
    r.comm = comm;
    r.exe = exe;
    r.argv = {exe};
    r.signal = n % 2 ? SIGSEGV : SIGABRT;
    r.boot_id = "bootid";
    r.extra[extras::kContainer] = {{"unit", unit}, {"slice", "system.slice"}};
    const std::string z = zstd_compress(core, SIZE_MAX);
    r.core_size = core.size();
    r.stored_size = z.size();
    r.compression = "zstd";
    r.path = r.id + ".zst";
    write_file(store_ + "/" + r.path, z);
    Index(store_, true).insert(r);
  }

  Result run(std::vector<std::string> args) {
    std::ostringstream out, err;
    args.insert(args.begin(), {"dumpctl", "--store", store_});
    Result res;
    res.rc = dumpctl_main(args, Io{out, err, false});
    res.out = out.str();
    res.err = err.str();
    return res;
  }

  /// The PIDs in `list`'s JSON (--json=short), in order.
  std::vector<int> pids(std::vector<std::string> args) {
    args.insert(args.begin(), {"list", "--json=short"});
    const Result res = run(args);
    std::vector<int> v;
    if (res.rc != 0) return v;
    for (const auto& e : nlohmann::json::parse(res.out)) v.push_back(e["pid"].get<int>());
    return v;
  }

  std::vector<std::string> debugger_args() {
    std::vector<std::string> v;
    std::istringstream in(read_file(args_file_));
    for (std::string l; std::getline(in, l);) v.push_back(l);
    return v;
  }

  std::string root_, store_, debugger_, args_file_;
};

using Pids = std::vector<int>;

// ---- matches ----------------------------------------------------------------------------------

TEST_F(DumpctlVerbsTest, EveryMatchFormOnList) {
  EXPECT_EQ(pids({}), (Pids{101, 102, 103, 104}));
  EXPECT_EQ(pids({"102"}), (Pids{102}));                              // PID
  EXPECT_EQ(pids({"prog1"}), (Pids{101, 103}));                       // COMM
  EXPECT_EQ(pids({"/usr/bin/cat"}), (Pids{102}));                     // EXE
  EXPECT_EQ(pids({"COREDUMP_UNIT=foo.service"}), (Pids{101, 103}));   // FIELD=VALUE
  EXPECT_EQ(pids({"COREDUMP_SIGNAL_NAME=SIGABRT"}), (Pids{102, 104}));
  EXPECT_EQ(pids({"COREDUMP_UID=1003"}), (Pids{103}));
  EXPECT_EQ(pids({make_id(3)}), (Pids{103}));                         // our dump id
  EXPECT_EQ(pids({"00000004"}), (Pids{104}));                         // a unique id prefix
  // Several: the same field ORed, different fields ANDed (coredumpctl 252: `sleep cat` lists both,
  // `sleep 1002` nothing).
  EXPECT_EQ(pids({"prog1", "cat"}), (Pids{101, 102, 103}));
  EXPECT_EQ(pids({"prog1", "103"}), (Pids{103}));
  EXPECT_EQ(pids({"prog1", "COREDUMP_UNIT=foo.service", "101", "103"}), (Pids{101, 103}));
  EXPECT_EQ(run({"list", "prog1", "102"}).rc, 1);
}

TEST_F(DumpctlVerbsTest, RelativePathsAreMadeAbsoluteAndDeletedExecutablesMatch) {
  add(5, 50'000'000, "tool", root_ + "/bin/tool (deleted)", "foo.service", "core five");
  const fs::path cwd = fs::current_path();
  fs::current_path(root_);
  const Result rel = run({"list", "--json=short", "bin/tool"});
  const Result wrong = run({"list", "usr/bin/cat"});  // relative to root_: no such exe
  fs::current_path(cwd);
  ASSERT_EQ(rel.rc, 0) << rel.err;
  EXPECT_EQ(nlohmann::json::parse(rel.out).at(0)["pid"], 105);
  EXPECT_EQ(wrong.rc, 1);
  EXPECT_EQ(wrong.err, "No coredumps found.\n");
}

TEST_F(DumpctlVerbsTest, AHexCommWinsOverAnIdPrefixAndAnUnknownPidStaysAPid) {
  // A comm that is hex and also a unique prefix of dump 1's id.
  add(5, 50'000'000, "00000001dead", "/usr/bin/odd", "foo.service", "core five");
  EXPECT_EQ(pids({"00000001dead"}), (Pids{105}));  // coredumpctl reads it as COMM: so do we, when one matches
  EXPECT_EQ(pids({"00000002dead"}), (Pids{102}));  // no such comm: the id prefix
  EXPECT_EQ(pids({"00000003"}), (Pids{103}));      // digits: no such PID, so the id prefix
  EXPECT_EQ(run({"list", "9999"}).rc, 1);           // digits that are no PID and no id: a PID, no match
  const Result ambiguous = run({"list", "0000000"});  // every id starts so: say it, not "No coredumps found."
  EXPECT_EQ(ambiguous.rc, 1);
  EXPECT_NE(ambiguous.err.find("is ambiguous"), std::string::npos) << ambiguous.err;
}

TEST_F(DumpctlVerbsTest, UnknownFieldIsAnErrorNamingTheKnownOnes) {
  for (const auto& verb : {"list", "info", "dump", "debug"}) {
    const Result res = run({verb, "COREDUMP_NOPE=1"});
    EXPECT_EQ(res.rc, 1) << verb;
    EXPECT_NE(res.err.find("unknown field 'COREDUMP_NOPE'"), std::string::npos) << res.err;
    EXPECT_NE(res.err.find("COREDUMP_UNIT"), std::string::npos) << res.err;
    EXPECT_NE(res.err.find("COREDUMP_OWNER_UID"), std::string::npos) << res.err;
  }
}

// ---- -1, -n, -r, -S, -U ---------------------------------------------------------------------

TEST_F(DumpctlVerbsTest, RowsAndOrderAsCoredumpctl) {
  EXPECT_EQ(pids({"-r"}), (Pids{104, 103, 102, 101}));
  EXPECT_EQ(pids({"-n", "2"}), (Pids{101, 102}));        // coredumpctl 252: -n without -r, the oldest N
  EXPECT_EQ(pids({"-r", "-n", "2"}), (Pids{104, 103}));  // with -r, the newest N
  EXPECT_EQ(pids({"-1"}), (Pids{104}));
  EXPECT_EQ(pids({"-1", "-r"}), (Pids{104}));
  EXPECT_EQ(pids({"-1", "-n", "3"}), (Pids{104, 103, 102}));  // -1 implies -r
  EXPECT_EQ(pids({"-1", "prog1"}), (Pids{103}));
  EXPECT_EQ(pids({"-n", "1", "prog1"}), (Pids{101}));
  EXPECT_EQ(pids({"-r", "prog1", "cat"}), (Pids{103, 102, 101}));
  EXPECT_EQ(pids({"-S", "@20", "-U", "@30"}), (Pids{102, 103}));
  EXPECT_EQ(pids({"-S", "@20", "-r", "-n", "1"}), (Pids{104}));
  EXPECT_EQ(pids({"--since=@20", "-n", "1"}), (Pids{102}));
  // Options before the verb, as coredumpctl's getopt takes them.
  const Result before = run({"-r", "-n", "1", "--json=short", "list"});
  EXPECT_EQ(nlohmann::json::parse(before.out).at(0)["pid"], 104);

  const Result zero = run({"list", "-n", "0"});
  EXPECT_EQ(zero.rc, 1);
  EXPECT_EQ(zero.err, "dumpctl: Invalid numeric parameter to -n: 0\n");
  EXPECT_EQ(run({"list", "-n", "x"}).rc, 1);
  const Result inverted = run({"list", "-S", "@30", "-U", "@20"});
  EXPECT_EQ(inverted.rc, 1);
  EXPECT_EQ(inverted.err, "dumpctl: --since= must be before --until=.\n");
}

// ---- -F -----------------------------------------------------------------------------------------

TEST_F(DumpctlVerbsTest, FieldPrintsOneValuePerMatch) {
  EXPECT_EQ(run({"list", "-F", "COREDUMP_PID"}).out, "101\n102\n103\n104\n");
  EXPECT_EQ(run({"list", "--field=COREDUMP_UNIT", "-r", "prog1"}).out, "foo.service\nfoo.service\n");
  EXPECT_EQ(run({"list", "-F", "COREDUMP_SLICE", "-1"}).out, "system.slice\n");
  EXPECT_EQ(run({"info", "-F", "COREDUMP_COMM", "prog1"}).out, "prog1\nprog1\n");
  EXPECT_EQ(run({"-F", "COREDUMP_EXE", "-n", "1"}).out, "/usr/bin/prog1\n");  // no verb: list
  // Nothing matched: no output, no message, exit 0 (coredumpctl 252).
  const Result none = run({"list", "-F", "COREDUMP_PID", "nomatch"});
  EXPECT_EQ(none.rc, 0);
  EXPECT_EQ(none.out, "");
  EXPECT_EQ(none.err, "");
  // A record without the field prints nothing for it.
  EXPECT_EQ(run({"list", "-F", "COREDUMP_USER_UNIT"}).out, "");
  EXPECT_EQ(run({"list", "-F", "NOPE"}).rc, 1);
  for (const auto& verb : {"dump", "debug", "gdb"}) {
    const Result res = run({verb, "-F", "COREDUMP_PID"});
    EXPECT_EQ(res.rc, 1) << verb;
    EXPECT_EQ(res.err, "dumpctl: Option --field/-F only makes sense with list\n");
  }
}

// ---- exit codes and messages ----------------------------------------------------------------

TEST_F(DumpctlVerbsTest, ExitCodesAsCoredumpctl) {
  const Result list = run({"list", "nomatch"});
  EXPECT_EQ(list.rc, 1);
  EXPECT_EQ(list.out, "");
  EXPECT_EQ(list.err, "No coredumps found.\n");
  const Result quiet = run({"list", "-q", "nomatch"});
  EXPECT_EQ(quiet.rc, 1);
  EXPECT_EQ(quiet.err, "");
  const Result json = run({"list", "--json=short", "nomatch"});  // no "[]": coredumpctl prints nothing
  EXPECT_EQ(json.rc, 1);
  EXPECT_EQ(json.out, "");
  EXPECT_EQ(json.err, "No coredumps found.\n");
  const Result info = run({"info", "nomatch"});
  EXPECT_EQ(info.rc, 1);
  EXPECT_EQ(info.err, "No coredumps found.\n");
  EXPECT_EQ(run({"info", "--quiet", "nomatch"}).err, "");
  for (const auto& verb : {"dump", "debug"}) {
    for (const bool q : {false, true}) {
      std::vector<std::string> args{verb, "nomatch"};
      if (q) args.push_back("-q");  // -q does not silence it (log_error in coredumpctl's focus())
      const Result res = run(args);
      EXPECT_EQ(res.rc, 1) << verb;
      EXPECT_EQ(res.err, "dumpctl: No match found.\n") << verb;
    }
  }
  EXPECT_EQ(run({"list", "--bogus"}).rc, 1);
}

// ---- --json, --no-legend, --version -----------------------------------------------------------

TEST_F(DumpctlVerbsTest, JsonModes) {
  const Result shrt = run({"list", "--json=short"});
  ASSERT_EQ(shrt.rc, 0) << shrt.err;
  EXPECT_EQ(std::count(shrt.out.begin(), shrt.out.end(), '\n'), 1);
  EXPECT_EQ(nlohmann::json::parse(shrt.out).size(), 4U);
  const Result pretty = run({"list", "--json=pretty"});
  EXPECT_GT(std::count(pretty.out.begin(), pretty.out.end(), '\n'), 4);
  EXPECT_EQ(nlohmann::json::parse(pretty.out), nlohmann::json::parse(shrt.out));
  const Result off = run({"list", "--json=off"});
  EXPECT_EQ(off.out.rfind("TIME", 0), 0U) << off.out;
  // coredumpctl 252: "option '--json' requires an argument"; so here.
  EXPECT_EQ(run({"list", "--json"}).rc, 1);
  const Result bad = run({"list", "--json=long"});
  EXPECT_EQ(bad.rc, 1);
  EXPECT_NE(bad.err.find("want short, pretty or off"), std::string::npos);
  // info: one object per match.
  const Result info = run({"info", "--json=short", "prog1"});
  ASSERT_EQ(info.rc, 0) << info.err;
  std::istringstream lines(info.out);
  std::vector<std::string> ids;
  for (std::string l; std::getline(lines, l);) ids.push_back(nlohmann::json::parse(l)["id"]);
  EXPECT_EQ(ids, (std::vector<std::string>{make_id(1), make_id(3)}));
}

TEST_F(DumpctlVerbsTest, NoLegendDropsTheHeader) {
  const Result with = run({"list"});
  const Result without = run({"list", "--no-legend", "--no-pager"});
  EXPECT_EQ(with.out.rfind("TIME ", 0), 0U);
  EXPECT_EQ(without.out.find("TIME"), std::string::npos);
  EXPECT_EQ(std::count(without.out.begin(), without.out.end(), '\n'), 4);
  EXPECT_NE(without.out.find("/usr/bin/cat"), std::string::npos);
}

TEST(DumpctlTable, ColourIsNotCountedInWidths) {
  std::ostringstream out;
  print_table({{"A"}, {"B", true}}, {{"x", "1"}, {"yy", "22"}}, out,
              TableStyle{false, [](std::size_t row, std::size_t column) {
                           return row == 0 && column == 0 ? CellColour{"<r>", "</r>"} : CellColour{};
                         }});
  EXPECT_EQ(out.str(), "<r>x</r>   1\nyy 22\n");
}

TEST_F(DumpctlVerbsTest, VersionIsTheProjectVersion) {
  const Result v = run({"--version"});
  EXPECT_EQ(v.rc, 0);
  EXPECT_EQ(v.out, std::string("dumpctl (coredumpd) ") + COREDUMPD_TEST_VERSION + "\n");
}

// ---- info -----------------------------------------------------------------------------------

TEST_F(DumpctlVerbsTest, InfoPrintsEveryMatchOldestFirstWithABlankLineBetween) {
  const Result both = run({"info", "prog1"});
  ASSERT_EQ(both.rc, 0) << both.err;
  const std::size_t first = both.out.find(make_id(1));
  const std::size_t second = both.out.find(make_id(3));
  ASSERT_NE(first, std::string::npos);
  ASSERT_NE(second, std::string::npos);
  EXPECT_LT(first, second);
  EXPECT_NE(both.out.find("\n\n"), std::string::npos);
  EXPECT_EQ(both.out.find(make_id(2)), std::string::npos);
  // No match: the newest only (coredumpctl: "info" without a match implies -1).
  const Result newest = run({"info"});
  EXPECT_NE(newest.out.find(make_id(4)), std::string::npos);
  EXPECT_EQ(newest.out.find(make_id(3)), std::string::npos);
  // -r and -n apply.
  const Result rev = run({"info", "-r", "-n", "1", "prog1"});
  EXPECT_NE(rev.out.find(make_id(3)), std::string::npos);
  EXPECT_EQ(rev.out.find(make_id(1)), std::string::npos);
}

// ---- dump -----------------------------------------------------------------------------------

TEST_F(DumpctlVerbsTest, DumpTakesTheNewestMatchAndWithoutAMatchTheNewestDump) {
  const Result newest = run({"dump"});
  EXPECT_EQ(newest.rc, 0) << newest.err;
  EXPECT_EQ(newest.out, "core four");
  const Result prog1 = run({"dump", "prog1"});
  EXPECT_EQ(prog1.out, "core three");
  EXPECT_EQ(prog1.err, "dumpctl: More than one entry matches, ignoring rest.\n");
  EXPECT_EQ(run({"dump", "-q", "prog1"}).err, "");
  EXPECT_EQ(run({"dump", "cat", "COREDUMP_UID=1002"}).out, "core two");
  EXPECT_EQ(run({"dump", "-U", "@25"}).out, "core two");
  const std::string file = root_ + "/out.core";
  EXPECT_EQ(run({"-o", file, "dump", "101"}).rc, 0);
  EXPECT_EQ(read_file(file), "core one");
  EXPECT_EQ(run({"dump", "--output=" + file, "/usr/bin/cat"}).rc, 0);
  EXPECT_EQ(read_file(file), "core two");
}

// ---- debug ----------------------------------------------------------------------------------

TEST_F(DumpctlVerbsTest, DebugRunsTheChosenDebuggerWithShellSplitArguments) {
  const Result res = run({"debug", "--debugger", debugger_, "-A", "-x \"a b\" 'c d' e\\ f", "cat"});
  EXPECT_EQ(res.rc, 7);  // the debugger's exit status
  const auto args = debugger_args();
  ASSERT_EQ(args.size(), 7U) << res.err;
  EXPECT_EQ((std::vector<std::string>(args.begin(), args.begin() + 5)),
            (std::vector<std::string>{"-x", "a b", "c d", "e f", "/usr/bin/cat"}));
  EXPECT_EQ(args[5], "-c");
  EXPECT_EQ(args[6].rfind(root_ + "/tmp/", 0), 0U);  // a temporary copy of core two
  // coredumpctl prints the info of the dump first, then a blank line (not with -q).
  EXPECT_NE(res.out.find(make_id(2)), std::string::npos);
  EXPECT_TRUE(res.out.ends_with("\n\n")) << res.out;
  const Result quiet = run({"debug", "-q", "--debugger", debugger_, "cat"});
  EXPECT_EQ(quiet.out, "");
  EXPECT_EQ(quiet.rc, 7);

  EXPECT_EQ(run({"debug", "--debugger", debugger_, "-A", "unbalanced 'quote"}).rc, 1);
  const Result op = run({"debug", "--debugger", debugger_, "-A", "a | b"});
  EXPECT_EQ(op.rc, 1);
  EXPECT_NE(op.err.find("cannot split --debugger-arguments"), std::string::npos) << op.err;
}

TEST_F(DumpctlVerbsTest, SystemdDebuggerGdbAliasAndNewestWithoutAMatch) {
  ::setenv("SYSTEMD_DEBUGGER", debugger_.c_str(), 1);
  const Result res = run({"gdb", "-q"});  // the alias; no match: the newest dump
  EXPECT_EQ(res.rc, 7) << res.err;
  auto args = debugger_args();
  ASSERT_EQ(args.size(), 3U);
  EXPECT_EQ(args[0], "/usr/bin/bash");
  // --debugger wins over $SYSTEMD_DEBUGGER; arguments after -- follow -A's.
  ::setenv("SYSTEMD_DEBUGGER", "/nonexistent/debugger", 1);
  const Result both = run({"debug", "-q", "--debugger", debugger_, "-A", "-one", "102", "--", "-two"});
  EXPECT_EQ(both.rc, 7) << both.err;
  args = debugger_args();
  ASSERT_EQ(args.size(), 5U);
  EXPECT_EQ(args[0], "-one");
  EXPECT_EQ(args[1], "-two");
  EXPECT_EQ(args[2], "/usr/bin/cat");
  const Result missing = run({"debug", "-q"});
  EXPECT_EQ(missing.rc, 1);
  EXPECT_NE(missing.err.find("/nonexistent/debugger"), std::string::npos) << missing.err;
}

}  // namespace
}  // namespace coredumpd::cli
