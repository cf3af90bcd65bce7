// Integration tests of the crash's journal entry (issue 23 item 1): coredumpd under the fake kernel
// writes one entry per crash into a real systemd-journald, and journalctl (and, when available,
// systemd 252's own coredumpctl) reads it back. journald runs in a private mount namespace of this
// test (tmpfs over /run/systemd, /run/log and /var/log/journal), so the host's journal, if any, is
// never touched. Needs root; skipped without it or without /lib/systemd/systemd-journald.
#include <gtest/gtest.h>

#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/integration/fake_kernel_daemon_fixture.h"

using namespace coredumpd;
using namespace coredumpd::test;
using nlohmann::json;

namespace {

constexpr const char* kJournald = "/lib/systemd/systemd-journald";
constexpr const char* kMessageId = "fc2e22bc6ee647b6b90729ab34a250b1";
constexpr const char* kFakeSignature = "0123456789abcdef0123456789abcdef";  // analyzer_stand_in_ok's

/// Where Debian's systemd-coredump is unpacked (never installed: its sysctl.d file would take over
/// core_pattern), once, for later runs.
constexpr const char* kCoredumpctlCache = "/var/cache/coredumpd-tests/systemd-coredump";

/// systemd's own coredumpctl: $COREDUMPD_TEST_COREDUMPCTL, the installed one, or Debian's package
/// unpacked into kCoredumpctlCache (`apt-get download systemd-coredump`, `dpkg-deb -x`; it needs
/// the apt lists and the network once). "" and `why` when there is none.
std::string find_coredumpctl(std::string& why) {
  if (const char* env = std::getenv("COREDUMPD_TEST_COREDUMPCTL"); env && ::access(env, X_OK) == 0) return env;
  for (const char* p : {"/usr/bin/coredumpctl", "/bin/coredumpctl"})
    if (::access(p, X_OK) == 0) return p;
  const std::string cached = std::string(kCoredumpctlCache) + "/usr/bin/coredumpctl";
  if (::access(cached.c_str(), X_OK) == 0) return cached;
  const std::string tmp = std::string(kCoredumpctlCache) + ".tmp." + std::to_string(::getpid());
  std::filesystem::create_directories(tmp);
  const auto [dl, dl_out] = run_capture({"/bin/sh", "-c", "cd '" + tmp + "' && apt-get download systemd-coredump 2>&1 && "
                                          "dpkg-deb -x systemd-coredump_*.deb root 2>&1"}, 120s);
  std::error_code ec;
  if (dl.exit_code() == 0) std::filesystem::rename(tmp + "/root", kCoredumpctlCache, ec);  // a racing run may have won
  std::filesystem::remove_all(tmp, ec);
  if (::access(cached.c_str(), X_OK) == 0) return cached;
  why = "no coredumpctl, and Debian's systemd-coredump could not be unpacked (" + dl_out + ")";
  return "";
}

class Journal : public FakeKernelDaemon {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root: journald runs in a private mount namespace";
    if (::access(kJournald, X_OK) != 0) GTEST_SKIP() << kJournald << " is missing (package systemd)";
    // Our own mounts, invisible outside this process and its children.
    ASSERT_EQ(::unshare(CLONE_NEWNS), 0) << std::strerror(errno);
    ASSERT_EQ(::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr), 0) << std::strerror(errno);
    for (const char* dir : {"/run/systemd", "/run/log", "/var/log/journal"}) {
      ::mkdir(dir, 0755);  // /run/log and /var/log/journal exist on a systemd machine; /run/systemd too
      ASSERT_EQ(::mount("tmpfs", dir, "tmpfs", 0, "mode=0755"), 0) << dir << ": " << std::strerror(errno);
    }
    ::mkdir("/run/systemd/journal", 0755);
    journald_ = ::fork();
    ASSERT_GE(journald_, 0);
    if (journald_ == 0) {
      const int null = ::open("/dev/null", O_RDWR);
      ::dup2(null, 1);
      ::dup2(null, 2);
      ::execl(kJournald, kJournald, static_cast<char*>(nullptr));
      ::_exit(127);
    }
    ASSERT_TRUE(wait_until([] { return ::access("/run/systemd/journal/socket", F_OK) == 0; }, 10s))
        << "journald did not create its socket";
  }
  void TearDown() override {
    FakeKernelDaemon::TearDown();
    if (daemon_) daemon_->stop();
    if (journald_ > 0) {
      ::kill(journald_, SIGTERM);
      ::waitpid(journald_, nullptr, 0);
    }
  }

  /// What `journalctl -o json <matches>` prints, each entry a JSON object; by default the crash
  /// entries (MESSAGE_ID=...).
  std::vector<json> coredump_entries(const std::vector<std::string>& matches = {std::string("MESSAGE_ID=") + kMessageId}) {
    std::vector<std::string> argv{"/usr/bin/journalctl", "--no-pager", "-o", "json"};
    argv.insert(argv.end(), matches.begin(), matches.end());
    const auto [st, out] = run_capture(argv);
    std::vector<json> entries;
    std::size_t start = 0;
    for (std::size_t nl; (nl = out.find('\n', start)) != std::string::npos; start = nl + 1)
      if (auto j = json::parse(out.substr(start, nl - start), nullptr, false); j.is_object()) entries.push_back(j);
    return entries;
  }
  /// The entries of dump `id`, once there is one (bounded wait).
  std::vector<json> entries_of(const std::string& id, std::chrono::milliseconds timeout = 60s) {
    std::vector<json> found;
    wait_until(
        [&] {
          found.clear();
          for (auto& e : coredump_entries())
            if (e.value("COREDUMPD_ID", "") == id) found.push_back(e);
          return !found.empty();
        },
        timeout);
    return found;
  }
  /// One crash through the fake kernel; its final record.
  std::optional<DumpRecord> crash() {
    auto o = options();
    const auto res = fk::run(o);
    EXPECT_TRUE(fk::task_released(res)) << res.error;
    return only_record();
  }

  pid_t journald_ = -1;
};

