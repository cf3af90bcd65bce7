// The S3 client (s3/s3_client.h) against a real radosgw (tests/support/ceph_cluster.h): one
// cluster for the whole program. Skipped, saying why, when the Ceph packages are missing.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>

#include <gtest/gtest.h>

#include "s3/s3_client.h"
#include "tests/support/ceph_cluster.h"
#include "tests/support/test_support.h"
#include "util/unique_fd.h"

namespace coredumpd {
namespace {

test::CephCluster* g_ceph = nullptr;
std::string g_ceph_error;

class CephEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    if (test::CephCluster::unavailable()) return;
    g_ceph = new test::CephCluster(SCRIPTS_DIR);
    g_ceph_error = g_ceph->start();
  }
  void TearDown() override {
    delete g_ceph;
    g_ceph = nullptr;
  }
};
const auto* const kEnv = ::testing::AddGlobalTestEnvironment(new CephEnvironment);

#define REQUIRE_CEPH()                                                                   \
  do {                                                                                   \
    if (auto why = test::CephCluster::unavailable()) GTEST_SKIP() << *why;               \
    ASSERT_TRUE(g_ceph && g_ceph_error.empty()) << g_ceph_error;                         \
  } while (0)

S3Location where(const std::string& bucket) { return {g_ceph->endpoint(), "default", bucket}; }
S3Credentials creds() { return {g_ceph->access_key(), g_ceph->secret_key(), ""}; }

// A memfd of `bytes` pseudo-random bytes (incompressible, as a core's .zst is).
UniqueFd random_file(std::uint64_t bytes, unsigned seed) {
  UniqueFd fd(::memfd_create("s3-test", MFD_CLOEXEC));
  std::mt19937_64 rng(seed);
  std::string block(1 << 20, '\0');
  for (std::uint64_t done = 0; done < bytes;) {
    for (std::size_t i = 0; i + 8 <= block.size(); i += 8) {
      const std::uint64_t v = rng();
      std::memcpy(block.data() + i, &v, 8);
    }
    const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(block.size(), bytes - done));
    EXPECT_EQ(::write(fd.get(), block.data(), n), static_cast<ssize_t>(n));
    done += n;
  }
  return fd;
}

std::string contents(int fd) {
  struct stat st {};
  ::fstat(fd, &st);
  std::string s(static_cast<std::size_t>(st.st_size), '\0');
  EXPECT_EQ(::pread(fd, s.data(), s.size(), 0), static_cast<ssize_t>(s.size()));
  return s;
}

TEST(S3Client, PutHeadGetDelete) {
  REQUIRE_CEPH();
  S3Client c(where("put-get"), creds());
  {
    const S3Result b = c.create_bucket();
    ASSERT_TRUE(b.ok) << b.http_status << " " << b.error;
  }
  ASSERT_TRUE(c.create_bucket().ok) << "a second create of our own bucket is success";
  const std::string body = R"({"id":"0123","signal":11})";
  const S3Result put = c.put_object("host-a/0123.json", body, "application/json");
  ASSERT_TRUE(put.ok) << put.error;
  std::uint64_t size = 0;
  ASSERT_TRUE(c.head_object("host-a/0123.json", &size).ok);
  EXPECT_EQ(size, body.size());
  UniqueFd out(::memfd_create("get", MFD_CLOEXEC));
  ASSERT_TRUE(c.get_object_to_fd("host-a/0123.json", out.get()).ok);
  EXPECT_EQ(contents(out.get()), body);

  // A key with characters that need escaping round-trips.
  ASSERT_TRUE(c.put_object("host a/x+y=z.json", "1", "application/json").ok);
  ASSERT_TRUE(c.head_object("host a/x+y=z.json", &size).ok);

  ASSERT_TRUE(c.delete_object("host-a/0123.json").ok);
  const S3Result gone = c.head_object("host-a/0123.json", &size);
  EXPECT_FALSE(gone.ok);
  EXPECT_EQ(gone.http_status, 404);
  EXPECT_FALSE(gone.retryable);
  UniqueFd out2(::memfd_create("get", MFD_CLOEXEC));
  const S3Result missing = c.get_object_to_fd("host-a/0123.json", out2.get());
  EXPECT_EQ(missing.http_status, 404);
  EXPECT_NE(missing.error.find("NoSuchKey"), std::string::npos) << missing.error;
  EXPECT_EQ(contents(out2.get()), "") << "an error reply is never written into the object's file";
}

TEST(S3Client, PutFromFdSendsTheRangeOnly) {
  REQUIRE_CEPH();
  S3Client c(where("from-fd"), creds());
  {
    const S3Result b = c.create_bucket();
    ASSERT_TRUE(b.ok) << b.http_status << " " << b.error;
  }
  const UniqueFd in = random_file(3 << 20, 1);
  ASSERT_TRUE(c.put_object_from_fd("part", in.get(), 1000, 2 << 20).ok);
  UniqueFd out(::memfd_create("get", MFD_CLOEXEC));
  ASSERT_TRUE(c.get_object_to_fd("part", out.get()).ok);
  EXPECT_EQ(contents(out.get()), contents(in.get()).substr(1000, 2 << 20));
}

