// Shared by the unit tests that build a store by hand (retention, dumpctl): dump ids, whole files,
// and cores compressed the way the daemon writes them.
#pragma once

#include <gtest/gtest.h>
#include <zstd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

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

}  // namespace coredumpd::unit