TEST_F(Journal, AStoredCoreGetsOneEntryWithTheStackTraceAfterTheAnalysis) {
  start(std::string(R"({"analysis": {"analyzer": ")") + FAKE_ANALYZER_OK + R"("}})");
  const auto r = crash();
  ASSERT_TRUE(r);
  ASSERT_EQ(r->state, DumpState::Complete) << r->reason;
  auto entries = entries_of(r->id);
  ASSERT_EQ(entries.size(), 1u);
  const json& e = entries[0];
  // After the analysis: the entry has its signature and its frames.
  EXPECT_EQ(e.value("COREDUMPD_SIGNATURE", ""), kFakeSignature);
  const std::string message = e.value("MESSAGE", "");
  EXPECT_EQ(message.rfind("Process " + std::to_string(r->pid) + " (", 0), 0u) << message;
  EXPECT_NE(message.find(" dumped core.\n\n"), std::string::npos) << message;
  EXPECT_NE(message.find("fake_frame"), std::string::npos) << message;
  EXPECT_EQ(e.value("PRIORITY", ""), "2");
  EXPECT_EQ(e.value("COREDUMP_PID", ""), std::to_string(r->pid));
  EXPECT_EQ(e.value("COREDUMP_UID", ""), std::to_string(r->uid));
  EXPECT_EQ(e.value("COREDUMP_COMM", ""), r->comm);
  EXPECT_EQ(e.value("COREDUMP_TIMESTAMP", ""), std::to_string(r->timestamp_us));
  EXPECT_EQ(e.value("COREDUMPD_STATE", ""), "complete");
  EXPECT_EQ(e.value("OBJECT_PID", ""), std::to_string(r->pid));
  EXPECT_EQ(e.value("_UID", ""), "0");  // journalctl -u matches COREDUMP_UNIT only from root
  const std::string filename = e.value("COREDUMP_FILENAME", "");
  EXPECT_EQ(filename, std::filesystem::absolute(std::filesystem::path(store_) / r->path).lexically_normal().string());
  EXPECT_TRUE(std::filesystem::is_regular_file(filename));
  // journalctl -u UNIT shows it, when the crashing process was in a unit.
  if (const std::string unit = e.value("COREDUMP_UNIT", ""); !unit.empty()) {
    std::size_t shown = 0;
    for (const auto& u : coredump_entries({"-u", unit})) shown += u.value("COREDUMPD_ID", "") == r->id;
    EXPECT_EQ(shown, 1u) << unit;
  }
  // Still exactly one once the daemon stopped (a stop sends what waits, never twice).
  daemon_->stop();
  EXPECT_EQ(entries_of(r->id).size(), 1u);
}

TEST_F(Journal, AnalysisDisabledSendsTheEntryAtOnceWithoutStackTrace) {
  start(R"({"analysis": {"enabled": false}})");
  const auto r = crash();
  ASSERT_TRUE(r);
  const auto entries = entries_of(r->id);
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0].value("MESSAGE", ""), "Process " + std::to_string(r->pid) + " (" + r->comm + ") of user " +
                                                 std::to_string(r->uid) + " dumped core.");
  EXPECT_FALSE(entries[0].contains("COREDUMPD_SIGNATURE"));
}

