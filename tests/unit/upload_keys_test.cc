// The upload keys that make the URLs of S3 requests (<endpoint>/<bucket>/<host_id>/<dump id>/...):
// the host id one path segment, never "." or "..", which libcurl's URL parser would resolve (RFC
// 3986 dot segments), so that a key left the bucket; the endpoint a base URL and nothing more.
#include <sched.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "daemon/policy/config.h"
#include "daemon/upload/upload_object.h"

namespace coredumpd {
namespace {

TEST(UploadHostId, DotSegmentsAreRefusedInTheConfiguration) {
  for (const char* id : {".", ".."}) {
    const std::string text = std::string(R"({"upload": {"host_id": ")") + id + "\"}}";
    EXPECT_THROW(apply_config_json("test.json", text, Config{}), ConfigError) << id;
  }
  EXPECT_EQ(apply_config_json("test.json", R"({"upload": {"host_id": "web-1.example"}})", Config{}).upload.host_id,
            "web-1.example");
}

// The hostname is any bytes sethostname(2) was given: made one plain segment.
TEST(UploadHostId, AnOddHostnameBecomesOnePlainSegment) {
  if (::geteuid() != 0) GTEST_SKIP() << "a UTS namespace of its own needs root";
  ASSERT_EQ(::unshare(CLONE_NEWUTS), 0);  // this thread only: the test's own hostname
  const auto id_for = [](const std::string& hostname) {
    EXPECT_EQ(::sethostname(hostname.data(), hostname.size()), 0);
    return upload::host_identity(UploadSettings{}).host_id;
  };
  EXPECT_EQ(id_for("../evil/x \xff"), ".._evil_x__");
  EXPECT_EQ(id_for(".."), "__");
  EXPECT_EQ(id_for("."), "_");
  EXPECT_EQ(id_for("web-1.example_a"), "web-1.example_a");
}

TEST(UploadEndpoint, ABaseUrlOnly) {
  const auto endpoint = [](const std::string& e) {
    return apply_config_json("test.json", R"({"upload": {"endpoint": ")" + e + "\"}}", Config{}).upload.endpoint;
  };
  EXPECT_EQ(endpoint("http://127.0.0.1:7480"), "http://127.0.0.1:7480");
  EXPECT_EQ(endpoint("https://s3.example/prefix/"), "https://s3.example/prefix/");
  EXPECT_EQ(endpoint("https://s3.example/a@b"), "https://s3.example/a@b");  // '@' in the path is a path
  for (const char* bad : {"http://user:secret@s3.example", "http://s3.example/?x=1", "http://s3.example#f", "htp://x"})
    EXPECT_THROW(endpoint(bad), ConfigError) << bad;
}

}  // namespace
}  // namespace coredumpd