TEST(S3Client, MultipartResumesFromListedParts) {
  REQUIRE_CEPH();
  S3Client c(where("multipart"), creds());
  {
    const S3Result b = c.create_bucket();
    ASSERT_TRUE(b.ok) << b.http_status << " " << b.error;
  }
  constexpr std::uint64_t kPart = 5 << 20, kSize = 3 * kPart + 12345;
  const UniqueFd in = random_file(kSize, 2);
  std::string id;
  ASSERT_TRUE(c.create_multipart("core.zst", &id).ok);
  ASSERT_FALSE(id.empty());
  std::string etag;
  ASSERT_TRUE(c.upload_part("core.zst", id, 1, in.get(), 0, kPart, &etag).ok);
  ASSERT_TRUE(c.upload_part("core.zst", id, 2, in.get(), kPart, kPart, &etag).ok);
  EXPECT_FALSE(etag.empty());

  // A second client (a restarted daemon) lists what is there and sends the rest.
  S3Client resumed(where("multipart"), creds());
  std::vector<S3Client::Part> parts;
  ASSERT_TRUE(resumed.list_parts("core.zst", id, &parts).ok);
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[0].number, 1);
  EXPECT_EQ(parts[1].size, kPart);
  EXPECT_EQ(parts[1].etag, etag);
  for (int n = 3; n <= 4; ++n) {
    S3Client::Part p{n, "", 0};
    const std::uint64_t off = (n - 1) * kPart;
    ASSERT_TRUE(resumed.upload_part("core.zst", id, n, in.get(), off, std::min(kPart, kSize - off), &p.etag).ok);
    parts.push_back(p);
  }
  const S3Result done = resumed.complete_multipart("core.zst", id, parts);
  ASSERT_TRUE(done.ok) << done.error;
  std::uint64_t size = 0;
  ASSERT_TRUE(resumed.head_object("core.zst", &size).ok);
  EXPECT_EQ(size, kSize);
  UniqueFd out(::memfd_create("get", MFD_CLOEXEC));
  ASSERT_TRUE(resumed.get_object_to_fd("core.zst", out.get()).ok);
  EXPECT_TRUE(contents(out.get()) == contents(in.get()));
  // The completed upload is gone: listing it is 404 (the uploader's "start again" signal).
  EXPECT_EQ(resumed.list_parts("core.zst", id, &parts).http_status, 404);

  std::string aborted;
  ASSERT_TRUE(c.create_multipart("aborted", &aborted).ok);
  ASSERT_TRUE(c.abort_multipart("aborted", aborted).ok);
  EXPECT_EQ(c.list_parts("aborted", aborted, &parts).http_status, 404);
}

TEST(S3Client, WrongSecretIs403AndNotRetryable) {
  REQUIRE_CEPH();
  S3Credentials bad = creds();
  bad.secret_access_key = "wrong";
  S3Client c(where("forbidden"), bad);
  const S3Result r = c.put_object("x", "y", "text/plain");
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.http_status, 403);
  EXPECT_FALSE(r.retryable);
  EXPECT_NE(r.error.find("SignatureDoesNotMatch"), std::string::npos) << r.error;
}

TEST(S3Client, NoEndpointIsRetryable) {
  REQUIRE_CEPH();
  S3Client c({"http://127.0.0.1:1", "default", "b"}, creds());
  const S3Result r = c.put_object("x", "y", "text/plain");
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.http_status, 0);
  EXPECT_TRUE(r.retryable);
  EXPECT_FALSE(r.error.empty());
}

TEST(S3Credentials, FileMustBeRootOnly) {
  test::TempDir dir;
  const std::string file = dir / "creds";
  std::ofstream(file) << "[default]\naws_access_key_id = AK\naws_secret_access_key = SK\n";
  ::chmod(file.c_str(), 0644);
  std::string why;
  EXPECT_FALSE(load_s3_credentials(file, &why));
  EXPECT_NE(why.find("refused: mode 0644"), std::string::npos) << why;
  ::chmod(file.c_str(), 0600);
  const auto c = load_s3_credentials(file, &why);
  ASSERT_TRUE(c) << why;
  EXPECT_EQ(c->access_key_id, "AK");
  EXPECT_EQ(c->secret_access_key, "SK");
  std::ofstream(file) << "[other]\naws_access_key_id = AK\n";
  EXPECT_FALSE(load_s3_credentials(file, &why));
  EXPECT_NE(why.find("no profile [default]"), std::string::npos) << why;
}

TEST(S3Credentials, EnvironmentThenSharedFile) {
  test::TempDir dir;
  ::setenv("AWS_ACCESS_KEY_ID", "ENVKEY", 1);
  ::setenv("AWS_SECRET_ACCESS_KEY", "ENVSECRET", 1);
  std::string why;
  auto c = load_s3_credentials("", &why);
  ASSERT_TRUE(c) << why;
  EXPECT_EQ(c->access_key_id, "ENVKEY");
  ::unsetenv("AWS_ACCESS_KEY_ID");
  ::unsetenv("AWS_SECRET_ACCESS_KEY");
  std::ofstream(dir / "shared") << "[ci]\naws_access_key_id = SHARED\naws_secret_access_key = S\n";
  ::setenv("AWS_SHARED_CREDENTIALS_FILE", (dir / "shared").c_str(), 1);
  ::setenv("AWS_PROFILE", "ci", 1);
  c = load_s3_credentials("", &why);
  ::unsetenv("AWS_SHARED_CREDENTIALS_FILE");
  ::unsetenv("AWS_PROFILE");
  ASSERT_TRUE(c) << why;
  EXPECT_EQ(c->access_key_id, "SHARED");
}

}  // namespace
}  // namespace coredumpd
