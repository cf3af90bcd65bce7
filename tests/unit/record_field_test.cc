// record_field() (store/record_query.h) against the journal entry (daemon/journal/journal_fields.h):
// a match FIELD=VALUE in dumpctl selects exactly the crashes whose journal entry has FIELD=VALUE,
// because both read the derivations of store/record_facts.h.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "daemon/journal/journal_fields.h"
#include "daemon/policy/container_info.h"
#include "store/record_extras.h"
#include "store/record_facts.h"
#include "store/record_query.h"
#include "tests/unit/crash_record_fixture.h"

namespace coredumpd {
namespace {

DumpRecord base() {
  DumpRecord r = test::crash_record();
  r.state = DumpState::Truncated;
  r.boot_id = "0123456789abcdef0123456789abcdef";
  r.reason = "the stream ended early";
  return r;
}

/// A crash in a user's session: a session scope, a user unit, an owner uid (cgroup v1 and v2 lines).
DumpRecord session_record() {
  DumpRecord r = base();
  r.cgroup = "12:pids:/user.slice\n0::/user.slice/user-1000.slice/session-3.scope\n";
  ContainerInfo c;
  c.runtime = Runtime::Systemd;
  c.unit = "session-3.scope";
  c.slice = "user-1000.slice";
  c.user_unit = "app.service";
  c.owner_uid = 1000;
  r.extra[extras::kContainer] = to_json(c);
  r.container_key = "systemd:session-3.scope";
  r.signature = "abcdef0123456789abcdef0123456789";
  return r;
}

/// A system service with the cgroup path the daemon chose (not the /proc line).
DumpRecord service_record() {
  DumpRecord r = base();
  r.state = DumpState::Complete;
  r.cgroup = "0::/system.slice/other.service\n";
  ContainerInfo c;
  c.runtime = Runtime::Systemd;
  c.unit = "prog.service";
  c.slice = "system.slice";
  c.cgroup_path = "/system.slice/prog.service";
  r.extra[extras::kContainer] = to_json(c);
  return r;
}

void expect_same_as_journal(const DumpRecord& r) {
  const auto fields = journal::journal_fields(r, {});
  std::size_t compared = 0;
  for (const auto name : known_fields()) {
    const std::string n(name);
    const std::string journal = journal::field_value(fields, n);
    if (journal.empty()) {
      // The journal leaves out what the record lacks; record_field() says "no value" then.
      if (n.starts_with("COREDUMP_") || n == "OBJECT_PID") {
        EXPECT_FALSE(record_field(r, n).has_value()) << n << " = " << record_field(r, n).value_or("");
      }
      continue;
    }
    EXPECT_EQ(record_field(r, n).value_or("<none>"), journal) << n;
    ++compared;
  }
  EXPECT_GE(compared, 18U);  // the base record has 18 of the fields; the others more
}

TEST(RecordField, EveryKnownFieldEqualsTheJournalEntrysValue) {
  expect_same_as_journal(session_record());
  expect_same_as_journal(service_record());
  expect_same_as_journal(base());
}

TEST(RecordField, UserFacingFieldsOfASessionCrash) {
  const DumpRecord r = session_record();
  EXPECT_EQ(record_field(r, "COREDUMP_UNIT"), "session-3.scope");
  EXPECT_EQ(record_field(r, "COREDUMP_USER_UNIT"), "app.service");
  EXPECT_EQ(record_field(r, "COREDUMP_SLICE"), "user-1000.slice");
  EXPECT_EQ(record_field(r, "COREDUMP_OWNER_UID"), "1000");
  EXPECT_EQ(record_field(r, "COREDUMP_SESSION"), "3");
  EXPECT_EQ(record_field(r, "COREDUMP_CGROUP"), "/user.slice/user-1000.slice/session-3.scope");
  EXPECT_EQ(record_field(r, "COREDUMP_CMDLINE"), "/usr/bin/prog1 --flag two words");
  EXPECT_EQ(record_field(r, "COREDUMP_RLIMIT"), "18446744073709551615");
  EXPECT_EQ(record_field(r, "COREDUMP_TRUNCATED"), "1");
  EXPECT_EQ(record_field(r, "COREDUMPD_REASON"), "the stream ended early");
  EXPECT_EQ(record_field(service_record(), "COREDUMP_CGROUP"), "/system.slice/prog.service");
  EXPECT_FALSE(record_field(service_record(), "COREDUMP_SESSION").has_value());
  EXPECT_FALSE(record_field(r, "COREDUMP_NOPE").has_value());
  EXPECT_FALSE(known_field("COREDUMP_NOPE"));
}

TEST(RecordField, MatchesAreOredWithinAFieldAndAndedAcross) {
  const DumpRecord r = session_record();
  RecordQuery q;
  q.matches = {{"COREDUMP_UNIT", "other.service"}, {"COREDUMP_UNIT", "session-3.scope"}};
  EXPECT_TRUE(record_matches(q, r));
  q.matches.push_back({"COREDUMP_OWNER_UID", "0"});
  EXPECT_FALSE(record_matches(q, r));
  q.matches.back().value = "1000";
  EXPECT_TRUE(record_matches(q, r));
  q.matches.push_back({"COREDUMPD_SIGNATURE", "abcdef"});  // a prefix of ours
  EXPECT_TRUE(record_matches(q, r));
}

}  // namespace
}  // namespace coredumpd
