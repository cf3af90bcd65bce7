// The dumpctl store commands on a real store: du, vacuum, verify.
#include "cli/store_commands.h"

#include "tests/unit/retention_fixture.h"

namespace coredumpd {
namespace {

using namespace std::chrono_literals;

TEST_F(RetentionTest, DumpctlDu) {
  add_sized(1, 1000, 100s, 10 * KiB, "web");
  add_sized(2, 0, 90s, 20 * KiB);
  CliResult r = dumpctl({"du"});
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("Cores: 2,"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Filesystem: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("UID"), std::string::npos);
  EXPECT_NE(r.out.find("(defaults)"), std::string::npos);
  EXPECT_NE(r.out.find("web"), std::string::npos);

  r = dumpctl({"du", "--json"});
  ASSERT_EQ(r.rc, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["cores"], 2);
  EXPECT_EQ(j["rows"], 2);
  ASSERT_EQ(j["by_uid"].size(), 2U);
  EXPECT_EQ(j["by_uid"][0]["uid"], 0);  // biggest first
  EXPECT_EQ(j["by_uid"][1]["uid"], 1000);
  ASSERT_EQ(j["by_rule"].size(), 2U);
  EXPECT_EQ(j["by_rule"][1]["rule"], "web");
  EXPECT_TRUE(j["filesystem"]["free_bytes"].is_number_unsigned());
}

TEST_F(RetentionTest, DumpctlVacuum) {
  add_sized(1, 1000, 10 * 24h, 10 * KiB);
  add_sized(2, 1000, 100s, 10 * KiB);
  add_sized(3, 1000, 50s, 10 * KiB);
  index_.reset();  // dumpctl opens its own connection

  CliResult r = dumpctl({"vacuum"});
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("nothing to do"), std::string::npos) << r.err;
  r = dumpctl({"vacuum", "--max-use", "lots"});
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("invalid --max-use size 'lots'"), std::string::npos) << r.err;
  r = dumpctl({"vacuum", "--max-age", "7x"});
  EXPECT_EQ(r.rc, 1);

  r = dumpctl({"vacuum", "--max-age", "7d", "--dry-run"});
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("Would delete " + make_id(1)), std::string::npos) << r.out;
  EXPECT_TRUE(has_file(1));

  r = dumpctl({"vacuum", "--max-age", "7d", "--max-use", "15K"});
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("Deleted " + make_id(1)), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(max_age) with its record"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Deleted " + make_id(2)), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(max_use)"), std::string::npos) << r.out;
  EXPECT_FALSE(has_file(1));
  EXPECT_FALSE(has_file(2));
  EXPECT_TRUE(has_file(3));

  r = dumpctl({"vacuum", "--keep-free", "1%", "--json"});
  EXPECT_EQ(r.rc, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["dry_run"], false);
  EXPECT_TRUE(j["removed"].is_array());

  // Not a store: refused, and no index is created.
  const std::string empty = root_ + "/empty";
  fs::create_directory(empty);
  std::ostringstream out, err;
  const int rc = cli::dumpctl_main({"dumpctl", "--store", empty, "vacuum", "--max-use", "1G"},
                                   cli::Io{out, err, false});
  EXPECT_EQ(rc, 1);
  EXPECT_NE(err.str().find("no index"), std::string::npos) << err.str();
  EXPECT_FALSE(fs::exists(empty + "/index.sqlite"));
}

TEST_F(RetentionTest, DumpctlVerify) {
  add_sized(1, 1000, 100s, 10 * KiB);
  add(2, 1000, 90s, std::string(100000, 'z'));
  CliResult r = dumpctl({"verify", "--deep"});
  EXPECT_EQ(r.rc, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("no problems found"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(2 read in full)"), std::string::npos) << r.out;

  write_file(store_ + "/" + make_id(8) + ".zst", "orphan");
  write_file(store_ + "/evil\x1b]0;title\x07", "x");
  {
    const std::string p = store_ + "/" + make_id(2) + ".zst";
    std::string z = read_file(p);
    z[z.size() - 2] = static_cast<char>(z[z.size() - 2] ^ 1);  // inside the checksum
    write_file(p, z);
  }
  r = dumpctl({"verify"});
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.out.find("orphan: " + make_id(8) + ".zst: no row in the index"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("evil\\x1b]0;title\\x07"), std::string::npos) << r.out;  // escaped
  EXPECT_EQ(r.out.find('\x1b'), std::string::npos);
  EXPECT_NE(r.out.find("2 problems found"), std::string::npos) << r.out;

  r = dumpctl({"verify", "--deep", "--json"});
  EXPECT_EQ(r.rc, 1);
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["ok"], false);
  ASSERT_EQ(j["problems"].size(), 3U);
  bool corrupt = false;
  for (const auto& p : j["problems"]) {
    if (p["problem"] == "corrupt") {
      corrupt = true;
      EXPECT_EQ(p["id"], make_id(2));
      EXPECT_NE(p["detail"].get<std::string>().find("checksum"), std::string::npos) << p.dump();
    }
  }
  EXPECT_TRUE(corrupt);
}

}  // namespace
}  // namespace coredumpd
