// `dumpctl fleet` (issue 26 item 3) against a real PostgreSQL (tests/support/pg_server.h) and a
// real radosgw (tests/support/ceph_cluster.h), one of each for the program: top and crashes as
// text and JSON, the settings from the daemon's configuration file, and fetch of zstd and raw cores.
#include <gtest/gtest.h>
#include <zstd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "fleet/fleet_index.h"
#include "s3/s3_client.h"
#include "tests/support/ceph_cluster.h"
#include "tests/support/pg_server.h"
#include "tests/support/test_support.h"

namespace coredumpd {
namespace {

using namespace std::chrono_literals;

test::PgServer* g_pg = nullptr;
test::CephCluster* g_ceph = nullptr;
std::string g_ceph_error;

class Engines : public ::testing::Environment {
 public:
  void SetUp() override {
    if (!test::postgres_unavailable()) g_pg = new test::PgServer();
    if (!test::CephCluster::unavailable()) {
      g_ceph = new test::CephCluster(SCRIPTS_DIR);
      g_ceph_error = g_ceph->start();
    }
  }
  void TearDown() override {
    delete g_ceph;
    delete g_pg;
  }
};
const auto* const kEnv = ::testing::AddGlobalTestEnvironment(new Engines);

// dumpctl with `args`, its stdout and stderr together; the AWS variables of the test cluster set.
std::pair<int, std::string> dumpctl(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"/bin/sh", "-c", "exec \"$0\" \"$@\" 2>&1", "/usr/bin/env"};
  if (g_ceph) {
    argv.push_back("AWS_ACCESS_KEY_ID=" + g_ceph->access_key());
    argv.push_back("AWS_SECRET_ACCESS_KEY=" + g_ceph->secret_key());
  }
  argv.push_back(DUMPCTL_BIN);
  argv.insert(argv.end(), args.begin(), args.end());
  auto [status, out] = test::run_capture(argv, 60s);
  return {status.exit_code(), out};
}

FleetRecord crash(const std::string& host, const std::string& id, std::int64_t t, const std::string& sig,
                  const std::string& package) {
  FleetRecord r;
  r.host_id = host;
  r.dump_id = id;
  r.timestamp_us = t;
  r.exe = "/usr/bin/crasher";
  r.comm = "crasher";
  r.signal = 11;
  r.signature = sig;
  r.signature_text = "crasher!f <- crasher!main";
  r.package = package;
  r.state = "metadata";
  return r;
}

class DumpctlFleet : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto why = test::postgres_unavailable()) GTEST_SKIP() << *why;
    ASSERT_NE(g_pg, nullptr);
    std::string name = std::string("d_") + ::testing::UnitTest::GetInstance()->current_test_info()->name();
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    conninfo_ = g_pg->create_database(name);
    index_ = std::make_unique<FleetIndex>(conninfo_);
  }
  std::string conninfo_;
  std::unique_ptr<FleetIndex> index_;
  test::TempDir dir_;
};

const std::string kSigA = "a1" + std::string(62, '0');
const std::string kSigB = "b2" + std::string(62, '0');
constexpr std::int64_t kDay = 86'400'000'000;
constexpr std::int64_t kT0 = 1'764'892'800'000'000;  // 2025-12-05 00:00:00 UTC

