// The .deb in a booted Debian (issue 23, "Tests"): what users of a packaged coredumpd see. One
// machine for the whole suite (tests/e2e/packaged_machine.h: debootstrapped bookworm with the
// .deb's Depends, `systemd-nspawn -b`, `dpkg -i`), three crashes in transient units made in
// SetUpTestSuite — root's, kMachineUser's, and kMachineUser's of a set-uid root program — and one
// case per thing a user looks at: the journal (MESSAGE_ID, COREDUMP_* fields, `journalctl -u`),
// systemd-coredump 252's own coredumpctl, `dumpctl` as the unprivileged user (their dump only, the
// others refused), `dumpctl status`, and the package's socket units.
//
// Registered as one ctest test (all cases in one process, one boot); it skips, saying why, only
// without root or the kernel's socket mode, or without network for the first debootstrap.
#include <signal.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tests/e2e/packaged_machine.h"
#include "tests/e2e/real_kernel_fixture.h"

using namespace coredumpd;
using namespace coredumpd::test;
namespace fs = std::filesystem;

namespace {

// systemd-coredump's MESSAGE_ID for "Process ... dumped core" (sd-messages.h SD_MESSAGE_COREDUMP).
constexpr const char* kCoredumpMessageId = "fc2e22bc6ee647b6b90729ab34a250b1";

class PackagedMachineTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    machine_ = std::make_unique<PackagedMachine>();
    std::optional<MachineProblem> problem;
    try {
      problem = machine_->setup();
    } catch (const std::exception& e) {
      problem = MachineProblem{false, std::string("setting up the machine: ") + e.what()};
    }
    if (auto& p = problem) {
      if (p->skip && !real_kernel_required()) {
        skip_ = p->why;
        std::fprintf(stderr, "SKIPPED nspawn package test: %s\n", skip_.c_str());
      } else {
        error_ = p->why + "\nmachine log:\n" + tail_lines(machine_->log(), 40);
      }
      machine_.reset();
      return;
    }
    try {
      root_ = machine_->crash(1, "/opt/cd-programs/crasher");
      user_ = machine_->crash(2, "/opt/cd-programs/crasher", kMachineUser);
      setuid_ = machine_->crash_setuid(3);
    } catch (const std::exception& e) {
      error_ = std::string("crashing in the machine: ") + e.what();
    }
  }

  static void TearDownTestSuite() { machine_.reset(); }

  void SetUp() override {
    if (!skip_.empty()) GTEST_SKIP() << skip_;
    if (!error_.empty()) GTEST_FAIL() << error_;
  }

  void TearDown() override {
    if (HasFailure() && machine_) {
      const auto [st, j] = machine_->run_as("", {"journalctl", "--no-pager", "-n", "60", "-u", "coredumpd.socket", "-u",
                                                 "coredumpd.service", "-u", "coredumpd-query.socket"});
      std::fprintf(stderr, "machine journal (coredumpd units):\n%s\n", j.c_str());
    }
  }

  // `journalctl ARGS -o json` in the machine: its entries, one JSON object each.
  static std::vector<nlohmann::json> journal(std::vector<std::string> args) {
    std::vector<std::string> argv{"journalctl", "--no-pager", "-o", "json"};
    argv.insert(argv.end(), args.begin(), args.end());
    const auto [st, out] = machine_->machine().run(argv, 60s);
    std::vector<nlohmann::json> entries;
    std::stringstream in(out);
    for (std::string line; std::getline(in, line);)
      if (!line.empty()) entries.push_back(nlohmann::json::parse(line, nullptr, false));
    return entries;
  }

  // The entries with MESSAGE_ID=kCoredumpMessageId for `pid` (polled: the daemon writes them after
  // the store, bounded 30 s).
  static std::vector<nlohmann::json> coredump_entries_of(std::int64_t pid) {
    std::vector<nlohmann::json> found;
    wait_until(
        [&] {
          found.clear();
          for (auto& e : journal({std::string("MESSAGE_ID=") + kCoredumpMessageId}))
            if (e.is_object() && e.value("COREDUMP_PID", std::string()) == std::to_string(pid)) found.push_back(e);
          return !found.empty();
        },
        30s);
    return found;
  }

  static std::string field(const nlohmann::json& e, const char* name) {
    return e.contains(name) && e[name].is_string() ? e[name].get<std::string>() : std::string("(absent)");
  }

  // The ids `dumpctl list --json` shows `user`; empty on failure (recorded).
  static std::vector<std::string> dumpctl_ids(const std::string& user) {
    const auto [st, out] = machine_->run_as(user, {"dumpctl", "list", "--json=pretty"});
    EXPECT_EQ(st.exit_code(), 0) << "dumpctl list --json as " << user << ":\n" << out;
    const auto j = nlohmann::json::parse(out, nullptr, false);
    std::vector<std::string> ids;
    if (!j.is_array()) return ids;
    for (const auto& r : j)
      if (r.is_object() && r.contains("id")) ids.push_back(r["id"].get<std::string>());
    return ids;
  }

  // Expects the file at `inside` (a machine path) to be an ELF core of `rec.core_size` bytes.
  static void expect_core_file(const std::string& inside, const DumpRecord& rec) {
    const std::string host = machine_->machine().host_path(inside);
    ASSERT_TRUE(fs::exists(host)) << inside;
    EXPECT_EQ(fs::file_size(host), rec.core_size) << inside;
    const auto core = inspect_core(host);
    EXPECT_TRUE(core.is_core) << inside << " is not an ELF core";
    EXPECT_EQ(core.prstatus_signal, SIGSEGV);
  }

  static inline std::unique_ptr<PackagedMachine> machine_;
  static inline std::string skip_, error_;
  static inline MachineCrash root_, user_, setuid_;
};

