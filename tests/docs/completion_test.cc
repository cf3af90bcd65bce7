// dumpctl's shell completions (shell-completion/): their FIELD= names against the journal fields
// dumpctl knows (store/record_query.h), bash driven through COMP_WORDS/COMP_CWORD in a bash
// subprocess (static words, and ids/PIDs/COMMs from the real dumpctl on a real store), and zsh's
// file checked by `zsh -n` and completed in a zpty.
#include <gtest/gtest.h>

#include <cstdlib>

#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "store/index.h"
#include "store/record_query.h"
#include "tests/support/test_support.h"

namespace coredumpd {
namespace {

using test::ExitStatus;
using test::read_file;
using test::run_capture;

namespace fs = std::filesystem;

std::string file_text(const char* path) {
  auto text = read_file(path);
  EXPECT_TRUE(text) << path;
  return text.value_or("");
}

// The words of the first "NAME=(" ... ")" array in `text` after `opening`.
std::set<std::string> array_words(const std::string& text, const std::string& opening) {
  std::set<std::string> out;
  const auto begin = text.find(opening);
  if (begin == std::string::npos) return out;
  const auto end = text.find(')', begin);
  std::istringstream in(text.substr(begin + opening.size(), end - begin - opening.size()));
  for (std::string w; in >> w;) out.insert(w);
  return out;
}

std::set<std::string> bash_fields() { return array_words(file_text(BASH_COMPLETION), "__dumpctl_fields=("); }

// Field names a match may use: the string literals of the journal entry (daemon/journal), and the
// fields journald adds itself that coredumpctl users match on.
std::set<std::string> journal_field_names() {
  std::set<std::string> out{"_BOOT_ID", "_MACHINE_ID", "_HOSTNAME", "_UID", "_PID"};
  const std::string src = file_text(JOURNAL_FIELDS_CC);
  const std::regex literal("\"([A-Z_]{4,})\"");
  for (std::sregex_iterator it(src.begin(), src.end(), literal), end; it != end; ++it) out.insert((*it)[1]);
  return out;
}

std::string quoted(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// The completions bash offers for `words` (the last one being completed), one a line, sorted.
std::string bash_complete(const std::vector<std::string>& words) {
  std::string script = "source " + quoted(BASH_COMPLETION) + " || exit 9; COMP_WORDS=(";
  for (const auto& w : words) script += quoted(w) + " ";
  script += "); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _dumpctl; printf '%s\\n' \"${COMPREPLY[@]}\" | LC_ALL=C sort";
  const auto [status, out] = run_capture({"/bin/bash", "--norc", "-c", script}, std::chrono::seconds(30));
  EXPECT_TRUE(status.exited && status.exit_code() == 0) << script;
  return out;
}

bool have_zsh() { return std::string(ZSH_PROGRAM).find("NOTFOUND") == std::string::npos; }

// The line zsh shows after Tab on `line`, in an interactive zsh on a pseudo-terminal (zpty).
// compinit's index of completion functions: one per test run (made by the first call), so that it
// matches this tree's _dumpctl.
const std::string& zcompdump() {
  static const std::string path = [] {
    const std::string p = ::testing::TempDir() + "/completion_test." + std::to_string(::getpid()) + ".zcompdump";
    fs::remove(p);
    return p;
  }();
  return path;
}

std::string zsh_complete(const std::string& line) {
  const auto [status, out] = run_capture(
      {ZSH_PROGRAM, "-f", ZSH_DRIVER, fs::path(ZSH_COMPLETION).parent_path().string(), line, zcompdump()},
      std::chrono::seconds(60));
  EXPECT_TRUE(status.exited) << line;
  const std::string prefix = "COMPLETED: ";
  return out.rfind(prefix, 0) == 0 ? out.substr(prefix.size(), out.find('\n') - prefix.size()) : "(no line: " + out + ")";
}

bool has_line(const std::string& text, const std::string& line) {
  return ("\n" + text).find("\n" + line + "\n") != std::string::npos;
}

TEST(Completion, BashAndZshCompleteTheSameFields) {
  const auto bash = bash_fields();
  EXPECT_GT(bash.size(), 10U);
  EXPECT_EQ(bash, array_words(file_text(ZSH_COMPLETION), "local -a fields=("));
}

TEST(Completion, FieldsAreJournalFields) {
  const auto journal = journal_field_names();
  for (const auto& f : bash_fields()) EXPECT_TRUE(journal.count(f)) << f << " is not a journal field coredumpd writes";
}

// A field record_field() learns is offered too (the completion's list does not rot).
TEST(Completion, EveryKnownFieldIsCompleted) {
  const auto bash = bash_fields();
  for (const auto& f : journal_field_names()) {
    if (known_field(f)) {
      EXPECT_TRUE(bash.count(f)) << f << " is a known_field() the completions do not offer";
    }
  }
}

TEST(Completion, EveryCompletedFieldIsKnown) {
  if (!known_field("COREDUMP_CMDLINE"))
    GTEST_SKIP() << "record_field() does not know the cgroup-derived fields yet (helper cli-verbs completes it)";
  for (const auto& f : bash_fields()) EXPECT_TRUE(known_field(f)) << f << " is offered but dumpctl refuses it";
}

TEST(Completion, BashVerbsOptionsAndValues) {
  EXPECT_EQ(bash_complete({"dumpctl", "in"}), "info\n");
  EXPECT_EQ(bash_complete({"dumpctl", "-n", "3", "li"}), "list\n");
  EXPECT_EQ(bash_complete({"dumpctl", "--no-l"}), "--no-legend\n");
  EXPECT_EQ(bash_complete({"dumpctl", "list", "--json", "=", ""}), "off\npretty\nshort\n");
  EXPECT_EQ(bash_complete({"dumpctl", "-F", "COREDUMP_U"}), "COREDUMP_UID\nCOREDUMP_UNIT\nCOREDUMP_USER_UNIT\n");
  EXPECT_EQ(bash_complete({"dumpctl", "list", "COREDUMP_SIGNAL_N"}), "COREDUMP_SIGNAL_NAME=\n");
  EXPECT_EQ(bash_complete({"dumpctl", "vacuum", "--dr"}), "--dry-run\n");
  EXPECT_EQ(bash_complete({"dumpctl", "verify", "--dee"}), "--deep\n");
  EXPECT_EQ(bash_complete({"dumpctl", "info", "--e"}), "--extra\n");
  EXPECT_EQ(bash_complete({"dumpctl", "delete", "--a"}), "--all\n");
  EXPECT_TRUE(has_line(bash_complete({"dumpctl", "-S", "yes"}), "yesterday"));
  // After a verb, no other verb.
  EXPECT_FALSE(has_line(bash_complete({"dumpctl", "info", ""}), "list"));
  EXPECT_TRUE(has_line(bash_complete({"dumpctl", ""}), "gdb"));
}

// Ids, PIDs, COMMs and FIELD= values come from the real dumpctl (`-F FIELD`) reading a real store
// given by --store on the line being completed.
class CompletionStore : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "completion_test.XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    store_ = tmpl;
    Index index(store_, true);
    for (int n : {1, 2}) {
      DumpRecord r;
      r.id = std::string(n == 1 ? "a1" : "b2") + std::string(30, '0');
      r.state = DumpState::MetadataOnly;
      r.timestamp_us = 1'700'000'000'000'000 + n;
      r.pid = 4240 + n;
      r.uid = r.euid = r.gid = r.egid = 1000;
      r.comm = n == 1 ? "crashy" : "crunchy";
      r.exe = "/usr/bin/" + r.comm;
      r.signal = SIGSEGV;
      index.insert(r);
    }
  }
  void TearDown() override { fs::remove_all(store_); }
  std::string store_;
};

TEST_F(CompletionStore, BashMatchesFromTheStore) {
  const auto [status, pids] = run_capture({DUMPCTL, "--store", store_, "--no-pager", "-q", "-F", "COREDUMP_PID"});
  if (!status.exited || status.exit_code() != 0 || pids.find("4241") == std::string::npos)
    GTEST_SKIP() << "this dumpctl has no -F/--field yet (helper cli-verbs adds it): " << pids;
  EXPECT_EQ(bash_complete({DUMPCTL, "--store", store_, "info", "cr"}), "crashy\ncrunchy\n");
  EXPECT_EQ(bash_complete({DUMPCTL, "--store", store_, "dump", "424"}), "4241\n4242\n");
  EXPECT_EQ(bash_complete({DUMPCTL, "--store", store_, "debug", "b2"}), "b2" + std::string(30, '0') + "\n");
  EXPECT_EQ(bash_complete({DUMPCTL, "--store", store_, "list", "COREDUMP_COMM", "=", "crun"}), "crunchy\n");
  if (have_zsh()) {
    // zsh picks _dumpctl by the command's name, so the build's dumpctl is found through PATH.
    const std::string old_path = std::getenv("PATH") != nullptr ? std::getenv("PATH") : "/usr/bin:/bin";
    ::setenv("PATH", (fs::path(DUMPCTL).parent_path().string() + ":" + old_path).c_str(), 1);
    // A bare word completes to a COMM, a PID or an id (one candidate each, as bash), and the
    // FIELD=VALUE form to that field's values.
    const std::string line = "dumpctl --store " + store_;
    EXPECT_EQ(zsh_complete(line + " info crun"), line + " info crunchy");
    EXPECT_EQ(zsh_complete(line + " delete 4241"), line + " delete 4241");  // not "4241 4242"
    EXPECT_EQ(zsh_complete(line + " export b2"), line + " export b2" + std::string(30, '0'));
    EXPECT_EQ(zsh_complete("dumpctl --store " + store_ + " dump COREDUMP_COMM=crun"),
              "dumpctl --store " + store_ + " dump COREDUMP_COMM=crunchy");
    ::setenv("PATH", old_path.c_str(), 1);
  }
}

TEST(Completion, ZshCompletesInAPty) {
  if (!have_zsh()) GTEST_SKIP() << "zsh is not installed";
  EXPECT_EQ(zsh_complete("dumpctl vac"), "dumpctl vacuum");
  EXPECT_EQ(zsh_complete("dumpctl -n 3 inf"), "dumpctl -n 3 info");
  EXPECT_EQ(zsh_complete("dumpctl --json=pr"), "dumpctl --json=pretty");
  EXPECT_EQ(zsh_complete("dumpctl vacuum --dr"), "dumpctl vacuum --dry-run");
  EXPECT_EQ(zsh_complete("dumpctl delete --al"), "dumpctl delete --all");
  EXPECT_EQ(zsh_complete("dumpctl list COREDUMP_SIGNAL_N"), "dumpctl list COREDUMP_SIGNAL_NAME=");
  EXPECT_EQ(zsh_complete("dumpctl -F COREDUMP_USER_U"), "dumpctl -F COREDUMP_USER_UNIT");
}

TEST(Completion, FleetVerbsOnceThenTheUsersWords) {
  EXPECT_EQ(bash_complete({"dumpctl", "fle"}), "fleet\n");
  EXPECT_EQ(bash_complete({"dumpctl", "fleet", ""}), "crashes\nfetch\ntop\n");
  EXPECT_EQ(bash_complete({"dumpctl", "fleet", "--database", "host=/x", "cr"}), "crashes\n");
  EXPECT_EQ(bash_complete({"dumpctl", "fleet", "top", ""}), "\n");  // nothing more to offer
  EXPECT_EQ(bash_complete({"dumpctl", "fleet", "--dat"}), "--database\n");
  if (!have_zsh()) return;
  EXPECT_EQ(zsh_complete("dumpctl fleet cra"), "dumpctl fleet crashes");
  EXPECT_EQ(zsh_complete("dumpctl fleet --buc").rfind("dumpctl fleet --bucket", 0), 0u);
  EXPECT_EQ(zsh_complete("dumpctl fleet top cra"), "dumpctl fleet top cra");
}

TEST(Completion, ZshSyntax) {
  if (!have_zsh()) GTEST_SKIP() << "zsh is not installed";
  const auto [status, out] = run_capture({"/bin/sh", "-c", std::string(ZSH_PROGRAM) + " -n " ZSH_COMPLETION " 2>&1"});
  EXPECT_TRUE(status.exited && status.exit_code() == 0) << out;
}

}  // namespace
}  // namespace coredumpd
