// The daemon's uploader (daemon/upload/uploader.h) when S3 or the fleet index is down: the
// endpoint-wide back-off (daemon/upload/peer_backoff.h) against an S3 endpoint served by the test
// (tests/support/loopback_http.h) and a port nothing listens on.
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "daemon/upload/uploader.h"
#include "tests/integration/uploader_test_support.h"
#include "util/unique_fd.h"

namespace coredumpd {
namespace {

// A store with `n` complete dumps newer than the uploader's origin, and an uploader of them
// (metadata: one record PUT each; 2 workers) against `endpoint`.
struct QueuedDumps {
  QueuedDumps(int n, const std::string& endpoint, const std::string& fleet_conninfo = "") {
    char tmpl[] = "/tmp/cd-uploader-XXXXXX";
    EXPECT_NE(::mkdtemp(tmpl), nullptr);
    store = tmpl;
    index = std::make_unique<Index>(store, /*writable=*/true);
    for (int i = 0; i < n; ++i) {
      char id[33];
      std::snprintf(id, sizeof id, "%032x", 0xb0000 + i);
      ids.push_back(test::insert_dump(*index, store, id, "queued", 100 + i).id);
    }
    config = test::upload_config(endpoint, UploadMode::Metadata);
    config->upload.max_backoff = std::chrono::seconds(2);
    config->upload.fleet_conninfo = fleet_conninfo;
    dirfd = UniqueFd(::open(store.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    test::set_test_credentials();
    auto c = config;
    uploader = std::make_unique<upload::Uploader>(*index, dirfd.get(), stats, [c] { return c; }, 2);
    uploader->wake();
  }
  ~QueuedDumps() {
    uploader.reset();
    index.reset();
    std::filesystem::remove_all(store);
  }
  // The most requests a breaker lets through since the start: the 2 workers' first, then one probe
  // per back-off (at least 0.5 s, then at least 1 s: max_backoff_s 2 jittered), and one of slack.
  // Without it, every row tries: 50 at once, and again after each row's back-off.
  int breaker_bound() const {
    return 4 + static_cast<int>(std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - started).count());
  }
  // The rows' attempts, summed; and how many rows are in `state`.
  std::int64_t attempts() const {
    std::int64_t sum = 0;
    for (const auto& id : ids)
      if (const auto row = index->get_upload(id)) sum += row->attempts;
    return sum;
  }
  int in_state(const std::string& state) const {
    int n = 0;
    for (const auto& id : ids)
      if (const auto row = index->get_upload(id); row && row->state == state) ++n;
    return n;
  }
  // Waits up to `seconds` for every row to be in `state`.
  bool wait_all(const std::string& state, int seconds) const {
    for (int i = 0; i < seconds * 10; ++i) {
      if (in_state(state) == static_cast<int>(ids.size())) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  }

  std::string store;
  std::vector<std::string> ids;
  std::unique_ptr<Index> index;
  std::shared_ptr<Config> config;
  UniqueFd dirfd;
  Stats stats;
  std::unique_ptr<upload::Uploader> uploader;
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
};

// An endpoint that answers 503 SlowDown to everything: before, each of the 50 queued rows made its
// own failing request on its own back-off (50 at once, then 50 more every 1, 2, 2 s...). Now the
// first failure opens the endpoint's breaker: a probe after about 1 s, then 2 s; the rows not tried
// keep attempts 0. Once it answers, the first success closes it and all 50 go.
TEST(Uploader, AnEndpointDownGetsOneProbePerBackOffNotARequestPerRow) {
  std::atomic<bool> down{true};
  std::atomic<int> while_down{0};
  test::LoopbackHttp s3([&](int fd, const std::string&) {
    if (down) {
      ++while_down;
      const std::string xml = "<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>";
      test::send_all(fd, "HTTP/1.1 503 Slow Down\r\nContent-Length: " + std::to_string(xml.size()) + "\r\n\r\n" + xml);
      return;
    }
    test::answer_ok(fd);
  });
  QueuedDumps q(50, s3.endpoint());
  for (int i = 0; i < 100 && while_down == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_GT(while_down.load(), 0) << "nothing reached the endpoint";
  std::this_thread::sleep_for(std::chrono::seconds(3));
  // 2 workers' first requests, then probes after ~1, 2, 2 s (jittered down to half). Without the
  // breaker: at least 50 (every row once), then more.
  const int failed = while_down;
  RecordProperty("requests_while_down", failed);
  EXPECT_LE(failed, q.breaker_bound());
  EXPECT_EQ(q.stats.get(Outcome::UploadPeerDown), 1u);
  // Only the rows tried were charged, one attempt per failed request (a probe on its way may not
  // be recorded yet).
  EXPECT_LE(q.attempts(), failed);
  EXPECT_GE(q.attempts(), failed - 2);
  EXPECT_EQ(q.in_state("queued"), 50);

  down = false;
  EXPECT_TRUE(q.wait_all("done", 30)) << q.in_state("done") << " of 50 done";
  EXPECT_EQ(q.attempts(), while_down.load()) << "a row not tried was charged an attempt";
  EXPECT_EQ(q.stats.get(Outcome::Uploaded), 50u);
  EXPECT_EQ(q.stats.get(Outcome::UploadPeerDown), 1u);
}

// Nothing listens on the endpoint's port (connection refused): the same, counted by the rows'
// attempts, since a refused connection reaches no server to count it.
TEST(Uploader, AnEndpointRefusingConnectionsIsProbedNotStormed) {
  std::string endpoint;
  {
    test::LoopbackHttp gone([](int, const std::string&) {});
    endpoint = gone.endpoint();
  }  // its port now refuses connections
  QueuedDumps q(50, endpoint);
  for (int i = 0; i < 100 && q.attempts() == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_GT(q.attempts(), 0) << "no attempt recorded";
  std::this_thread::sleep_for(std::chrono::seconds(2));
  RecordProperty("attempts", static_cast<int>(q.attempts()));
  EXPECT_LE(q.attempts(), q.breaker_bound());
  EXPECT_EQ(q.in_state("queued"), 50);
  EXPECT_EQ(q.stats.get(Outcome::UploadPeerDown), 1u);
}

// S3 answers, the fleet index's server is down (nothing on its port): every record still goes to
// S3 (the fleet's breaker holds only the "fleet" step), and the fleet index gets probes, not 50
// connection attempts at each back-off.
TEST(Uploader, AFleetIndexDownDoesNotStopS3) {
  test::LoopbackHttp s3([](int fd, const std::string&) {
    test::answer_ok(fd);
  });
  std::string port;
  {
    test::LoopbackHttp gone([](int, const std::string&) {});
    port = gone.endpoint().substr(gone.endpoint().rfind(':') + 1);
  }
  QueuedDumps q(50, s3.endpoint(), "host=127.0.0.1 port=" + port + " dbname=fleet connect_timeout=2");
  EXPECT_TRUE(q.wait_all("fleet", 30)) << q.in_state("fleet") << " of 50 past S3";
  std::this_thread::sleep_for(std::chrono::seconds(1));
  RecordProperty("attempts", static_cast<int>(q.attempts()));
  EXPECT_LE(q.attempts(), q.breaker_bound()) << "each row tried the fleet index on its own";
  EXPECT_EQ(q.stats.get(Outcome::UploadPeerDown), 1u);
  EXPECT_EQ(q.in_state("fleet"), 50);
}

}  // namespace
}  // namespace coredumpd