TEST_F(PackagedMachineTest, EveryCrashIsStored) {
  using Expected = std::pair<const MachineCrash*, const char*>;  // a crash and its comm
  for (const auto& [c, comm] : {Expected{&root_, "crasher"}, Expected{&user_, "crasher"}, Expected{&setuid_, "crasher-suid"}}) {
    ASSERT_TRUE(c->record) << c->unit << " (pid " << c->pid << "): no record in the machine's store";
    EXPECT_EQ(c->record->comm, comm);
    EXPECT_EQ(c->record->signal, SIGSEGV);
    EXPECT_EQ(c->record->state, DumpState::Complete) << c->unit << ": " << c->record->reason;
  }
  EXPECT_EQ(setuid_.record->uid, user_.record->uid) << "both ran as " << kMachineUser;
  EXPECT_NE(user_.record->uid, 0);
  EXPECT_EQ(setuid_.record->euid, 0) << "the set-uid program ran with euid 0";
}

TEST_F(PackagedMachineTest, JournalHasOneEntryWithSystemdCoredumpsFields) {
  ASSERT_TRUE(root_.record);
  const auto entries = coredump_entries_of(root_.pid);
  ASSERT_EQ(entries.size(), 1u) << "entries with MESSAGE_ID=" << kCoredumpMessageId << " and COREDUMP_PID=" << root_.pid;
  const auto& e = entries[0];
  const auto& r = *root_.record;
  EXPECT_EQ(field(e, "COREDUMP_UID"), "0");
  EXPECT_EQ(field(e, "COREDUMP_GID"), "0");
  EXPECT_EQ(field(e, "COREDUMP_SIGNAL"), std::to_string(SIGSEGV));
  EXPECT_EQ(field(e, "COREDUMP_SIGNAL_NAME"), "SIGSEGV");
  EXPECT_EQ(field(e, "COREDUMP_COMM"), "crasher");
  EXPECT_EQ(field(e, "COREDUMP_EXE"), "/opt/cd-programs/crasher");
  EXPECT_EQ(field(e, "COREDUMP_CMDLINE"), "/opt/cd-programs/crasher --mode segv");
  EXPECT_EQ(field(e, "COREDUMP_UNIT"), root_.unit);
  EXPECT_EQ(field(e, "COREDUMP_SLICE"), "system.slice");
  EXPECT_TRUE(field(e, "COREDUMP_CGROUP").ends_with("/system.slice/" + root_.unit)) << field(e, "COREDUMP_CGROUP");
  const auto hostname = machine_->machine().run({"cat", "/proc/sys/kernel/hostname"}, 10s).second;
  EXPECT_EQ(field(e, "COREDUMP_HOSTNAME") + "\n", hostname);
  EXPECT_NE(field(e, "COREDUMP_TIMESTAMP"), "(absent)");
  EXPECT_EQ(field(e, "COREDUMPD_ID"), r.id);
  EXPECT_NE(field(e, "MESSAGE").find("dumped core"), std::string::npos) << field(e, "MESSAGE");

  const auto users = coredump_entries_of(user_.pid);
  ASSERT_EQ(users.size(), 1u) << "the user's crash";
  EXPECT_EQ(field(users[0], "COREDUMP_UID"), std::to_string(user_.record ? user_.record->uid : -1));
  EXPECT_EQ(field(users[0], "COREDUMP_UNIT"), user_.unit);
}

