// Shared by the unit tests that build a store by hand (retention, dumpctl): dump ids, whole files,
// cores compressed the way the daemon writes them, and raw (uncompressed, maybe sparse) cores.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "store/dump_record.h"

namespace coredumpd::unit {

/// The id of test dump `n`: 32 lower-case hex digits, as the daemon's ids; ids 1..3 share the
/// prefix "0000000".
inline std::string make_id(int n) {
  char buf[33];
  std::snprintf(buf, sizeof buf, "%08xdeadbeef%016x", n, n);
  return buf;
}

/// The whole file at `path` ("" if it cannot be read).
inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// Replaces the file at `path` with `data`.
inline void write_file(const std::string& path, const std::string& data) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << data;
}

/// Compresses `data` as one or more concatenated zstd frames with content checksums (as the daemon
/// writes, ZSTD_c_checksumFlag) of at most `frame_size` input bytes each.
inline std::string zstd_compress(const std::string& data, std::size_t frame_size = SIZE_MAX) {
  ZSTD_CCtx* cctx = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, 3);
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 1);
  std::string out;
  std::size_t pos = 0;
  do {
    const std::size_t n = std::min(frame_size, data.size() - pos);
    std::string buf(ZSTD_compressBound(n), '\0');
    const std::size_t got = ZSTD_compress2(cctx, buf.data(), buf.size(), data.data() + pos, n);
    EXPECT_EQ(ZSTD_isError(got), 0U);
    out.append(buf.data(), got);
    pos += n;
  } while (pos < data.size());
  ZSTD_freeCCtx(cctx);
  return out;
}

/// Writes `head`, then a hole of `hole` bytes (never written: it reads as zeros and takes no
/// blocks), then `tail` to a new file at `path`. Returns the bytes a reader sees.
inline std::string write_sparse_file(const std::string& path, const std::string& head,
                                     std::size_t hole, const std::string& tail) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  EXPECT_GE(fd, 0) << path;
  EXPECT_EQ(::write(fd, head.data(), head.size()), static_cast<ssize_t>(head.size()));
  EXPECT_EQ(::lseek(fd, static_cast<off_t>(hole), SEEK_CUR),
            static_cast<off_t>(head.size() + hole));
  EXPECT_EQ(::write(fd, tail.data(), tail.size()), static_cast<ssize_t>(tail.size()));
  ::close(fd);
  return head + std::string(hole, '\0') + tail;
}

/// Makes `r` a dump whose core is stored uncompressed, as the daemon stores an incompressible core:
/// compression "none", path "<id>.core", core_size and stored_size the core's size. Writes the
/// file into `store`: `head` alone, or with a `hole` and `tail` a sparse file. Returns the core.
inline std::string store_raw_core(const std::string& store, DumpRecord& r, const std::string& head,
                                  std::size_t hole = 0, const std::string& tail = "") {
  r.compression = std::string(kCompressionNone);
  r.path = r.id + std::string(kRawExtension);
  const std::string core = write_sparse_file(store + "/" + r.path, head, hole, tail);
  r.core_size = core.size();
  r.stored_size = core.size();
  return core;
}

}  // namespace coredumpd::unit
