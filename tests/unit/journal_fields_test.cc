// Unit tests of a crash's journal entry (daemon/journal/journal_fields.h): every field systemd-coredump
// 252 writes that the record holds, ours, MESSAGE with and without a core or an analysis, hostile
// bytes (newlines, invalid UTF-8) and the caps that keep a hostile process from blowing it up.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/crash_report.h"
#include "analysis/report_text.h"
#include "daemon/journal/journal_fields.h"
#include "daemon/policy/container_info.h"
#include "store/record_extras.h"
#include "tests/unit/crash_record_fixture.h"
#include "util/text.h"

namespace coredumpd::journal {
namespace {

using nlohmann::json;

analysis::CrashReport ok_report() {
  analysis::CrashReport rep;
  rep.state = "ok";
  rep.signature = "0123456789abcdef0123456789abcdef";
  rep.signature_text = "SIGSEGV: crash_here | main";
  analysis::Module exe;
  exe.path = "/usr/bin/prog1";
  exe.build_id = "0123abcd";
  exe.package = {{"type", "deb"}, {"name", "prog"}, {"version", "1.2-3"}, {"architecture", "amd64"}};
  analysis::Module libc;
  libc.path = "/usr/lib/x86_64-linux-gnu/libc.so.6";
  libc.package = {{"type", "deb"}, {"name", "libc6"}, {"version", "2.36-9"}};
  analysis::Module plain;
  plain.path = "/opt/plain.so";
  plain.build_id = "abcd";
  rep.modules = {exe, libc, plain};
  analysis::Thread t;
  t.tid = 4242;
  t.crashed = true;
  analysis::Frame f;
  f.pc = 0x555555555189;
  f.function = "crash_here";
  f.module = "prog1";
  f.module_offset = 0x1189;
  t.frames = {f};
  rep.threads = {t};
  rep.threads_total = 1;
  return rep;
}

// A stored, analysed crash of a system service, with every capture coredumpd makes.
DumpRecord full_record() {
  DumpRecord r = test::crash_record();
  r.cgroup = "0::/system.slice/prog.service\n";
  r.container_key = "systemd:prog.service";
  ContainerInfo c;
  c.runtime = Runtime::Systemd;
  c.unit = "prog.service";
  c.slice = "system.slice";
  c.cgroup_path = "/system.slice/prog.service";
  r.extra[extras::kContainer] = to_json(c);
  r.extra[extras::kProc] = {{"status", "Name:\tprog1\nState:\tR\n"},
                            {"maps", "55555555-55556666 r-xp 00000000 08:01 12 /usr/bin/prog1\n"},
                            {"limits", "Max core file size        unlimited            unlimited            bytes\n"},
                            {"mountinfo", "22 1 8:1 / / rw - ext4 /dev/sda1 rw\n"},
                            {"fds", json::array({{{"fd", 0}, {"target", "/dev/null"}, {"pos", 0}, {"flags", "0100000"},
                                                  {"mnt_id", 25}, {"ino", 5}},
                                                 {{"fd", 3}, {"target", "/tmp/lockfile"}, {"pos", 7}, {"flags", "02"},
                                                  {"locks", json::array({"1: POSIX  ADVISORY  WRITE 4242 08:01:9 0 EOF"})}}})}};
  r.extra[extras::kEnviron] = json::array({"PATH=/usr/bin", "HOME=/srv"});
  const auto rep = ok_report();
  r.analysis = analysis::to_json(rep);
  r.signature = rep.signature;
  r.signature_text = rep.signature_text;
  return r;
}

std::vector<std::string> names_of(const std::vector<std::string>& fields) {
  std::vector<std::string> names;
  for (const auto& f : fields) names.push_back(f.substr(0, f.find('=')));
  return names;
}

const EntryOptions kPresent{.store_dir = "/var/lib/coredumpd", .core_present = true, .stack_trace = true};

TEST(JournalFields, EveryFieldOfAStoredAnalysedServiceCrash) {
  const auto r = full_record();
  const auto f = journal_fields(r, kPresent);
  EXPECT_EQ(names_of(f),
            (std::vector<std::string>{
                "MESSAGE", "MESSAGE_ID", "PRIORITY", "COREDUMP_PID", "COREDUMP_UID", "COREDUMP_GID", "COREDUMP_SIGNAL",
                "COREDUMP_SIGNAL_NAME", "COREDUMP_TIMESTAMP", "COREDUMP_RLIMIT", "COREDUMP_HOSTNAME", "COREDUMP_COMM",
                "COREDUMP_EXE", "COREDUMP_CMDLINE", "COREDUMP_CWD", "COREDUMP_CGROUP", "COREDUMP_UNIT", "COREDUMP_SLICE",
                "COREDUMP_PROC_STATUS", "COREDUMP_PROC_MAPS", "COREDUMP_PROC_LIMITS", "COREDUMP_PROC_CGROUP",
                "COREDUMP_PROC_MOUNTINFO", "COREDUMP_ENVIRON", "COREDUMP_OPEN_FDS", "COREDUMP_PACKAGE_NAME",
                "COREDUMP_PACKAGE_VERSION", "COREDUMP_PACKAGE_JSON", "COREDUMP_FILENAME", "OBJECT_PID", "COREDUMPD_ID",
                "COREDUMPD_STATE", "COREDUMPD_SIGNATURE", "COREDUMPD_SIGNATURE_TEXT", "COREDUMPD_RULE",
                "COREDUMPD_CONTAINER"}));
  EXPECT_EQ(field_value(f, "MESSAGE"),
            "Process 4242 (prog1) of user 1000 dumped core.\n\n" + analysis::stack_trace_text(ok_report()));
  EXPECT_NE(field_value(f, "MESSAGE").find("#0  0x0000555555555189 crash_here (prog1 + 0x1189)"), std::string::npos);
  EXPECT_EQ(field_value(f, "MESSAGE_ID"), "fc2e22bc6ee647b6b90729ab34a250b1");
  EXPECT_EQ(field_value(f, "PRIORITY"), "2");
  EXPECT_EQ(field_value(f, "COREDUMP_PID"), "4242");
  EXPECT_EQ(field_value(f, "COREDUMP_UID"), "1000");
  EXPECT_EQ(field_value(f, "COREDUMP_GID"), "1001");
  EXPECT_EQ(field_value(f, "COREDUMP_SIGNAL"), "11");
  EXPECT_EQ(field_value(f, "COREDUMP_SIGNAL_NAME"), "SIGSEGV");
  EXPECT_EQ(field_value(f, "COREDUMP_TIMESTAMP"), "1764900000123456");
  EXPECT_EQ(field_value(f, "COREDUMP_RLIMIT"), "18446744073709551615");
  EXPECT_EQ(field_value(f, "COREDUMP_HOSTNAME"), "box");
  EXPECT_EQ(field_value(f, "COREDUMP_COMM"), "prog1");
  EXPECT_EQ(field_value(f, "COREDUMP_EXE"), "/usr/bin/prog1");
  EXPECT_EQ(field_value(f, "COREDUMP_CMDLINE"), "/usr/bin/prog1 --flag two words");
  EXPECT_EQ(field_value(f, "COREDUMP_CWD"), "/srv");
  EXPECT_EQ(field_value(f, "COREDUMP_CGROUP"), "/system.slice/prog.service");
  EXPECT_EQ(field_value(f, "COREDUMP_UNIT"), "prog.service");
  EXPECT_EQ(field_value(f, "COREDUMP_SLICE"), "system.slice");
  EXPECT_EQ(field_value(f, "COREDUMP_PROC_STATUS"), "Name:\tprog1\nState:\tR\n");
  EXPECT_EQ(field_value(f, "COREDUMP_PROC_MAPS"), "55555555-55556666 r-xp 00000000 08:01 12 /usr/bin/prog1\n");
  EXPECT_EQ(field_value(f, "COREDUMP_PROC_LIMITS"),
            "Max core file size        unlimited            unlimited            bytes\n");
  EXPECT_EQ(field_value(f, "COREDUMP_PROC_CGROUP"), "0::/system.slice/prog.service\n");
  EXPECT_EQ(field_value(f, "COREDUMP_PROC_MOUNTINFO"), "22 1 8:1 / / rw - ext4 /dev/sda1 rw\n");
  EXPECT_EQ(field_value(f, "COREDUMP_ENVIRON"), "PATH=/usr/bin\nHOME=/srv");
  EXPECT_EQ(field_value(f, "COREDUMP_OPEN_FDS"),
            "0:/dev/null\npos:\t0\nflags:\t0100000\nmnt_id:\t25\nino:\t5\n"
            "\n"
            "3:/tmp/lockfile\npos:\t7\nflags:\t02\nlock:\t1: POSIX  ADVISORY  WRITE 4242 08:01:9 0 EOF\n");
  EXPECT_EQ(field_value(f, "COREDUMP_PACKAGE_NAME"), "prog");
  EXPECT_EQ(field_value(f, "COREDUMP_PACKAGE_VERSION"), "1.2-3");
  const auto packages = json::parse(field_value(f, "COREDUMP_PACKAGE_JSON"));
  // systemd 252 (elf-util.c): each module's .note.package by path with "buildId" merged in; ours
  // also lists a module with a build-id and no note, so coredumpctl shows its build-id.
  EXPECT_EQ(packages, json::parse(R"({
    "/usr/bin/prog1": {"type": "deb", "name": "prog", "version": "1.2-3", "architecture": "amd64", "buildId": "0123abcd"},
    "/usr/lib/x86_64-linux-gnu/libc.so.6": {"type": "deb", "name": "libc6", "version": "2.36-9"},
    "/opt/plain.so": {"buildId": "abcd"}})")) << packages.dump();
  EXPECT_EQ(field_value(f, "COREDUMP_FILENAME"), "/var/lib/coredumpd/00112233445566778899aabbccddeeff.zst");
  EXPECT_EQ(field_value(f, "OBJECT_PID"), "4242");
  EXPECT_EQ(field_value(f, "COREDUMPD_ID"), r.id);
  EXPECT_EQ(field_value(f, "COREDUMPD_STATE"), "complete");
  EXPECT_EQ(field_value(f, "COREDUMPD_SIGNATURE"), "0123456789abcdef0123456789abcdef");
  EXPECT_EQ(field_value(f, "COREDUMPD_SIGNATURE_TEXT"), "SIGSEGV: crash_here | main");
  EXPECT_EQ(field_value(f, "COREDUMPD_RULE"), "services");
  EXPECT_EQ(field_value(f, "COREDUMPD_CONTAINER"), "systemd:prog.service");
}

TEST(JournalFields, FieldNamesAreValidJournalNamesAndNoneRepeats) {
  // journald drops a field whose name is not [A-Z0-9_], starts with '_' or a digit, or is over 64.
  std::set<std::string> seen;
  for (const auto& name : names_of(journal_fields(full_record(), kPresent))) {
    EXPECT_TRUE(seen.insert(name).second) << name;
    EXPECT_LE(name.size(), 64u);
    EXPECT_NE(name[0], '_');
    EXPECT_FALSE(name[0] >= '0' && name[0] <= '9');
    for (char c : name) EXPECT_TRUE((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_') << name;
  }
}

TEST(JournalFields, UserSessionAndUserUnit) {
  auto r = full_record();
  ContainerInfo c;
  c.unit = "session-7.scope";
  c.slice = "user-1000.slice";
  c.owner_uid = 1000;
  c.cgroup_path = "/user.slice/user-1000.slice/session-7.scope";
  r.extra[extras::kContainer] = to_json(c);
  auto f = journal_fields(r, kPresent);
  EXPECT_EQ(field_value(f, "COREDUMP_UNIT"), "session-7.scope");
  EXPECT_EQ(field_value(f, "COREDUMP_SESSION"), "7");
  EXPECT_EQ(field_value(f, "COREDUMP_OWNER_UID"), "1000");
  EXPECT_EQ(field_value(f, "COREDUMP_SLICE"), "user-1000.slice");
  EXPECT_EQ(field_value(f, "COREDUMP_USER_UNIT"), "");

  c.unit = "user@1000.service";
  c.user_unit = "app-firefox-1234.scope";
  c.cgroup_path = "/user.slice/user-1000.slice/user@1000.service/app.slice/app-firefox-1234.scope";
  r.extra[extras::kContainer] = to_json(c);
  f = journal_fields(r, kPresent);
  EXPECT_EQ(field_value(f, "COREDUMP_UNIT"), "user@1000.service");
  EXPECT_EQ(field_value(f, "COREDUMP_USER_UNIT"), "app-firefox-1234.scope");
  EXPECT_EQ(field_value(f, "COREDUMP_SESSION"), "");
  EXPECT_EQ(field_value(f, "COREDUMP_CGROUP"), c.cgroup_path);
}

TEST(JournalFields, WithoutContainerTheCgroupComesFromTheUnifiedLine) {
  auto r = full_record();
  r.extra.erase(extras::kContainer);
  r.cgroup = "12:pids:/x\n0::/system.slice/other.service\n";
  const auto f = journal_fields(r, kPresent);
  EXPECT_EQ(field_value(f, "COREDUMP_CGROUP"), "/system.slice/other.service");
  EXPECT_EQ(field_value(f, "COREDUMP_UNIT"), "");
}

TEST(JournalFields, FilenameOnlyWhenTheCoreIsThereAndRawCoresToo) {
  auto r = full_record();
  EXPECT_EQ(field_value(journal_fields(r, {.store_dir = "/s", .core_present = false}), "COREDUMP_FILENAME"), "");
  r.compression = "none";
  r.path = r.id + ".core";  // coredumpctl reads a name without .zst/.xz/.lz4 raw
  EXPECT_EQ(field_value(journal_fields(r, {.store_dir = "/s/", .core_present = true}), "COREDUMP_FILENAME"),
            "/s/" + r.id + ".core");
}

TEST(JournalFields, PackageJsonLeavesOutModulesWithNeitherNoteNorBuildId) {
  analysis::CrashReport rep = ok_report();
  analysis::Module bare;
  bare.path = "/opt/bare.so";
  rep.modules.push_back(bare);
  const json j = package_json(rep);
  EXPECT_EQ(j.size(), 3u) << j.dump();
  EXPECT_FALSE(j.contains("/opt/bare.so"));
  // The build-id wins over a note that claims its own "buildId" (systemd merges it last).
  rep.modules[0].package["buildId"] = "forged";
  EXPECT_EQ(package_json(rep)["/usr/bin/prog1"]["buildId"], "0123abcd");
  rep.modules.clear();
  EXPECT_TRUE(package_json(rep).empty());
}

TEST(JournalFields, MessageWithoutStackTraceWhenNotWantedOrNotAnalysed) {
  auto r = full_record();
  const std::string head = "Process 4242 (prog1) of user 1000 dumped core.";
  EXPECT_EQ(field_value(journal_fields(r, {.store_dir = "/s", .core_present = true, .stack_trace = false}), "MESSAGE"), head);
  r.analysis = nullptr;
  r.signature.clear();
  r.signature_text.clear();
  const auto f = journal_fields(r, kPresent);
  EXPECT_EQ(field_value(f, "MESSAGE"), head);
  EXPECT_EQ(field_value(f, "COREDUMP_PACKAGE_NAME"), "");
  EXPECT_EQ(field_value(f, "COREDUMP_PACKAGE_JSON"), "");
  EXPECT_EQ(field_value(f, "COREDUMPD_SIGNATURE"), "");
  r.analysis = analysis::to_json(analysis::unavailable("analysis queue full (64 pending)"));
  EXPECT_EQ(field_value(journal_fields(r, kPresent), "MESSAGE"),
            head + "\n\nStack trace: unavailable (analysis queue full (64 pending))");
  r.analysis = json{{"version", 99}};  // what a hostile analyzer could have left
  EXPECT_NE(field_value(journal_fields(r, kPresent), "MESSAGE").find("Stack trace: unavailable (the stored report is not valid"),
            std::string::npos);
}

TEST(JournalFields, NoCoreStoredSaysSoWithOurReason) {
  auto r = full_record();
  r.state = DumpState::MetadataOnly;
  r.reason = "rate limited: 10 crashes in 60 s";
  r.path.clear();
  r.compression.clear();
  r.analysis = nullptr;
  const auto f = journal_fields(r, kPresent);
  EXPECT_EQ(field_value(f, "MESSAGE"),
            "Process 4242 (prog1) of user 1000 terminated abnormally without generating a coredump.\n\n"
            "coredumpd: metadata_only: rate limited: 10 crashes in 60 s");
  EXPECT_EQ(field_value(f, "COREDUMP_FILENAME"), "");
  EXPECT_EQ(field_value(f, "COREDUMPD_STATE"), "metadata_only");
  EXPECT_EQ(field_value(f, "COREDUMPD_REASON"), "rate limited: 10 crashes in 60 s");
  EXPECT_EQ(field_value(f, "COREDUMP_TRUNCATED"), "");

  r.state = DumpState::Failed;
  r.reason = "no space left on device";
  EXPECT_NE(field_value(journal_fields(r, kPresent), "MESSAGE").find("coredumpd: failed: no space left on device"),
            std::string::npos);
}

TEST(JournalFields, TruncatedCoreIsMarked) {
  auto r = full_record();
  r.state = DumpState::Truncated;
  r.reason = "max_core_bytes reached";
  const auto f = journal_fields(r, kPresent);
  EXPECT_EQ(field_value(f, "COREDUMP_TRUNCATED"), "1");
  EXPECT_EQ(field_value(f, "MESSAGE").substr(0, 46), "Process 4242 (prog1) of user 1000 dumped core.");
  EXPECT_NE(field_value(f, "COREDUMP_FILENAME"), "");
}

TEST(JournalFields, WhichStatesGetAnEntry) {
  EXPECT_TRUE(entry_wanted(DumpState::Complete));
  EXPECT_TRUE(entry_wanted(DumpState::Truncated));
  EXPECT_TRUE(entry_wanted(DumpState::Failed));
  EXPECT_TRUE(entry_wanted(DumpState::MetadataOnly));
  EXPECT_TRUE(entry_wanted(DumpState::Rejected));
  EXPECT_FALSE(entry_wanted(DumpState::Forwarded));  // the receiver's journal has it
  EXPECT_FALSE(entry_wanted(DumpState::InProgress));
  EXPECT_FALSE(entry_wanted(DumpState::Interrupted));
}

TEST(JournalFields, HostileBytesStayRawInTheirFieldAndEscapedInMessage) {
  auto r = full_record();
  r.comm = "evil\nMESSAGE_ID=x";  // a newline must not start a field of its own
  r.exe = std::string("/tmp/\xff\xfe\x01bin");  // not UTF-8, no NUL
  r.argv = {"a\nb", std::string("\x80", 1)};
  const auto f = journal_fields(r, kPresent);
  EXPECT_EQ(field_value(f, "COREDUMP_COMM"), "evil\nMESSAGE_ID=x");
  EXPECT_EQ(field_value(f, "COREDUMP_EXE"), r.exe);
  EXPECT_EQ(field_value(f, "COREDUMP_CMDLINE"), std::string("a\nb \x80"));
  EXPECT_EQ(field_value(f, "MESSAGE_ID"), "fc2e22bc6ee647b6b90729ab34a250b1");
  const std::string message = field_value(f, "MESSAGE");
  EXPECT_EQ(message.substr(0, message.find(" of user")), "Process 4242 (" + escape_for_display(r.comm) + ")");
  EXPECT_EQ(message.find("evil\n"), std::string::npos);
  // the executable no longer matches a module: no package name, the rest still there
  EXPECT_EQ(field_value(f, "COREDUMP_PACKAGE_NAME"), "");
}

TEST(JournalFields, HugeValuesAreCappedAtUtf8BoundariesAndNamed) {
  auto r = full_record();
  r.argv = {std::string(3 * kMaxShortField, 'A')};
  std::string env;
  for (std::size_t i = 0; env.size() < 2 * kMaxLongField; ++i) env += "\xc3\xa9";  // "é", 2 bytes each
  r.extra[extras::kEnviron] = json::array({"X=" + env});
  r.comm = std::string(kMaxShortField - 1, 'c') + "\xe2\x82\xac";  // "€" straddles the cap
  const auto f = journal_fields(r, kPresent);
  EXPECT_EQ(field_value(f, "COREDUMP_CMDLINE").size(), kMaxShortField);
  const std::string environ_value = field_value(f, "COREDUMP_ENVIRON");
  EXPECT_LE(environ_value.size(), kMaxLongField);
  EXPECT_GE(environ_value.size(), kMaxLongField - 3);
  EXPECT_EQ(escape_for_display(environ_value), environ_value);  // still whole UTF-8 sequences
  EXPECT_EQ(field_value(f, "COREDUMP_COMM"), std::string(kMaxShortField - 1, 'c'));
  EXPECT_EQ(field_value(f, "COREDUMPD_TRUNCATED_FIELDS"), "COREDUMP_COMM COREDUMP_CMDLINE COREDUMP_ENVIRON");
  std::size_t total = 0;
  for (const auto& field : f) total += field.size();
  EXPECT_LT(total, 16u * kMaxLongField);  // the whole entry stays bounded
}

TEST(JournalFields, WhatTheRecordLacksIsLeftOutButTheIdsAndSignalAreThere) {
  DumpRecord r;
  r.id = "ffffffffffffffffffffffffffffffff";
  r.state = DumpState::Failed;
  r.pid = 9;
  const auto f = journal_fields(r, {});
  EXPECT_EQ(names_of(f), (std::vector<std::string>{"MESSAGE", "MESSAGE_ID", "PRIORITY", "COREDUMP_PID", "COREDUMP_UID",
                                                   "COREDUMP_GID", "COREDUMP_SIGNAL", "COREDUMP_TIMESTAMP", "OBJECT_PID",
                                                   "COREDUMPD_ID", "COREDUMPD_STATE"}));
  // coredumpctl 252 aborts on a crash entry without these: written, as "-" and signal 0 show.
  EXPECT_EQ(field_value(f, "COREDUMP_UID"), "-1");
  EXPECT_EQ(field_value(f, "COREDUMP_GID"), "-1");
  EXPECT_EQ(field_value(f, "COREDUMP_SIGNAL"), "0");
  EXPECT_EQ(field_value(f, "MESSAGE"),
            "Process 9 () of user -1 terminated abnormally without generating a coredump.\n\ncoredumpd: failed");
}

}  // namespace
}  // namespace coredumpd::journal