TEST_F(PackagedMachineTest, JournalctlOfTheUnitShowsTheCrash) {
  ASSERT_TRUE(root_.record);
  coredump_entries_of(root_.pid);  // waits for the entry
  bool shown = false;
  for (const auto& e : journal({"-u", root_.unit}))
    shown |= e.is_object() && field(e, "MESSAGE_ID") == kCoredumpMessageId && field(e, "COREDUMP_PID") == std::to_string(root_.pid);
  EXPECT_TRUE(shown) << "journalctl -u " << root_.unit << " does not show the coredump entry";
}

TEST_F(PackagedMachineTest, SystemdCoredumpctlListsAndDumpsIt) {
  ASSERT_TRUE(root_.record);
  coredump_entries_of(root_.pid);
  const auto [lst, list] = machine_->run_as("", {PackagedMachine::kCoredumpctl, "--no-pager", "--json=short", "list"});
  ASSERT_EQ(lst.exit_code(), 0) << list;
  const auto j = nlohmann::json::parse(list, nullptr, false);
  bool listed = false;
  if (j.is_array())
    for (const auto& d : j) listed |= d.is_object() && d.value("pid", std::int64_t{0}) == root_.pid;
  EXPECT_TRUE(listed) << "coredumpctl list:\n" << list;

  const std::string out = "/root/coredumpctl.core";
  const auto [dst, dtext] =
      machine_->run_as("", {PackagedMachine::kCoredumpctl, "--no-pager", "dump", std::to_string(root_.pid), "-o", out});
  ASSERT_EQ(dst.exit_code(), 0) << dtext;
  expect_core_file(out, *root_.record);
}

TEST_F(PackagedMachineTest, UserListsOnlyTheirOwnCrashes) {
  ASSERT_TRUE(root_.record && user_.record && setuid_.record);
  const auto ids = dumpctl_ids(kMachineUser);
  const auto has = [&](const std::string& id) { return std::find(ids.begin(), ids.end(), id) != ids.end(); };
  EXPECT_TRUE(has(user_.record->id)) << "their own crash";
  EXPECT_FALSE(has(root_.record->id)) << "root's crash";
  EXPECT_FALSE(has(setuid_.record->id)) << "the set-uid program's crash";
  const auto all = dumpctl_ids("");
  EXPECT_GE(all.size(), 3u) << "root sees every dump";
}

TEST_F(PackagedMachineTest, UserDumpsTheirOwnCore) {
  ASSERT_TRUE(user_.record);
  const std::string out = std::string("/home/") + kMachineUser + "/own.core";
  const auto [st, text] = machine_->run_as(kMachineUser, {"dumpctl", "dump", user_.record->id, "-o", out});
  ASSERT_EQ(st.exit_code(), 0) << text;
  expect_core_file(out, *user_.record);
}

