// `dumpctl info` and `list --json` against systemd 252's coredumpctl on the same crashes: fixture
// records in a store, their journal entries (daemon/journal/journal_fields.h, exactly what the
// daemon logs) turned into a journal file by systemd-journal-remote, then both tools read them.
// The labels, their order and values, and the JSON keys coredumpctl has must agree; what we show
// differently on purpose is listed in docs/DUMPCTL.md ("info and JSON").
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "analysis/crash_report.h"
#include "daemon/journal/journal_fields.h"
#include "store/dump_record.h"
#include "store/index.h"
#include "tests/support/test_support.h"

namespace coredumpd {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using test::run_capture;

/// Where the unpacked tools are looked for: $COREDUMPD_TEST_SYSTEMD_ROOT, else /var/tmp/sdc.
std::string systemd_root() {
  const char* env = std::getenv("COREDUMPD_TEST_SYSTEMD_ROOT");
  return env && *env ? env : "/var/tmp/sdc";
}

constexpr const char* kHowToUnpack =
    "cd /var/tmp && apt-get download systemd-coredump systemd-journal-remote libmicrohttpd12 && "
    "for d in systemd-coredump_*.deb systemd-journal-remote_*.deb libmicrohttpd12_*.deb; do "
    "dpkg-deb -x $d /var/tmp/sdc; done  (or set COREDUMPD_TEST_SYSTEMD_ROOT to such a root)";

/// A field of the journal export format (systemd's JOURNAL_EXPORT_FORMATS): "NAME=value\n", or, for a
/// value holding a newline or other control bytes, "NAME\n" + 64-bit little-endian size + bytes + "\n".
void export_field(std::string& out, const std::string& field) {
  const std::size_t eq = field.find('=');
  const std::string name = field.substr(0, eq), value = field.substr(eq + 1);
  bool binary = false;
  for (const unsigned char c : value) binary |= c < 0x20 && c != '\t';
  if (!binary) {
    out += field + "\n";
    return;
  }
  out += name + "\n";
  std::uint64_t n = value.size();
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((n >> (8 * i)) & 0xFF));
  out += value + "\n";
}

std::string machine_id() {
  std::ifstream in("/etc/machine-id");
  std::string id;
  in >> id;
  return id;
}

/// "Label: value" lines of an `info` text (the label right-aligned in 14 columns, as coredumpctl
/// prints it), each continuation line (indented 16) appended to the value after a '\n', in order.
std::vector<std::pair<std::string, std::string>> info_fields(const std::string& text) {
  std::vector<std::pair<std::string, std::string>> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.size() >= 16 && line.compare(14, 2, ": ") == 0 && line[13] != ' ') {
      const std::size_t first = line.find_first_not_of(' ');
      out.emplace_back(line.substr(first, 14 - first), line.substr(16));
    } else if (!out.empty()) {
      out.back().second += "\n" + (line.size() > 16 ? line.substr(16) : std::string());
    }
  }
  return out;
}

