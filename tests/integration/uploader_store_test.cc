// The daemon's uploader (daemon/upload/uploader.h) on a real index, against an S3 endpoint served
// by the test: what the queue does when the store (a small tmpfs) fills up between a request and
// the row that records it, and when a dump is deleted mid-upload.
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <thread>

#include <gtest/gtest.h>

#include "daemon/upload/uploader.h"
#include "store/delete_dump.h"
#include "tests/integration/uploader_test_support.h"
#include "util/unique_fd.h"

namespace coredumpd {
namespace {

using test::answer_initiate;
using test::answer_ok;

// An uploader of the dumps in `store` (one worker), started and woken.
struct StoreUploader {
  StoreUploader(const std::string& store, Index& index, std::shared_ptr<Config> config)
      : dirfd(::open(store.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)),
        uploader(index, dirfd.get(), stats, [config] { return config; }, 1) {
    test::set_test_credentials();
    uploader.wake();
  }
  UniqueFd dirfd;
  Stats stats;
  upload::Uploader uploader;
};

// The record went to S3, then the index could not record it (ENOSPC: SQLITE_FULL). The row stays
// as last saved and is tried again, after a back-off: before, the worker took it again at once,
// and sent the same record to S3 as fast as the endpoint answered, for as long as the disk was full.
TEST(Uploader, AFullStoreBacksOffAndLosesNothing) {
  if (::geteuid() != 0) GTEST_SKIP() << "mounting a tmpfs needs root";
  const test::TmpfsDir dir("size=4m,mode=0700");
  ASSERT_TRUE(!dir.path.empty() && dir.error.empty()) << dir.path << ": " << dir.error;
  const std::string filler = dir.path + "/filler";
  std::atomic<int> record_puts{0};
  test::LoopbackHttp s3([&](int fd, const std::string& request) {
    if (request.rfind("PUT ", 0) == 0 && request.find("/record.json ") != std::string::npos && ++record_puts == 1)
      test::fill_up(filler);  // the store is full from the first record on
    answer_ok(fd);
  });
  Index index(dir.path, /*writable=*/true);
  const DumpRecord r = test::insert_dump(index, dir.path, "0000000000000000000000000000f011", "full", 7);
  auto config = test::upload_config(s3.endpoint(), UploadMode::Metadata);
  config->upload.max_backoff = std::chrono::seconds(4);
  StoreUploader u(dir.path, index, config);

  for (int i = 0; i < 600 && record_puts == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_GT(record_puts.load(), 0) << "the record never reached the endpoint";
  std::this_thread::sleep_for(std::chrono::seconds(3));
  // Back-off 1 s, 2 s: the first PUT and at most two more; a worker that does not wait sends hundreds.
  EXPECT_LE(record_puts.load(), 4);
  const int while_full = record_puts;

  std::filesystem::remove(filler);
  const auto row = test::wait_for_row(index, r.id, "done");  // the next attempt: at most max_backoff
  u.uploader.stop();
  ASSERT_TRUE(row);
  EXPECT_EQ(row->state, "done") << row->last_error;
  EXPECT_GT(record_puts.load(), while_full);
}

// The store fills up between creating a multipart upload and recording its id: the id would be
// lost (never resumed, never aborted) and each retry would leave one more upload whose parts S3
// keeps. Each one is aborted, and once there is room the core goes up in one upload.
TEST(Uploader, AMultipartUploadTheStoreCannotRecordIsAborted) {
  if (::geteuid() != 0) GTEST_SKIP() << "mounting a tmpfs needs root";
  const test::TmpfsDir dir("size=4m,mode=0700");
  ASSERT_TRUE(!dir.path.empty() && dir.error.empty()) << dir.path << ": " << dir.error;
  const std::string filler = dir.path + "/filler";
  std::atomic<int> created{0}, aborted{0}, completed{0};
  std::atomic<bool> full{true};
  test::LoopbackHttp s3([&](int fd, const std::string& request) {
    const std::string line = request.substr(0, request.find('\r'));
    if (line.rfind("POST ", 0) == 0 && line.find("?uploads") != std::string::npos) {
      const int n = ++created;
      if (full) test::fill_up(filler);  // the store is full when the new upload id is to be recorded
      answer_initiate(fd, "U" + std::to_string(n));
      return;
    }
    if (line.rfind("DELETE ", 0) == 0 && line.find("uploadId=U") != std::string::npos) ++aborted;
    if (line.rfind("POST ", 0) == 0 && line.find("uploadId=U") != std::string::npos) ++completed;
    answer_ok(fd);
  });
  Index index(dir.path, /*writable=*/true);
  const DumpRecord r = test::insert_dump(index, dir.path, "000000000000000000000000000f0115", "full-multipart", 9, 4096);
  auto config = test::upload_config(s3.endpoint(), UploadMode::Core);
  config->upload.part_bytes = 1024;  // 4 parts (the configuration's 5 MiB floor is not checked here)
  config->upload.max_backoff = std::chrono::seconds(1);
  StoreUploader u(dir.path, index, config);

  for (int i = 0; i < 600 && created < 2; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_GE(created.load(), 2) << "no retry of the upload's creation";
  full = false;
  std::filesystem::remove(filler);
  const auto row = test::wait_for_row(index, r.id, "done");
  u.uploader.stop();
  ASSERT_TRUE(row);
  EXPECT_EQ(row->state, "done") << row->last_error;
  EXPECT_EQ(completed.load(), 1);
  // Every upload created but the one completed was aborted.
  EXPECT_EQ(aborted.load(), created.load() - 1);
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
      answer_initiate(fd, "U1");
    } else if (line.rfind("PUT ", 0) == 0 && line.find("partNumber=") != std::string::npos) {
      ++parts;
      test::send_all(fd, "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\n\r\n");
    } else {
      if (line.rfind("DELETE ", 0) == 0 && line.find("uploadId=U1") != std::string::npos) ++aborts;
      answer_ok(fd);
    }
  });
  {
    Index index(store, /*writable=*/true);
    const DumpRecord r = test::insert_dump(index, store, "00000000000000000000000000de1e7e", "deleted", 8, 4096);
    auto config = test::upload_config(s3.endpoint(), UploadMode::Core);
    config->upload.part_bytes = 1024;
    StoreUploader u(store, index, config);

    for (int i = 0; i < 600 && parts == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    ASSERT_GT(parts.load(), 0) << "no part reached the endpoint";
    EXPECT_EQ(delete_dump(index, u.dirfd.get(), r.id, {}).status, DeleteStatus::Deleted);
    const auto row = test::wait_for_row(index, r.id, "skipped");
    u.uploader.stop();
    ASSERT_TRUE(row);
    EXPECT_EQ(row->state, "skipped") << row->last_error;
    EXPECT_EQ(aborts.load(), 1);
    EXPECT_TRUE(row->upload_id.empty()) << row->upload_id;
    EXPECT_FALSE(index.get(r.id));
  }
  std::filesystem::remove_all(store);
}

}  // namespace
}  // namespace coredumpd
