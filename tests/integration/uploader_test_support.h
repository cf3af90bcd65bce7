// What the uploader tests (uploader_store_test.cc, uploader_outage_test.cc) share: a real index in a
// temporary store, dumps in it, the uploader's configuration, and a LoopbackHttp S3 stand-in's
// replies (tests/support/loopback_http.h).
#pragma once

#include <fcntl.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "daemon/policy/config.h"
#include "store/index.h"
#include "store/upload_row.h"
#include "tests/support/loopback_http.h"
#include "util/time.h"

namespace coredumpd::test {

/// Writes zeros to `path` until the filesystem is full.
inline void fill_up(const std::string& path) {
  std::ofstream f(path, std::ios::binary);
  const std::string block(64 * 1024, '\0');
  while (f.write(block.data(), static_cast<std::streamsize>(block.size())) && f.flush()) {
  }
}

/// A tmpfs of `options` on a fresh directory under /tmp, unmounted and removed on destruction;
/// `error` says why the mount failed (needs root).
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

/// The S3 key the uploader signs with (any: the stand-in does not check signatures).
inline void set_test_credentials() {
  ::setenv("AWS_ACCESS_KEY_ID", "AKIDTEST", 1);
  ::setenv("AWS_SECRET_ACCESS_KEY", "secret", 1);
}

/// Inserts a complete dump `id` newer than the uploader's origin (its first look); with
/// `core_bytes` > 0, also a raw core of that size in `store` (for "upload": "core").
inline DumpRecord insert_dump(Index& index, const std::string& store, const std::string& id, const char* comm,
                              std::int64_t pid, std::uint64_t core_bytes = 0) {
  DumpRecord r;
  r.id = id;
  r.state = DumpState::Complete;
  r.timestamp_us = now_epoch_us() + 60'000'000;
  r.pid = pid;
  r.comm = comm;
  if (core_bytes > 0) {
    r.path = r.id + ".core";
    std::ofstream(store + "/" + r.path) << std::string(core_bytes, 'c');
    r.core_size = r.stored_size = core_bytes;
  }
  index.insert(r);
  return r;
}

/// The uploader's configuration: `endpoint`, host id "h1", every rule's upload `mode`.
inline std::shared_ptr<Config> upload_config(const std::string& endpoint, UploadMode mode) {
  auto config = std::make_shared<Config>();
  config->upload.endpoint = endpoint;
  config->upload.host_id = "h1";
  config->defaults.upload = mode;
  return config;
}

/// Waits up to `seconds` for dump `id`'s upload row to reach `state`; the row as last read.
inline std::optional<UploadRow> wait_for_row(const Index& index, const std::string& id, const std::string& state,
                                             int seconds = 60) {
  std::optional<UploadRow> row;
  for (int i = 0; i < seconds * 10; ++i) {
    row = index.get_upload(id);
    if (row && row->state == state) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return row;
}

/// Answers an S3 request: 200 with an empty body and an ETag.
inline void answer_ok(int fd) { send_all(fd, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nETag: \"e\"\r\n\r\n"); }

/// Answers CreateMultipartUpload with `upload_id`.
inline void answer_initiate(int fd, const std::string& upload_id) {
  const std::string xml = "<InitiateMultipartUploadResult><UploadId>" + upload_id + "</UploadId></InitiateMultipartUploadResult>";
  send_all(fd, "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(xml.size()) + "\r\n\r\n" + xml);
}

}  // namespace coredumpd::test
