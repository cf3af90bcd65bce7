// The daemon's uploader (daemon/upload/uploader.h) on a real index, against an S3 endpoint served
// by the test (tests/support/loopback_http.h): what the queue does when the store (a small tmpfs)
// fills up between a request and the row that records it, and when S3 or the fleet index is down
// (the endpoint-wide back-off, daemon/upload/peer_backoff.h).
#include <fcntl.h>
#include <sys/mount.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "daemon/upload/uploader.h"
#include "store/delete_dump.h"
#include "store/index.h"
#include "tests/support/loopback_http.h"
#include "util/time.h"
#include "util/unique_fd.h"

namespace coredumpd {
namespace {

// Writes zeros to `path` until the filesystem is full.
void fill_up(const std::string& path) {
  std::ofstream f(path, std::ios::binary);
  const std::string block(64 * 1024, '\0');
  while (f.write(block.data(), static_cast<std::streamsize>(block.size())) && f.flush()) {
  }
}

// A tmpfs of `options` on a fresh directory under /tmp, unmounted and removed on destruction.
struct TmpfsDir {
  explicit TmpfsDir(const char* options) {
    char tmpl[] = "/tmp/cd-uploader-XXXXXX";
    if (::mkdtemp(tmpl) == nullptr) return;
    path = tmpl;
    if (::mount("tmpfs", tmpl, "tmpfs", 0, options) != 0) error = std::strerror(errno);
  }
  ~TmpfsDir() {
    if (error.empty()) ::umount2(path.c_str(), MNT_DETACH);
    ::rmdir(path.c_str());
  }
  std::string path, error = "";
};

// The record went to S3, then the index could not record it (ENOSPC: SQLITE_FULL). The row stays
// as last saved and is tried again, after a back-off: before, the worker took it again at once,
// and sent the same record to S3 as fast as the endpoint answered, for as long as the disk was full.
TEST(Uploader, AFullStoreBacksOffAndLosesNothing) {
  if (::geteuid() != 0) GTEST_SKIP() << "mounting a tmpfs needs root";
  const TmpfsDir dir("size=4m,mode=0700");
  ASSERT_TRUE(!dir.path.empty() && dir.error.empty()) << dir.path << ": " << dir.error;
  const std::string store = dir.path;
  const std::string filler = store + "/filler";

  std::atomic<int> record_puts{0};
  test::LoopbackHttp s3([&](int fd, const std::string& request) {
    if (request.rfind("PUT ", 0) == 0 && request.find("/record.json ") != std::string::npos && ++record_puts == 1)
      fill_up(filler);  // the store is full from the first record on
    test::send_all(fd, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nETag: \"e\"\r\n\r\n");
  });
  ::setenv("AWS_ACCESS_KEY_ID", "AKIDTEST", 1);
  ::setenv("AWS_SECRET_ACCESS_KEY", "secret", 1);

  {
    Index index(store, /*writable=*/true);
    DumpRecord r;
    r.id = "0000000000000000000000000000f011";
    r.state = DumpState::Complete;
    r.timestamp_us = now_epoch_us() + 60'000'000;  // after the uploader's origin (its first look)
    r.pid = 7;
    r.comm = "full";
    index.insert(r);

    auto config = std::make_shared<Config>();
    config->upload.endpoint = s3.endpoint();
    config->upload.host_id = "h1";
    config->upload.max_backoff = std::chrono::seconds(4);
    config->defaults.upload = UploadMode::Metadata;
    const UniqueFd dirfd(::open(store.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    Stats stats;
    upload::Uploader uploader(index, dirfd.get(), stats, [config] { return config; }, 1);
    uploader.wake();
    for (int i = 0; i < 600 && record_puts == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    ASSERT_GT(record_puts.load(), 0) << "the record never reached the endpoint";
    std::this_thread::sleep_for(std::chrono::seconds(3));
    // Back-off 1 s, 2 s: the first PUT and at most two more; a worker that does not wait sends hundreds.
    EXPECT_LE(record_puts.load(), 4);
    const int while_full = record_puts;

    std::filesystem::remove(filler);
    std::optional<UploadRow> row;
    for (int i = 0; i < 600; ++i) {  // the next attempt, after at most max_backoff: here 4 s
      row = index.get_upload(r.id);
      if (row && row->state == "done") break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    ASSERT_TRUE(row);
    EXPECT_EQ(row->state, "done") << row->last_error;
    EXPECT_GT(record_puts.load(), while_full);
    uploader.stop();
  }
}

// The store fills up between creating a multipart upload and recording its id: the id would be
// lost (never resumed, never aborted) and each retry would leave one more upload whose parts S3
// keeps. Each one is aborted, and once there is room the core goes up in one upload.
TEST(Uploader, AMultipartUploadTheStoreCannotRecordIsAborted) {
  if (::geteuid() != 0) GTEST_SKIP() << "mounting a tmpfs needs root";
  const TmpfsDir dir("size=4m,mode=0700");
  ASSERT_TRUE(!dir.path.empty() && dir.error.empty()) << dir.path << ": " << dir.error;
  const std::string store = dir.path;
  const std::string filler = store + "/filler";
  std::atomic<int> created{0}, aborted{0}, completed{0};
  std::atomic<bool> full{true};
  test::LoopbackHttp s3([&](int fd, const std::string& request) {
    const std::string line = request.substr(0, request.find('\r'));
    if (line.rfind("POST ", 0) == 0 && line.find("?uploads") != std::string::npos) {
      const int n = ++created;
      if (full) fill_up(filler);  // the store is full when the new upload id is to be recorded
      const std::string xml = "<InitiateMultipartUploadResult><UploadId>U" + std::to_string(n) +
                              "</UploadId></InitiateMultipartUploadResult>";
      test::send_all(fd, "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(xml.size()) + "\r\n\r\n" + xml);
      return;
    }
    if (line.rfind("DELETE ", 0) == 0 && line.find("uploadId=U") != std::string::npos) ++aborted;
    if (line.rfind("POST ", 0) == 0 && line.find("uploadId=U") != std::string::npos) ++completed;
    test::send_all(fd, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nETag: \"e\"\r\n\r\n");
  });
  ::setenv("AWS_ACCESS_KEY_ID", "AKIDTEST", 1);
  ::setenv("AWS_SECRET_ACCESS_KEY", "secret", 1);
  {
    Index index(store, /*writable=*/true);
    DumpRecord r;
    r.id = "000000000000000000000000000f0115";
    r.state = DumpState::Complete;
    r.timestamp_us = now_epoch_us() + 60'000'000;
    r.pid = 9;
    r.comm = "full-multipart";
    r.path = r.id + ".core";
    std::ofstream(store + "/" + r.path) << std::string(4096, 'c');
    r.core_size = r.stored_size = 4096;
    index.insert(r);

    auto config = std::make_shared<Config>();
    config->upload.endpoint = s3.endpoint();
    config->upload.host_id = "h1";
    config->upload.part_bytes = 1024;  // 4 parts (the configuration's 5 MiB floor is not checked here)
    config->upload.max_backoff = std::chrono::seconds(1);
    config->defaults.upload = UploadMode::Core;
    const UniqueFd dirfd(::open(store.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    Stats stats;
    upload::Uploader uploader(index, dirfd.get(), stats, [config] { return config; }, 1);
    uploader.wake();
    for (int i = 0; i < 600 && created < 2; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    ASSERT_GE(created.load(), 2) << "no retry of the upload's creation";
    full = false;
    std::filesystem::remove(filler);
    std::optional<UploadRow> row;
    for (int i = 0; i < 600; ++i) {
      row = index.get_upload(r.id);
      if (row && row->state == "done") break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    uploader.stop();
    ASSERT_TRUE(row);
    EXPECT_EQ(row->state, "done") << row->last_error;
    EXPECT_EQ(completed.load(), 1);
    // Every upload created but the one completed was aborted.
    EXPECT_EQ(aborted.load(), created.load() - 1);
  }
}

// `dumpctl delete` of a dump whose core is half uploaded (a multipart upload begun, a part
// refused): the row ends "skipped" (never resurrected, the queue goes on) and the multipart upload
// is aborted: nothing else would ever free its stored parts.
TEST(Uploader, ADumpDeletedMidMultipartAbortsTheUpload) {
  char tmpl[] = "/tmp/cd-uploader-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string store = tmpl;
  std::atomic<int> parts{0}, aborts{0};
  test::LoopbackHttp s3([&](int fd, const std::string& request) {
    const std::string line = request.substr(0, request.find('\r'));
    if (line.rfind("POST ", 0) == 0 && line.find("?uploads") != std::string::npos) {
      const std::string xml = "<InitiateMultipartUploadResult><UploadId>U1</UploadId></InitiateMultipartUploadResult>";
      test::send_all(fd, "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(xml.size()) + "\r\n\r\n" + xml);
    } else if (line.rfind("PUT ", 0) == 0 && line.find("partNumber=") != std::string::npos) {
      ++parts;
      test::send_all(fd, "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\n\r\n");
    } else {
      if (line.rfind("DELETE ", 0) == 0 && line.find("uploadId=U1") != std::string::npos) ++aborts;
      test::send_all(fd, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
    }
  });
  ::setenv("AWS_ACCESS_KEY_ID", "AKIDTEST", 1);
  ::setenv("AWS_SECRET_ACCESS_KEY", "secret", 1);
  {
    Index index(store, /*writable=*/true);
    DumpRecord r;
    r.id = "00000000000000000000000000de1e7e";
    r.state = DumpState::Complete;
    r.timestamp_us = now_epoch_us() + 60'000'000;
    r.pid = 8;
    r.comm = "deleted";
    r.path = r.id + ".core";
    std::ofstream(store + "/" + r.path) << std::string(4096, 'c');
    r.core_size = r.stored_size = 4096;
    index.insert(r);

    auto config = std::make_shared<Config>();
    config->upload.endpoint = s3.endpoint();
    config->upload.host_id = "h1";
    config->upload.part_bytes = 1024;  // 4 parts (the configuration's 5 MiB floor is not checked here)
    config->defaults.upload = UploadMode::Core;
    const UniqueFd dirfd(::open(store.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    Stats stats;
    upload::Uploader uploader(index, dirfd.get(), stats, [config] { return config; }, 1);
    uploader.wake();
    for (int i = 0; i < 600 && parts == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    ASSERT_GT(parts.load(), 0) << "no part reached the endpoint";
    EXPECT_EQ(delete_dump(index, dirfd.get(), r.id, {}).status, DeleteStatus::Deleted);
    std::optional<UploadRow> row;
    for (int i = 0; i < 600; ++i) {
      row = index.get_upload(r.id);
      if (row && row->state == "skipped") break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    uploader.stop();
    ASSERT_TRUE(row);
    EXPECT_EQ(row->state, "skipped") << row->last_error;
    EXPECT_EQ(aborts.load(), 1);
    EXPECT_TRUE(row->upload_id.empty()) << row->upload_id;
    EXPECT_FALSE(index.get(r.id));
  }
  std::filesystem::remove_all(store);
}

// A store with `n` complete dumps newer than the uploader's origin, and an uploader of them
// (metadata: one record PUT each; 2 workers) against `endpoint`.
struct QueuedDumps {
  QueuedDumps(int n, const std::string& endpoint, const std::string& fleet_conninfo = "") {
    char tmpl[] = "/tmp/cd-uploader-XXXXXX";
    EXPECT_NE(::mkdtemp(tmpl), nullptr);
    store = tmpl;
    index = std::make_unique<Index>(store, /*writable=*/true);
    for (int i = 0; i < n; ++i) {
      DumpRecord r;
      char id[33];
      std::snprintf(id, sizeof id, "%032x", 0xb0000 + i);
      r.id = id;
      r.state = DumpState::Complete;
      r.timestamp_us = now_epoch_us() + 60'000'000;  // after the uploader's origin (its first look)
      r.pid = 100 + i;
      r.comm = "queued";
      index->insert(r);
      ids.push_back(r.id);
    }
    config = std::make_shared<Config>();
    config->upload.endpoint = endpoint;
    config->upload.host_id = "h1";
    config->upload.max_backoff = std::chrono::seconds(2);
    config->upload.fleet_conninfo = fleet_conninfo;
    config->defaults.upload = UploadMode::Metadata;
    dirfd = UniqueFd(::open(store.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    ::setenv("AWS_ACCESS_KEY_ID", "AKIDTEST", 1);
    ::setenv("AWS_SECRET_ACCESS_KEY", "secret", 1);
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
    test::send_all(fd, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nETag: \"e\"\r\n\r\n");
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
    test::send_all(fd, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nETag: \"e\"\r\n\r\n");
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