TEST_F(Journal, NoCoreStoredIsLoggedAtFinalisation) {
  start(R"({"defaults": {"action": "metadata-only"}})");
  const auto r = crash();
  ASSERT_TRUE(r);
  ASSERT_EQ(r->state, DumpState::MetadataOnly);
  const auto entries = entries_of(r->id);
  ASSERT_EQ(entries.size(), 1u);
  const std::string message = entries[0].value("MESSAGE", "");
  EXPECT_NE(message.find(") of user " + std::to_string(r->uid) + " terminated abnormally without generating a coredump.\n\n"
                         "coredumpd: metadata_only"),
            std::string::npos)
      << message;
  EXPECT_FALSE(entries[0].contains("COREDUMP_FILENAME"));
  EXPECT_EQ(entries[0].value("COREDUMPD_STATE", ""), "metadata_only");
}

TEST_F(Journal, JournalDisabledWritesNothing) {
  start(R"({"journal": {"enabled": false}, "analysis": {"enabled": false}})");
  const auto r = crash();
  ASSERT_TRUE(r);
  daemon_->stop();  // whatever was queued is sent by now
  EXPECT_TRUE(coredump_entries().empty());
}

// systemd's own coredumpctl lists our crashes, shows them as present, and dumps a zstd core
// byte-identical to what the kernel sent.
TEST_F(Journal, SystemdCoredumpctlListsAndDumpsOurCores) {
  std::string why;
  const std::string coredumpctl = find_coredumpctl(why);
  if (coredumpctl.empty()) GTEST_SKIP() << why;
  for (const bool raw : {false, true}) {  // "<id>.zst" (zstd) and "<id>.core" (kept raw)
    SCOPED_TRACE(raw ? "raw core" : "zstd core");
    if (daemon_) daemon_->stop();
    start(R"({"analysis": {"enabled": false}})");
    std::vector<std::byte> core(raw ? 40 * kMebi : 4 * kMebi);  // the sampler needs 2 samples 16 MiB apart
    if (raw) fill_random(core, 0, core.size(), 23);
    else fill_text(core, 0, core.size());
    const auto r = dump_one(core);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->compression, raw ? "none" : "zstd");
    ASSERT_EQ(entries_of(r->id).size(), 1u);
    const std::string match = "COREDUMPD_ID=" + r->id;
    const auto [list_st, list] = run_capture({coredumpctl, "--no-pager", "--no-legend", "list", match});
    EXPECT_EQ(list_st.exit_code(), 0) << list;
    EXPECT_NE(list.find(" " + std::to_string(r->pid) + " "), std::string::npos) << list;
    EXPECT_NE(list.find("present"), std::string::npos) << list;
    // And the whole list: one entry coredumpctl cannot take (a missing COREDUMP_SIGNAL, say)
    // aborts it for every crash.
    const auto [all_st, all] = run_capture({coredumpctl, "--no-pager", "list"});
    EXPECT_EQ(all_st.exit_code(), 0) << all;
    const auto [info_st, info] = run_capture({coredumpctl, "--no-pager", "info", match});
    EXPECT_NE(info.find("Storage: " + (std::filesystem::path(store_) / r->path).string() + " (present)"), std::string::npos)
        << info;
    // coredumpctl 252 `dump` sends every file through decompress_stream(), which knows only .xz,
    // .lz4 and .zst ("Failed to decompress ...: Protocol not supported" for a raw file, its own
    // Compress=no cores too); `debug` hands a raw file to the debugger as it is.
    if (raw) continue;
    const std::string out = *dir_ / "systemd-dump";
    const auto [dump_st, dump_text] = run_capture({coredumpctl, "--no-pager", "dump", match, "-o", out});
    ASSERT_EQ(dump_st.exit_code(), 0) << dump_text;
    const auto theirs = read_file(out);
    ASSERT_TRUE(theirs);
    ASSERT_EQ(theirs->size(), core.size());
    EXPECT_TRUE(std::memcmp(theirs->data(), core.data(), core.size()) == 0);
  }
}

}  // namespace