TEST_F(DumpctlFleet, TopCountsSignaturesAcrossHostsInTheWindow) {
  index_->upsert(crash("h1", "d1", kT0, kSigA, "crasher 1.0"));
  index_->upsert(crash("h2", "d2", kT0 + 60'000'000, kSigA, "crasher 1.1"));
  index_->upsert(crash("h3", "d3", kT0 + 120'000'000, kSigB, ""));
  index_->upsert(crash("h3", "d4", kT0 - 10 * kDay, kSigB, ""));

  auto [rc, out] = dumpctl({"fleet", "--database", conninfo_, "top", "--json=short"});
  ASSERT_EQ(rc, 0) << out;
  const auto j = nlohmann::json::parse(out);
  ASSERT_EQ(j.size(), 2u) << out;
  EXPECT_EQ(j[0]["count"], 2);  // B: two crashes, newest first among equal counts
  EXPECT_EQ(j[0]["signature"], kSigB);
  EXPECT_EQ(j[1]["signature"], kSigA);
  EXPECT_EQ(j[1]["hosts"], 2);
  EXPECT_EQ(j[1]["versions"], nlohmann::json({"crasher 1.0", "crasher 1.1"}));
  EXPECT_EQ(j[1]["first_us"], kT0);

  // -S: the window (systemd's time syntax) leaves out the crash ten days before.
  std::tie(rc, out) = dumpctl({"fleet", "--database", conninfo_, "top", "-S", "2025-12-04 UTC", "-n", "1", "--json=short"});
  ASSERT_EQ(rc, 0) << out;
  const auto w = nlohmann::json::parse(out);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0]["signature"], kSigA);

  std::tie(rc, out) = dumpctl({"fleet", "--database", conninfo_, "top", "-S", "2025-12-04 UTC"});
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("COUNT HOSTS FIRST"), std::string::npos) << out;
  EXPECT_NE(out.find("a10000000000 crasher 1.0,crasher 1.1 crasher!f <- crasher!main"), std::string::npos) << out;

  std::tie(rc, out) = dumpctl({"fleet", "--database", conninfo_, "top", "-S", "2030-01-01 UTC"});
  EXPECT_EQ(rc, 1);
  EXPECT_NE(out.find("No crash signatures found."), std::string::npos) << out;
}

TEST_F(DumpctlFleet, CrashesOfASignatureByPrefix) {
  index_->upsert(crash("h1", "d1", kT0, kSigA, ""));
  index_->upsert(crash("h2", "d2", kT0 + 1, kSigA, ""));
  index_->upsert(crash("h3", "d3", kT0 + 2, kSigB, ""));
  auto [rc, out] = dumpctl({"fleet", "--database", conninfo_, "crashes", "A1", "--json=pretty"});
  ASSERT_EQ(rc, 0) << out;
  const auto j = nlohmann::json::parse(out);
  ASSERT_EQ(j.size(), 2u);
  EXPECT_EQ(j[0]["host_id"], "h2");
  EXPECT_EQ(j[0]["time"], kT0 + 1);
  EXPECT_EQ(j[1]["dump_id"], "d1");
  std::tie(rc, out) = dumpctl({"fleet", "--database", conninfo_, "crashes", "b2"});
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("h3   d3  11 /usr/bin/crasher metadata"), std::string::npos) << out;
  std::tie(rc, out) = dumpctl({"fleet", "--database", conninfo_, "crashes", "zz"});
  EXPECT_EQ(rc, 1);
  EXPECT_NE(out.find("dumpctl: fleet index: a signature is hex digits"), std::string::npos) << out;
}

TEST_F(DumpctlFleet, SettingsComeFromTheDaemonsConfigurationAndItsDropIns) {
  index_->upsert(crash("h1", "d1", kT0, kSigA, ""));
  {
    std::ofstream(dir_ / "coredumpd.json") << "// the daemon's file\n{ \"store\": \"/x\", \"upload\": { \"fleet_conninfo\": "
                                            << nlohmann::json("host=/nonexistent dbname=x").dump() << " } }\n";
    std::filesystem::create_directory(dir_ / "conf.d");
    std::ofstream(dir_ / "conf.d/50-fleet.json") << "{ \"upload\": { \"fleet_conninfo\": " << nlohmann::json(conninfo_).dump()
                                                 << " } }\n";
  }
  auto [rc, out] = dumpctl({"fleet", "--config", dir_ / "coredumpd.json", "top", "--json=short"});
  ASSERT_EQ(rc, 0) << out;
  EXPECT_EQ(nlohmann::json::parse(out).size(), 1u);

  std::tie(rc, out) = dumpctl({"fleet", "--config", dir_ / "missing.json", "top"});
  EXPECT_EQ(rc, 1);
  EXPECT_NE(out.find("no configuration file"), std::string::npos) << out;
  std::tie(rc, out) = dumpctl({"fleet", "--database", "host=127.0.0.1 port=1 dbname=x", "top"});
  EXPECT_EQ(rc, 1);
  EXPECT_NE(out.find("dumpctl: fleet index: cannot connect:"), std::string::npos) << out;
}

std::string core_bytes(std::size_t size) {
  // A core's shape: random pages between runs of zeros (holes in the written file).
  std::string s(size, '\0');
  std::mt19937 rng(7);
  for (std::size_t i = 0; i < size; i += 8192)
    for (std::size_t k = i; k < std::min(size, i + 4096); ++k) s[k] = static_cast<char>(rng());
  return s;
}

