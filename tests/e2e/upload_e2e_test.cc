// Real-kernel tests of the uploader (issue 26 item 1): real crashes stored by coredumpd and sent
// to a real radosgw (scripts/fleet/ceph-up.sh, one cluster for the program) and a real PostgreSQL
// fleet index (scripts/fleet/pg-up.sh); the faults: radosgw stopped during an upload, wrong
// credentials, the daemon killed mid-upload, PostgreSQL restarted. Skipped, saying why, without
// root and a 6.17 kernel or without the Ceph/PostgreSQL packages.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include <gtest/gtest.h>

#include "fleet/fleet_index.h"
#include "s3/s3_client.h"
#include "tests/e2e/real_kernel_fixture.h"
#include "tests/support/ceph_cluster.h"
#include "tests/support/pg_server.h"
#include "util/unique_fd.h"

using namespace coredumpd;
using namespace coredumpd::test;

namespace {

CephCluster* g_ceph = nullptr;
std::string g_ceph_error;

class CephEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    if (CephCluster::unavailable() || real_kernel_unavailable()) return;
    g_ceph = new CephCluster(SCRIPTS_DIR);
    g_ceph_error = g_ceph->start();
  }
  void TearDown() override {
    delete g_ceph;
    g_ceph = nullptr;
  }
};
const auto* const kEnv = ::testing::AddGlobalTestEnvironment(new CephEnvironment);

std::string slurp(int fd) {
  struct stat st {};
  ::fstat(fd, &st);
  std::string s(static_cast<std::size_t>(st.st_size), '\0');
  if (::pread(fd, s.data(), s.size(), 0) != static_cast<ssize_t>(s.size())) s.clear();
  return s;
}

int count_of(const std::string& text, const std::string& needle) {
  int n = 0;
  for (auto p = text.find(needle); p != std::string::npos; p = text.find(needle, p + 1)) ++n;
  return n;
}

class Upload : public RealKernel {
 protected:
  void SetUp() override {
    SKIP_WITHOUT_REAL_KERNEL("real-kernel test");
    if (auto why = CephCluster::unavailable()) GTEST_SKIP() << *why;
    ASSERT_TRUE(g_ceph && g_ceph_error.empty()) << g_ceph_error;
    bucket_ = "e2e-" + std::to_string(++serial_) + "-" + std::to_string(::getpid());
  }

  // A root-only credentials file with `secret`, and the daemon's configuration around it.
  std::string config(const std::string& secret, const std::string& extra_upload = "", const std::string& mode = "core") {
    creds_dir_ = std::make_unique<TempDir>();
    const std::string file = *creds_dir_ / "s3-credentials";
    std::ofstream(file) << "[default]\naws_access_key_id = " << g_ceph->access_key() << "\naws_secret_access_key = " << secret << "\n";
    ::chmod(file.c_str(), 0600);
    return R"({"analysis": {"enabled": false}, "defaults": {"upload": ")" + mode + R"("},
               "upload": {"endpoint": ")" + g_ceph->endpoint() + R"(", "bucket": ")" + bucket_ +
           R"(", "region": "default", "credentials_file": ")" + file +
           R"(", "host_id": "e2e-host", "part_bytes": "5M", "max_backoff_s": 2)" + extra_upload + "}}";
  }

  std::optional<UploadRow> row_of(const std::string& id) {
    try {
      return Index(store_, false).get_upload(id);
    } catch (const IndexError&) {
      return std::nullopt;
    }
  }

  // Waits until the upload row of `id` satisfies `cond`. Generous: the uploader runs at SCHED_IDLE,
  // and CI builds beside these tests, so it gets only the CPU nothing else wants (a 60 s bound
  // timed out once while a release build ran at nice 0).
  std::optional<UploadRow> wait_row(const std::string& id, const std::function<bool(const UploadRow&)>& cond,
                                    std::chrono::milliseconds timeout = 180s) {
    std::optional<UploadRow> last;
    wait_until([&] {
      last = row_of(id);
      return last && cond(*last);
    }, timeout);
    return last;
  }

  S3Client client() { return S3Client({g_ceph->endpoint(), "default", bucket_}, {g_ceph->access_key(), g_ceph->secret_key(), ""}); }

  // The object `key` equals the stored core of `rec`, byte for byte.
  void expect_object_is_core(const std::string& key, const DumpRecord& rec) {
    S3Client c = client();
    std::uint64_t size = 0;
    const S3Result h = c.head_object(key, &size);
    ASSERT_TRUE(h.ok) << h.error;
    UniqueFd core(::open((store_ + "/" + rec.path).c_str(), O_RDONLY | O_CLOEXEC));
    ASSERT_TRUE(core) << "the local core is kept after its upload";
    const std::string local = slurp(core.get());
    EXPECT_EQ(size, local.size());
    EXPECT_EQ(size, rec.stored_size);
    UniqueFd got(::memfd_create("object", MFD_CLOEXEC));
    ASSERT_TRUE(c.get_object_to_fd(key, got.get()).ok);
    EXPECT_TRUE(slurp(got.get()) == local) << "the object's bytes differ from the stored core";
  }

  // Objects in the bucket (radosgw-admin bucket stats): no duplicate, no leftover.
  int objects_in_bucket() {
    const auto [st, out] = run_capture({"/bin/sh", "-c", ". /tmp/coredumpd-ceph-" + std::to_string(::getpid()) +
                                                             "/s3.env && radosgw-admin bucket stats --bucket=" + bucket_});
    const auto json = nlohmann::json::parse(out, nullptr, false);
    if (json.is_discarded()) return -1;
    int n = 0;
    for (const auto& [category, u] : json["usage"].items())
      if (category == "rgw.main") n += u.value("num_objects", 0);
    return n;
  }

  std::string bucket_;
  std::unique_ptr<TempDir> creds_dir_;
  static inline int serial_ = 0;
};

