// The S3 client (s3/s3_client.h) against a hostile endpoint: a loopback server in this program that
// answers each request with what a broken or malicious S3 could send (radosgw cannot be made to).
// The server is tests/support/loopback_http.h.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <fstream>
#include <functional>
#include <future>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "s3/s3_client.h"
#include "tests/support/loopback_http.h"
#include "util/unique_fd.h"

namespace coredumpd {
namespace {

S3Credentials creds() { return {"AKIDHOSTILE", "secret-never-sent", ""}; }

// A 200 whose body never ends: the client keeps at most 1 MiB of a reply, and must also stop
// reading it (a worker that reads for ever is a worker lost). The server counts what it could
// send before the client hung up; it gives up itself at 256 MiB.
TEST(S3Hostile, EndlessReplyIsCutShort) {
  std::atomic<std::uint64_t> sent{0};
  std::atomic<bool> client_hung_up{false};
  S3Result r;
  {
    test::LoopbackHttp server([&](int fd, const std::string&) {
      test::send_all(fd, "HTTP/1.1 200 OK\r\nContent-Type: application/xml\r\n\r\n<ListPartsResult>");
      const std::string chunk(64 * 1024, ' ');
      while (sent < (256u << 20)) {
        if (!test::send_all(fd, chunk)) {
          client_hung_up = true;
          return;
        }
        sent += chunk.size();
      }
    });
    S3Client c(S3Location{server.endpoint(), "us-east-1", "b"}, creds());
    std::vector<S3Client::Part> parts;
    r = c.list_parts("k", "id", &parts);
  }  // the server's thread has finished its reply
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(r.retryable) << r.error;
  EXPECT_NE(r.error.find("larger than"), std::string::npos) << r.error;
  EXPECT_TRUE(client_hung_up) << "the client read all " << sent << " bytes";
  // The cap (1 MiB) plus what the loopback socket buffers hold.
  EXPECT_LT(sent.load(), 32u << 20);
}

// The same for an object fetched into a file (`dumpctl fleet fetch`): bounded by the size the
// fleet index recorded, not by the disk.
TEST(S3Hostile, EndlessObjectStopsAtItsLimit) {
  std::atomic<std::uint64_t> sent{0};
  S3Result r;
  const UniqueFd file(::memfd_create("fetched", MFD_CLOEXEC));
  {
    test::LoopbackHttp server([&](int fd, const std::string&) {
      test::send_all(fd, "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n\r\n");
      const std::string chunk(64 * 1024, 'c');
      while (sent < (256u << 20) && test::send_all(fd, chunk)) sent += chunk.size();
    });
    S3Client c(S3Location{server.endpoint(), "us-east-1", "b"}, creds());
    r = c.get_object_to_fd("k", file.get(), 3 << 20);
  }
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(r.retryable) << r.error;
  EXPECT_NE(r.error.find("larger than 3145728 bytes"), std::string::npos) << r.error;
  struct stat st {};
  ASSERT_EQ(::fstat(file.get(), &st), 0);
  EXPECT_LE(st.st_size, 3 << 20);
  EXPECT_LT(sent.load(), 32u << 20);
}

// A 3xx to another host is not followed: the signed request (and the access key in it) goes
// nowhere but the configured endpoint, and the redirect is an error the operator sees.
TEST(S3Hostile, RedirectElsewhereIsNotFollowed) {
  test::LoopbackHttp elsewhere([](int fd, const std::string&) {
    test::send_all(fd, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
  });
  const std::string to = elsewhere.endpoint() + "/b/k";
  test::LoopbackHttp server([&](int fd, const std::string&) {
    test::send_all(fd, "HTTP/1.1 307 Temporary Redirect\r\nLocation: " + to + "\r\nContent-Length: 0\r\n\r\n");
  });
  S3Client c(S3Location{server.endpoint(), "us-east-1", "b"}, creds());
  const S3Result r = c.put_object("k", "{}", "application/json");
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.http_status, 307);
  EXPECT_FALSE(r.retryable);
  EXPECT_EQ(elsewhere.requests(), 0);
}

// A server that takes the request and never answers: the daemon's stop (set_cancel) ends the
// request; nothing waits for the 60 s low-speed limit.
TEST(S3Hostile, SilentServerIsCancelled) {
  std::atomic<bool> release{false};
  test::LoopbackHttp server([&](int, const std::string&) {
    while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  });
  S3Client c(S3Location{server.endpoint(), "us-east-1", "b"}, creds());
  c.set_cancel([&] { return server.requests() > 0; });  // stopped once the request waits on the server
  const S3Result r = c.put_object("k", "{}", "application/json");
  release = true;
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.error, "cancelled");
  EXPECT_FALSE(r.retryable);
}

// A credentials file that is a FIFO (a typo, a path reused): open() of a FIFO with no writer waits
// for ever, in an upload worker the daemon's stop then joins. It is refused at once instead.
TEST(S3CredentialsHostile, AFifoIsRefusedWithoutWaiting) {
  char tmpl[] = "/tmp/cd-creds-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string fifo = std::string(tmpl) + "/creds";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::string why;
  auto loaded = std::async(std::launch::async, [&] { return load_s3_credentials(fifo, &why); });
  const bool returned = loaded.wait_for(std::chrono::seconds(30)) == std::future_status::ready;
  if (!returned) {  // lets the stuck open() return, so that the test ends
    const UniqueFd writer(::open(fifo.c_str(), O_WRONLY | O_CLOEXEC));
    loaded.wait();
  }
  EXPECT_TRUE(returned) << "load_s3_credentials() waited on the FIFO";
  EXPECT_FALSE(loaded.get());
  EXPECT_NE(why.find("not a regular file"), std::string::npos) << why;
  ::unlink(fifo.c_str());
  ::rmdir(tmpl);
}

// A configured file that is huge (the wrong path: a log, a core): refused by its size, not read
// into memory whole.
TEST(S3CredentialsHostile, AHugeFileIsRefusedBySize) {
  char tmpl[] = "/tmp/cd-creds-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string file = std::string(tmpl) + "/creds";
  {
    std::ofstream(file) << "[default]\naws_access_key_id = AK\naws_secret_access_key = SK\n";
    ASSERT_EQ(::truncate(file.c_str(), off_t{64} << 30), 0);  // 64 GiB, sparse
    ::chmod(file.c_str(), 0600);
  }
  std::string why;
  EXPECT_FALSE(load_s3_credentials(file, &why));
  EXPECT_NE(why.find("larger than"), std::string::npos) << why;
  ::unlink(file.c_str());
  ::rmdir(tmpl);
}

}  // namespace
}  // namespace coredumpd