TEST_F(DumpctlFleet, FetchDownloadsAndDecompressesTheCore) {
  if (auto why = test::CephCluster::unavailable()) GTEST_SKIP() << *why;
  ASSERT_TRUE(g_ceph && g_ceph_error.empty()) << g_ceph_error;
  S3Client s3({g_ceph->endpoint(), "default", "fleet-fetch"}, {g_ceph->access_key(), g_ceph->secret_key(), ""});
  ASSERT_TRUE(s3.create_bucket().ok);
  const std::string core = core_bytes(3 << 20);
  std::string zst(ZSTD_compressBound(core.size()), '\0');
  zst.resize(ZSTD_compress(zst.data(), zst.size(), core.data(), core.size(), 3));
  ASSERT_TRUE(s3.put_object("cores/h1/d1.zst", zst, "application/zstd").ok);
  ASSERT_TRUE(s3.put_object("cores/h2/d2.core", core, "application/octet-stream").ok);
  auto r1 = crash("h1", "d1", kT0, kSigA, "");
  r1.state = "uploaded";
  r1.object_key = "cores/h1/d1.zst";
  r1.core_bytes = zst.size();
  index_->upsert(r1);
  auto r2 = crash("h2", "d2", kT0, kSigA, "");
  r2.state = "uploaded";
  r2.object_key = "cores/h2/d2.core";
  r2.core_bytes = core.size();
  index_->upsert(r2);
  index_->upsert(crash("h3", "d3", kT0, kSigA, ""));  // metadata only
  auto r4 = r1;
  r4.host_id = "h4";
  r4.dump_id = "e4";
  r4.core_bytes = zst.size() + 1;  // the index disagrees with the object
  index_->upsert(r4);
  const std::vector<std::string> s3_opts = {"--endpoint", g_ceph->endpoint(), "--bucket", "fleet-fetch", "--region", "default"};
  auto fetch = [&](std::vector<std::string> args) {
    std::vector<std::string> a = {"fleet", "--database", conninfo_};
    a.insert(a.end(), s3_opts.begin(), s3_opts.end());
    a.push_back("fetch");
    a.insert(a.end(), args.begin(), args.end());
    return dumpctl(a);
  };

  // The bucket and the database from the daemon's configuration, as on a host of the fleet.
  std::ofstream(dir_ / "coredumpd.json") << nlohmann::json{{"upload", {{"endpoint", g_ceph->endpoint()},
      {"bucket", "fleet-fetch"}, {"region", "default"}, {"fleet_conninfo", conninfo_}}}}.dump();
  auto [rc, out] = dumpctl({"fleet", "--config", dir_ / "coredumpd.json", "fetch", "d1", "-o", dir_ / "core.d1"});
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("Fetched the core of d1 of h1 (3.0M) from cores/h1/d1.zst"), std::string::npos) << out;
  EXPECT_EQ(test::read_file(dir_ / "core.d1"), core);

  std::tie(rc, out) = fetch({"d2", "-o", dir_ / "core.d2", "--json=short"});  // a raw core
  ASSERT_EQ(rc, 0) << out;
  EXPECT_EQ(nlohmann::json::parse(out)["bytes"], core.size());
  EXPECT_EQ(test::read_file(dir_ / "core.d2"), core);

  std::tie(rc, out) = fetch({"d3", "-o", dir_ / "core.d3"});
  EXPECT_EQ(rc, 1);
  EXPECT_NE(out.find("dumpctl: crash d3 of h3 has no core in S3 (state metadata)"), std::string::npos) << out;
  std::tie(rc, out) = fetch({"e4", "-o", dir_ / "core.e4"});
  EXPECT_EQ(rc, 1);
  EXPECT_NE(out.find("the index says " + std::to_string(zst.size() + 1)), std::string::npos) << out;

  ASSERT_TRUE(s3.delete_object("cores/h1/d1.zst").ok);
  std::tie(rc, out) = fetch({"d1", "-o", dir_ / "again"});
  EXPECT_EQ(rc, 1);
  EXPECT_NE(out.find("HTTP 404"), std::string::npos) << out;
  // Nothing half-written is left behind by the failures.
  std::size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir_.path())) files += e.is_regular_file() ? 1 : 0;
  EXPECT_EQ(files, 3u);  // the two cores and coredumpd.json
}

}  // namespace
}  // namespace coredumpd
