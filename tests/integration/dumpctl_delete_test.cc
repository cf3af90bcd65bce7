// dumpctl delete (issue 24 part 3) against the real coredumpd and its query service: root deletes
// on the store beside the running daemon; coredumpctl's matches select what goes, an empty
// selection needs --all; a user deletes their own dump through the service (forked child,
// setresuid) and is refused root's and a set-uid program's; short ids resolve among the user's own.
#include "tests/integration/dumpctl_verbs_fixture.h"

using namespace coredumpd;
using namespace coredumpd::test;
using namespace coredumpd::test::verbs;

namespace {

TEST_F(DumpctlVerbs, RootDeletesOnTheStoreBesideTheDaemon) {
  start_daemon();
  const Result dry = as_root({"delete", "--dry-run", mine_});
  ASSERT_EQ(dry.rc(), 0) << dry.err;
  EXPECT_NE(dry.out.find("Would delete " + mine_), std::string::npos) << dry.out;
  EXPECT_TRUE(row(mine_) && file(mine_)) << "a dry run touches nothing";

  const Result r = as_root({"delete", mine_, roots_});
  ASSERT_EQ(r.rc(), 0) << r.err;
  EXPECT_NE(r.out.find("Deleted " + mine_), std::string::npos) << r.out;
  for (const auto& id : {mine_, roots_}) EXPECT_FALSE(row(id) || file(id)) << id;
  for (const auto& id : {mine2_, setuid_}) EXPECT_TRUE(row(id) && file(id)) << "others intact: " << id;

  // The daemon's view agrees: its list (root through the service) no longer has them.
  const Result list = run_dumpctl_as(0, {"--query-socket", query_, "list", "--json=short"}, user_dir_);
  ASSERT_EQ(list.rc(), 0) << list.err;
  EXPECT_EQ(nlohmann::json::parse(list.out).size(), 2U) << list.out;

  // A row whose core file is already missing: the row goes, and the output says so.
  std::filesystem::remove(store_ + "/" + mine2_ + ".zst");
  const Result missing = as_root({"delete", mine2_});
  ASSERT_EQ(missing.rc(), 0) << missing.err;
  EXPECT_NE(missing.out.find("already missing"), std::string::npos) << missing.out;
  EXPECT_FALSE(row(mine2_));
  const Result again = as_root({"delete", mine2_});
  EXPECT_EQ(again.rc(), 1) << "nothing matches any more";
}

TEST_F(DumpctlVerbs, DeleteTakesEveryMatchAndRefusesAnEmptySelection) {
  // No MATCH, -S, -U, -1 or -n: "delete" alone would mean every dump; refused, nothing touched.
  const Result bare = as_root({"delete"});
  EXPECT_EQ(bare.rc(), 1);
  EXPECT_NE(bare.err.find("--all"), std::string::npos) << bare.err;
  for (const auto& id : {mine_, mine2_, roots_, setuid_}) EXPECT_TRUE(row(id) && file(id)) << id;
  const Result all = as_root({"delete", "--all", "--dry-run"});
  ASSERT_EQ(all.rc(), 0) << all.err;
  for (const auto& id : {mine_, mine2_, roots_, setuid_})
    EXPECT_NE(all.out.find("Would delete " + id), std::string::npos) << all.out;

  // coredumpctl's matches: two COMMs (the same field: ORed), FIELD=VALUE with them (ANDed).
  const Result none = as_root({"delete", "prog1", "prog3", "COREDUMP_UID=4242"});
  EXPECT_EQ(none.rc(), 1);
  EXPECT_NE(none.err.find("No match found."), std::string::npos) << none.err;
  const Result two = as_root({"delete", "prog1", "prog3"});
  ASSERT_EQ(two.rc(), 0) << two.err;
  for (const auto& id : {mine_, roots_}) EXPECT_FALSE(row(id) || file(id)) << id;
  for (const auto& id : {mine2_, setuid_}) EXPECT_TRUE(row(id) && file(id)) << id;
  // -1: the newest of what is left (setuid_, the 4th), by a time filter and no MATCH.
  const Result newest = as_root({"delete", "-1"});
  ASSERT_EQ(newest.rc(), 0) << newest.err;
  EXPECT_FALSE(row(setuid_));
  EXPECT_TRUE(row(mine2_));
}

TEST_F(DumpctlVerbs, UserDeletesTheirOwnThroughTheService) {
  start_daemon();
  const Result r = as_user({"delete", mine_});
  ASSERT_EQ(r.rc(), 0) << r.err;
  EXPECT_NE(r.out.find("Deleted " + mine_), std::string::npos) << r.out;
  EXPECT_FALSE(row(mine_) || file(mine_)) << "the daemon removed the row and the core";
  for (const auto& id : {mine2_, roots_, setuid_}) EXPECT_TRUE(row(id) && file(id)) << id;
  const nlohmann::json status = ask_as(0, R"({"op":"status"})" "\n");
  EXPECT_EQ(status["status"]["counters"]["deleted"], 1) << status.dump();

  // Root's dump and the set-uid program's: not the user's to see, so not to delete either; the
  // service answers as for a dump that does not exist, and nothing is touched.
  for (const auto& id : {roots_, setuid_}) {
    nlohmann::json reply = ask_as(kUser, R"({"op":"delete","id":")" + id + "\"}\n");
    EXPECT_EQ(reply["ok"], false) << reply.dump();
    EXPECT_EQ(reply["code"], "not_found") << reply.dump();
    EXPECT_TRUE(row(id) && file(id)) << id;
    const Result cli = as_user({"delete", id});
    EXPECT_EQ(cli.rc(), 1);
    EXPECT_NE(cli.err.find("No match found."), std::string::npos) << cli.err;
  }
  const Result direct = run_dumpctl_as(kUser, {"--store", store_, "delete", mine2_}, user_dir_);
  EXPECT_EQ(direct.rc(), 1) << "the store is root's";
  EXPECT_TRUE(row(mine2_) && file(mine2_));
}

// Short ids through the service: the prefix is resolved by the daemon's scan (COREDUMPD_ID
// matches by prefix) among the dumps the user may see, never among root's.
TEST_F(DumpctlVerbs, UserInfoTakesShortIdsThroughTheService) {
  start_daemon();
  const Result r = as_user({"info", "--json=short", mine_.substr(0, 16)});
  ASSERT_EQ(r.rc(), 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out).at("id"), mine_) << r.out;
  const Result two = as_user({"info", "--json=short", mine_.substr(0, 16), mine2_.substr(0, 16)});
  ASSERT_EQ(two.rc(), 0) << two.err;
  EXPECT_NE(two.out.find(mine2_), std::string::npos) << two.out;
  const Result theirs = as_user({"info", roots_.substr(0, 16)});
  EXPECT_EQ(theirs.rc(), 1) << "root's dump is not the user's: " << theirs.out;
  const Result ambiguous = as_user({"info", mine_.substr(0, 15)});  // mine_ and mine2_
  EXPECT_EQ(ambiguous.rc(), 1);
  EXPECT_NE(ambiguous.err.find("ambiguous"), std::string::npos) << ambiguous.err;
}

}  // namespace