TEST_F(Upload, RealCrashCoreIsUploadedAndMatchesTheStoredCore) {
  start_daemon(config(g_ceph->secret_key()));
  pid_t pid = 0;
  // ~12 MiB of random memory: a zstd core of more than two 5 MiB parts (multipart).
  const auto rec = complete_dump_of_crash({"--mode", "segv", "--touch-mib", "12"}, &pid);
  ASSERT_TRUE(rec);
  const auto row = wait_row(rec->id, [](const UploadRow& r) { return r.state == "done"; });
  ASSERT_TRUE(row && row->state == "done") << (row ? row->state + " " + row->last_error : "no row") << daemon_->log();
  EXPECT_EQ(row->object_key, "e2e-host/" + rec->id + (rec->compression == "zstd" ? "/core.zst" : "/core"));
  EXPECT_GT(rec->stored_size, 10u << 20) << "the core should need a multipart upload";
  expect_object_is_core(row->object_key, *rec);
  UniqueFd json(::memfd_create("record", MFD_CLOEXEC));
  ASSERT_TRUE(client().get_object_to_fd(row->record_key, json.get()).ok);
  const auto body = nlohmann::json::parse(slurp(json.get()));
  EXPECT_EQ(body["record"]["id"], rec->id);
  EXPECT_EQ(body["core_key"], row->object_key);
  EXPECT_EQ(objects_in_bucket(), 2);
}

TEST_F(Upload, RadosgwStoppedDuringAnUploadIsRetriedAfterItsRestart) {
  // 2 MB/s: the 12 MiB core takes ~6 s, so radosgw goes away mid-upload.
  start_daemon(config(g_ceph->secret_key(), R"(, "max_bytes_per_second": "2M")"));
  pid_t pid = 0;
  const auto rec = complete_dump_of_crash({"--mode", "segv", "--touch-mib", "12"}, &pid);
  ASSERT_TRUE(rec);
  ASSERT_TRUE(wait_row(rec->id, [](const UploadRow& r) { return !r.upload_id.empty(); }));
  ASSERT_TRUE(g_ceph->stop_rgw());
  const auto failed = wait_row(rec->id, [](const UploadRow& r) { return r.attempts >= 1; });
  ASSERT_TRUE(failed && failed->attempts >= 1) << daemon_->log();
  EXPECT_NE(failed->state, "done");
  EXPECT_FALSE(failed->last_error.empty());
  ASSERT_TRUE(g_ceph->start_rgw());
  const auto row = wait_row(rec->id, [](const UploadRow& r) { return r.state == "done"; }, 120s);
  ASSERT_TRUE(row && row->state == "done") << (row ? row->last_error : "") << daemon_->log();
  expect_object_is_core(row->object_key, *rec);
  EXPECT_EQ(objects_in_bucket(), 2) << "one core and one record: nothing lost, nothing twice";
  EXPECT_GE(count_of(daemon_->log(), "upload of dump " + rec->id + " failed"), 1);
  // The endpoint-wide back-off (daemon/upload/peer_backoff.h): opened by the refused part, closed by a probe.
  EXPECT_GE(count_of(daemon_->log(), "the S3 endpoint is unavailable"), 1) << daemon_->log();
  EXPECT_GE(count_of(daemon_->log(), "the S3 endpoint is available again"), 1) << daemon_->log();
}