TEST_F(PackagedMachineTest, UserIsRefusedRootsAndSetuidCores) {
  ASSERT_TRUE(root_.record && setuid_.record);
  for (const auto* c : {&root_, &setuid_}) {
    const std::string out = std::string("/home/") + kMachineUser + "/other-" + c->record->id + ".core";
    const auto [st, text] = machine_->run_as(kMachineUser, {"dumpctl", "dump", c->record->id, "-o", out});
    EXPECT_NE(st.exit_code(), 0) << c->unit << ": " << text;
    EXPECT_FALSE(fs::exists(machine_->machine().host_path(out)) && fs::file_size(machine_->machine().host_path(out)) > 0)
        << c->unit << ": core bytes were written";
  }
}

TEST_F(PackagedMachineTest, DumpctlStatusReportsTheDaemonRunning) {
  // The exit status is not asserted: seen from the machine, the (global) pattern names the host's
  // path of its socket, not /run/coredumpd/coredump.socket, and status rightly warns about that.
  for (const char* user : {"", kMachineUser}) {
    const char* who = *user ? user : "root";
    const auto [st, text] = machine_->run_as(user, {"dumpctl", "status", "--json"});
    const auto j = nlohmann::json::parse(text.substr(0, text.rfind('}') + 1), nullptr, false);
    ASSERT_TRUE(j.is_object()) << "dumpctl status --json as " << who << ":\n" << text;
    // value(json_pointer, default): the default when a level is missing (a daemon not running
    // has no "status"), where operator[] on a const json would abort.
    const auto at = [&j](const char* pointer) { return j.value(nlohmann::json::json_pointer(pointer), nlohmann::json()); };
    EXPECT_EQ(at("/daemon/running"), true) << who << ": " << at("/daemon").dump();
    EXPECT_EQ(at("/daemon/status/activation"), "socket") << who;
    EXPECT_EQ(at("/daemon/status/journal_enabled"), true) << who;
    EXPECT_EQ(at("/core_pattern/kernel_socket"), "/run/coredumpd/coredump.socket") << who;
    EXPECT_EQ(at("/core_pattern/socket_listening"), true) << who;
    EXPECT_EQ(at("/kernel/socket_mode"), true) << who;
  }
  const auto [st, text] = machine_->run_as("", {"dumpctl", "status"});
  EXPECT_NE(text.find("running (pid"), std::string::npos) << text;
}

TEST_F(PackagedMachineTest, SocketUnitsAreActiveAndEarly) {
  const auto& m = machine_->machine();
  EXPECT_EQ(m.unit_state("coredumpd.socket"), "active");
  EXPECT_EQ(m.unit_state("coredumpd.service"), "active") << "the crashes started it";
  EXPECT_EQ(m.unit_state("coredumpd-query.socket"), "active");
  const auto show = [&](const std::string& unit, const std::string& prop) {
    return m.run({"systemctl", "show", "-P", prop, unit}, 30s).second;
  };
  // Early: no default dependencies, so both sockets listen before sockets.target, ahead of any
  // service that could crash; the kernel socket's ExecStartPost= installs the pattern once it
  // listens, after systemd-sysctl (which would otherwise overwrite it). In the machine /proc/sys is
  // read-only: that step cannot write, and the socket must be active nonetheless (above).
  for (const char* unit : {"coredumpd.socket", "coredumpd-query.socket"}) {
    EXPECT_EQ(show(unit, "DefaultDependencies"), "no\n") << unit;
    EXPECT_NE(show(unit, "Before").find("sockets.target"), std::string::npos) << unit << ": " << show(unit, "Before");
  }
  EXPECT_NE(show("coredumpd.socket", "After").find("systemd-sysctl.service"), std::string::npos)
      << show("coredumpd.socket", "After");
  EXPECT_NE(show("coredumpd-query.socket", "Listen").find("/run/coredumpd-query.socket"), std::string::npos)
      << show("coredumpd-query.socket", "Listen");
}

}  // namespace