class CoredumpctlCompare : public ::testing::Test {
 protected:
  void SetUp() override {
    coredumpctl_ = systemd_root() + "/usr/bin/coredumpctl";
    journal_remote_ = systemd_root() + "/lib/systemd/systemd-journal-remote";
    for (const auto& tool : {coredumpctl_, journal_remote_})
      if (::access(tool.c_str(), X_OK) != 0) GTEST_SKIP() << tool << " is missing; unpack Debian 12's tools with: " << kHowToUnpack;
    ::setenv("LD_LIBRARY_PATH", (systemd_root() + "/usr/lib/x86_64-linux-gnu").c_str(), 1);
    ::setenv("TZ", "UTC", 1);
    ::setenv("SYSTEMD_COLORS", "0", 1);
    std::string tmpl = (fs::temp_directory_path() / "coredumpctl_compare.XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    root_ = tmpl;
    store_ = root_ + "/store";
    fs::create_directory(store_);
    Index(store_, true);
  }
  void TearDown() override {
    if (!root_.empty()) fs::remove_all(root_);
  }

  /// A complete crash of pid `pid` by `uid`, its core file (any bytes: coredumpctl only stats it)
  /// in the store, a container object with the unit facts a session crash has.
  DumpRecord crash(int n, std::int64_t pid, std::int64_t uid) {
    DumpRecord r;
    r.id = std::string(30, '0') + (n < 10 ? "0" : "") + std::to_string(n);
    r.state = DumpState::Complete;
    r.timestamp_us = 1'764'900'000'000'000 + n * 1'000'000LL;
    r.pid = pid;
    r.uid = r.euid = uid;
    r.gid = r.egid = uid;
    r.comm = "crasher" + std::to_string(n);
    r.exe = "/usr/bin/crasher" + std::to_string(n);
    r.argv = {r.exe, "--flag", "x"};
    r.cwd = "/home";
    r.cgroup = "0::/user.slice/user-1000.slice/session-4.scope\n";
    r.hostname = "box";
    r.boot_id = "0123456789abcdef0123456789abcdef";
    r.signal = SIGSEGV;
    r.core_size = 5000;
    r.compression = "zstd";
    r.path = r.id + ".zst";
    std::ofstream(store_ + "/" + r.path) << std::string(1234, 'z');
    r.stored_size = 1234;
    r.extra["container"] = {{"key", "host"},
                            {"in_container", false},
                            {"unit", "session-4.scope"},
                            {"slice", "user-1000.slice"},
                            {"owner_uid", 1000},
                            {"cgroup_path", "/user.slice/user-1000.slice/session-4.scope"}};
    r.container_key = "host";
    return r;
  }

  /// Stores `records` and writes their journal entries into one journal file; returns its path.
  std::string store_and_journal(const std::vector<DumpRecord>& records) {
    std::string exported;
    Index index(store_, true);
    for (const auto& r : records) {
      index.insert(r);
      if (!r.analysis.is_null()) index.set_analysis(r.id, r.analysis, r.signature, r.signature_text);
      journal::EntryOptions o;
      o.store_dir = store_;
      o.core_present = !r.path.empty();
      exported += "__REALTIME_TIMESTAMP=" + std::to_string(r.timestamp_us) + "\n";
      exported += "__MONOTONIC_TIMESTAMP=" + std::to_string(r.timestamp_us / 2) + "\n";
      exported += "_BOOT_ID=" + r.boot_id + "\n";
      if (const std::string m = machine_id(); !m.empty()) exported += "_MACHINE_ID=" + m + "\n";
      for (const auto& f : journal::journal_fields(r, o)) export_field(exported, f);
      exported += "\n";
    }
    const std::string in = root_ + "/entries.export", journal = root_ + "/coredumps.journal";
    std::ofstream(in, std::ios::binary) << exported;
    const auto [st, out] = run_capture({"/bin/sh", "-c", "'" + journal_remote_ + "' -o '" + journal + "' - < '" + in + "'"}, 30s);
    EXPECT_EQ(st.exit_code(), 0) << out;
    return journal;
  }

  std::string coredumpctl(const std::string& journal, const std::vector<std::string>& args) {
    std::vector<std::string> argv{coredumpctl_, "--no-pager", "--file=" + journal};
    argv.insert(argv.end(), args.begin(), args.end());
    const auto [st, out] = run_capture(argv, 30s);
    EXPECT_EQ(st.exit_code(), 0) << out;
    return out;
  }

  std::string dumpctl(const std::vector<std::string>& args) {
    std::vector<std::string> argv{DUMPCTL_BIN, "--store", store_};
    argv.insert(argv.end(), args.begin(), args.end());
    const auto [st, out] = run_capture(argv, 30s);
    EXPECT_EQ(st.exit_code(), 0) << out;
    return out;
  }

  std::string coredumpctl_, journal_remote_, root_, store_;
};

analysis::CrashReport trace_report(const DumpRecord& r) {
  analysis::CrashReport rep;
  rep.state = "ok";
  analysis::Module exe;
  exe.path = r.exe;
  exe.build_id = "0123abcd0123abcd";
  exe.start = 0x400000;
  exe.end = 0x401000;
  exe.package = {{"name", "crasher"}, {"version", "1.2-3"}, {"type", "deb"}, {"architecture", "amd64"}};
  rep.modules.push_back(exe);
  analysis::Thread t;
  t.tid = r.pid;
  t.crashed = true;
  t.frames.push_back({0x400123, "crasher2", 0x123, "crash_here", 3, "", 0});
  t.frames.push_back({0x400456, "crasher2", 0x456, "main", 9, "", 0});
  rep.threads.push_back(t);
  rep.threads_total = 1;
  return rep;
}

// The same crashes, seen by both: every line coredumpctl prints, dumpctl prints with the same
// label, in the same order, at the head of its output, with the same value (the relative age
// aside, which moves while the tools run).
TEST_F(CoredumpctlCompare, InfoAgreesLineForLine) {
  DumpRecord root_crash = crash(1, 4242, 0);
  DumpRecord user_crash = crash(2, 4343, 65534);  // nobody/nogroup
  const auto rep = trace_report(user_crash);
  user_crash.analysis = analysis::to_json(rep);
  user_crash.signature = "0123456789abcdef0123456789abcdef";
  user_crash.signature_text = "SIGSEGV: crash_here | main";
  DumpRecord failed = crash(3, 4444, 0);
  failed.state = DumpState::Failed;
  failed.reason = "the disk is full";
  failed.path.clear();
  failed.compression.clear();
  failed.stored_size = 0;
  const std::string journal = store_and_journal({root_crash, user_crash, failed});

  for (const DumpRecord* r : {&root_crash, &user_crash, &failed}) {
    SCOPED_TRACE(r->comm);
    const auto theirs = info_fields(coredumpctl(journal, {"info", "COREDUMP_PID=" + std::to_string(r->pid)}));
    const auto ours = info_fields(dumpctl({"info", r->id}));
    // coredumpctl reads "build-id:" from COREDUMP_PACKAGE_JSON's "buildId" for the executable: our
    // entry writes it as systemd-coredump does, so the analysed crash shows it in both.
    const bool theirs_have_build_id =
        std::any_of(theirs.begin(), theirs.end(), [](const auto& f) { return f.first == "build-id"; });
    EXPECT_EQ(theirs_have_build_id, r == &user_crash) << "only the analysed crash has a build-id";
    ASSERT_GE(theirs.size(), 10U) << "coredumpctl printed too little";
    ASSERT_GE(ours.size(), theirs.size());
    for (std::size_t i = 0; i < theirs.size(); ++i) {
      const auto& [label, value] = theirs[i];
      EXPECT_EQ(ours[i].first, label) << "line " << i;
      if (label == "Timestamp") {  // "(19s ago)" moves between the two runs
        EXPECT_EQ(ours[i].second.substr(0, ours[i].second.find(" (")), value.substr(0, value.find(" (")));
        continue;
      }
      EXPECT_EQ(ours[i].second, value) << label;
    }
  }
}

// `list --json`: each of coredumpctl's keys is there with the same value and type.
TEST_F(CoredumpctlCompare, ListJsonKeysAgree) {
  DumpRecord a = crash(1, 4242, 0);
  DumpRecord b = crash(2, 4343, 65534);
  DumpRecord c = crash(3, 4444, 1000);
  c.state = DumpState::Failed;
  c.reason = "refused";
  c.path.clear();
  c.compression.clear();
  c.stored_size = 0;
  const std::string journal = store_and_journal({a, b, c});

  const auto theirs = nlohmann::json::parse(coredumpctl(journal, {"list", "--json=short"}));
  const auto ours = nlohmann::json::parse(dumpctl({"list", "--json=short"}));
  ASSERT_EQ(theirs.size(), 3U) << theirs;
  ASSERT_EQ(ours.size(), 3U) << ours;
  for (std::size_t i = 0; i < 3; ++i) {
    ASSERT_TRUE(theirs[i].is_object());
    for (const auto& [key, value] : theirs[i].items()) {
      ASSERT_TRUE(ours[i].contains(key)) << key;
      EXPECT_EQ(ours[i][key], value) << "entry " << i << " key " << key;
      EXPECT_EQ(ours[i][key].type_name(), std::string(value.type_name())) << key;
    }
  }
  // The listing leaves the /proc capture out: a few hundred bytes a dump, as coredumpctl's.
  EXPECT_LT(ours.dump().size(), 3 * 400U) << ours.dump();
}

}  // namespace
}  // namespace coredumpd