TEST_F(Upload, WrongCredentialsAreOneClearErrorAndKeepTheStore) {
  start_daemon(config("not-the-secret"));
  pid_t pid = 0;
  const auto a = complete_dump_of_crash({"--mode", "segv"}, &pid);
  const auto b = complete_dump_of_crash({"--mode", "segv"}, &pid);
  ASSERT_TRUE(a && b);
  for (const auto* rec : {&*a, &*b}) {
    const auto row = wait_row(rec->id, [](const UploadRow& r) { return r.attempts >= 2; });
    ASSERT_TRUE(row) << daemon_->log();
    EXPECT_NE(row->state, "done");
    EXPECT_NE(row->last_error.find("403"), std::string::npos) << row->last_error;
    EXPECT_EQ(::access((store_ + "/" + rec->path).c_str(), F_OK), 0) << "the local core is kept";
  }
  // Four failed attempts at least, one line: the limiter's window is a minute.
  EXPECT_EQ(count_of(daemon_->log(), "refused"), 1) << daemon_->log();
  EXPECT_NE(daemon_->log().find("SignatureDoesNotMatch"), std::string::npos);
  EXPECT_NE(daemon_->log().find("check upload.endpoint"), std::string::npos);
}

TEST_F(Upload, DaemonKilledMidUploadResumesWithoutDuplicate) {
  start_daemon(config(g_ceph->secret_key(), R"(, "max_bytes_per_second": "2M")"));
  pid_t pid = 0;
  const auto rec = complete_dump_of_crash({"--mode", "segv", "--touch-mib", "16"}, &pid);
  ASSERT_TRUE(rec);
  const auto started = wait_row(rec->id, [](const UploadRow& r) { return !r.upload_id.empty(); });
  ASSERT_TRUE(started);
  // At least one part stored before the kill.
  S3Client c = client();
  std::vector<S3Client::Part> parts;
  ASSERT_TRUE(wait_until([&] { return c.list_parts(started->object_key, started->upload_id, &parts).ok && !parts.empty(); }, 30s));
  daemon_->kill_hard();
  restart_daemon(config(g_ceph->secret_key()));
  const auto row = wait_row(rec->id, [](const UploadRow& r) { return r.state == "done"; }, 120s);
  ASSERT_TRUE(row && row->state == "done") << daemon_->log();
  EXPECT_NE(daemon_->log().find("resuming the upload of " + started->object_key), std::string::npos) << daemon_->log();
  expect_object_is_core(row->object_key, *rec);
  EXPECT_EQ(c.list_parts(started->object_key, started->upload_id, &parts).http_status, 404) << "the upload was completed";
  EXPECT_EQ(objects_in_bucket(), 2);
}

TEST_F(Upload, PostgresRestartedLosesNoFleetRow) {
  if (auto why = postgres_unavailable()) GTEST_SKIP() << *why;
  PgServer pg;
  const std::string conninfo = pg.conninfo();
  start_daemon(config(g_ceph->secret_key(), R"(, "fleet_conninfo": ")" + conninfo + R"(")"));
  pid_t pid = 0;
  const auto first = complete_dump_of_crash({"--mode", "segv"}, &pid);
  ASSERT_TRUE(first);
  ASSERT_TRUE(wait_row(first->id, [](const UploadRow& r) { return r.state == "done"; })) << daemon_->log();
  pg.stop();
  const auto second = complete_dump_of_crash({"--mode", "segv"}, &pid);
  ASSERT_TRUE(second);
  const auto waiting = wait_row(second->id, [](const UploadRow& r) { return r.attempts >= 1; });
  ASSERT_TRUE(waiting) << daemon_->log();
  EXPECT_EQ(waiting->state, "fleet") << "the objects went; the row waits for the database";
  EXPECT_NE(waiting->last_error.find("fleet index"), std::string::npos) << waiting->last_error;
  pg.start();
  ASSERT_TRUE(wait_row(second->id, [](const UploadRow& r) { return r.state == "done"; }, 180s)) << daemon_->log();
  FleetIndex fleet(conninfo);
  for (const auto* rec : {&*first, &*second}) {
    const auto f = fleet.find_dump(rec->id);
    ASSERT_TRUE(f) << rec->id;
    EXPECT_EQ(f->host_id, "e2e-host");
    EXPECT_EQ(f->state, "uploaded");
    EXPECT_EQ(f->core_bytes, rec->stored_size);
  }
  EXPECT_EQ(objects_in_bucket(), 4);
  EXPECT_GE(count_of(daemon_->log(), "the fleet index is unavailable"), 1) << daemon_->log();
  EXPECT_GE(count_of(daemon_->log(), "the fleet index is available again"), 1) << daemon_->log();
  EXPECT_EQ(count_of(daemon_->log(), "the S3 endpoint is unavailable"), 0) << "S3 stayed up";
}

}  // namespace
