// dumpctl next to systemd 252's coredumpctl on the same crashes: four records go into a store (for
// dumpctl) and, as the journal entries coredumpd writes for them (journal_fields()), into a journal
// file (for coredumpctl --file=). The same arguments must select the same crashes (compared with
// -F COREDUMP_PID, which both print alike) and give the same exit codes.
// Needs Debian's systemd-coredump and systemd-journal-remote 252 unpacked (the brief's
// `dpkg-deb -x ... /var/tmp/sdc`, plus libmicrohttpd12 for journal-remote); $COREDUMPCTL_252_ROOT
// points elsewhere. Skipped, saying so, without them.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "cli/dumpctl.h"
#include "daemon/journal/journal_fields.h"
#include "store/index.h"
#include "store/record_extras.h"
#include "tests/unit/store_test_files.h"

namespace coredumpd::cli {
namespace {

namespace fs = std::filesystem;

struct Result {
  int rc = -1;
  std::string out;
  std::string err;
};

/// Runs `command` with /bin/sh, standard error into `err_file`; its standard output and exit code.
Result sh(const std::string& command, const std::string& err_file) {
  Result res;
  FILE* p = ::popen((command + " 2>'" + err_file + "'").c_str(), "r");
  if (p == nullptr) return res;
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) res.out.append(buf, n);
  const int st = ::pclose(p);
  res.rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  res.err = unit::read_file(err_file);
  return res;
}

std::string quote(const std::string& s) {
  std::string q = "'";
  for (const char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

class CoredumpctlComparison : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* env = std::getenv("COREDUMPCTL_252_ROOT");
    sdc_ = env != nullptr ? env : "/var/tmp/sdc";
    coredumpctl_ = sdc_ + "/usr/bin/coredumpctl";
    const std::string remote = sdc_ + "/lib/systemd/systemd-journal-remote";
    if (!fs::exists(coredumpctl_) || !fs::exists(remote))
      GTEST_SKIP() << "no coredumpctl 252 under " << sdc_ << " (unpack systemd-coredump and systemd-journal-remote there)";
    ::setenv("TZ", "UTC", 1);
    ::tzset();
    std::string tmpl = (fs::temp_directory_path() / "dumpctl_coredumpctl.XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    root_ = tmpl;
    store_ = root_ + "/store";
    fs::create_directory(store_);
    Index create(store_, true);
    std::string export_text;
    const char* comms[] = {"prog1", "cat", "prog1", "bash"};
    const char* units[] = {"foo.service", "user@1000.service", "foo.service", "user@1000.service"};
    for (int n = 1; n <= 4; ++n) {
      DumpRecord r;
      r.id = unit::make_id(n);
      r.state = DumpState::MetadataOnly;
      r.timestamp_us = 1'700'000'000'000'000 + std::int64_t{n} * 1'000'000;
      r.pid = 100 + n;
      r.uid = r.euid = r.gid = r.egid = 1000 + n;
      r.comm = comms[n - 1];
      r.exe = std::string("/usr/bin/") + comms[n - 1];
      r.argv = {r.exe};
      r.signal = n % 2 ? SIGSEGV : SIGABRT;
      r.boot_id = "0123456789abcdef0123456789abcdef";
      r.extra[extras::kContainer] = {{"unit", units[n - 1]}};
      Index(store_, true).insert(r);
      // The journal export format (systemd's JOURNAL_EXPORT_FORMATS): text fields as NAME=value.
      export_text += "__REALTIME_TIMESTAMP=" + std::to_string(r.timestamp_us) + "\n__MONOTONIC_TIMESTAMP=" +
                     std::to_string(n) + "\n_BOOT_ID=" + r.boot_id + "\n";
      for (const auto& f : journal::journal_fields(r, {})) {
        if (f.find('\n') == std::string::npos) {
          export_text += f + "\n";
          continue;
        }
        // A value with newlines: NAME, a newline, its size as 64-bit little endian, the bytes, a newline.
        const std::size_t eq = f.find('=');
        const std::string value = f.substr(eq + 1);
        export_text += f.substr(0, eq) + "\n";
        for (int i = 0; i < 8; ++i) export_text.push_back(static_cast<char>((value.size() >> (8 * i)) & 0xFFU));
        export_text += value + "\n";
      }
      export_text += "\n";
    }
    unit::write_file(root_ + "/crashes.export", export_text);
    journal_ = root_ + "/crashes.journal";
    const Result made = sh("LD_LIBRARY_PATH=" + quote(sdc_ + "/usr/lib/x86_64-linux-gnu") + " " + quote(remote) +
                               " -o " + quote(journal_) + " - < " + quote(root_ + "/crashes.export"),
                           root_ + "/remote.err");
    ASSERT_EQ(made.rc, 0) << made.err;
  }
  void TearDown() override {
    if (!root_.empty()) fs::remove_all(root_);
  }

  Result coredumpctl(const std::vector<std::string>& args) {
    std::string cmd = quote(coredumpctl_) + " --no-pager --file=" + quote(journal_);
    for (const auto& a : args) cmd += " " + quote(a);
    return sh(cmd, root_ + "/coredumpctl.err");
  }
  Result dumpctl(std::vector<std::string> args) {
    std::ostringstream out, err;
    args.insert(args.begin(), {"dumpctl", "--store", store_, "--no-pager"});
    Result res;
    res.rc = dumpctl_main(args, Io{out, err, false});
    res.out = out.str();
    res.err = err.str();
    return res;
  }

  std::string sdc_, coredumpctl_, root_, store_, journal_;
};

TEST_F(CoredumpctlComparison, TheSameArgumentsSelectTheSameCrashes) {
  const std::vector<std::vector<std::string>> cases{
      {},
      {"-r"},
      {"-n", "2"},
      {"-r", "-n", "2"},
      {"-1"},
      {"-1", "-n", "3"},
      {"prog1"},
      {"prog1", "cat"},
      {"prog1", "103"},
      {"prog1", "102"},
      {"/usr/bin/cat"},
      {"102"},
      {"COREDUMP_UNIT=foo.service"},
      {"COREDUMP_UNIT=foo.service", "COREDUMP_UNIT=user@1000.service", "bash"},
      {"COREDUMP_SIGNAL=6"},
      {"-S", "@1700000002", "-U", "@1700000003"},
      {"-r", "-S", "@1700000002"},
      {"-r", "prog1", "cat"},
      {"nomatch"},
  };
  for (const std::string verb : {"list", "info"}) {
    for (const auto& c : cases) {
      // coredumpctl's info without a match is its focus(), which ignores -S/-U: we keep them.
      if (verb == "info" && c.size() == 4 && c[0] == "-S") continue;
      std::vector<std::string> args{verb, "-F", "COREDUMP_PID"};
      args.insert(args.end(), c.begin(), c.end());
      const Result theirs = coredumpctl(args);
      const Result ours = dumpctl(args);
      std::string shown;
      for (const auto& a : args) shown += a + " ";
      EXPECT_EQ(ours.out, theirs.out) << shown << "\n" << theirs.err;
      EXPECT_EQ(ours.rc, theirs.rc) << shown << "\n" << ours.err;
    }
  }
}

TEST_F(CoredumpctlComparison, ExitCodesAndMessagesWhenNothingMatches) {
  for (const auto& args : {std::vector<std::string>{"list", "nomatch"},
                                              {"list", "-q", "nomatch"},
                                              {"info", "nomatch"},
                                              {"list", "--json=short", "nomatch"},
                                              {"dump", "nomatch"},
                                              {"dump", "-q", "nomatch"},
                                              {"dump", "-F", "COREDUMP_PID"},
                                              {"list", "-n", "0"},
                                              {"list", "--json"},
                                              {"list", "-S", "@1700000003", "-U", "@1700000001"}}) {
    const Result theirs = coredumpctl(args);
    const Result ours = dumpctl(args);
    std::string shown;
    for (const auto& a : args) shown += a + " ";
    EXPECT_EQ(ours.rc, theirs.rc) << shown;
    EXPECT_EQ(ours.out, theirs.out) << shown;
    // Theirs is printed bare; ours "dumpctl: " before errors (not before "No coredumps found.").
    if (theirs.err.empty()) {
      EXPECT_EQ(ours.err, "") << shown;
    } else if (theirs.err.find("requires an argument") == std::string::npos) {
      EXPECT_NE(ours.err.find(theirs.err.substr(0, theirs.err.find('\n'))), std::string::npos)
          << shown << "\ntheirs: " << theirs.err << "ours: " << ours.err;
    }
  }
}

}  // namespace
}  // namespace coredumpd::cli
