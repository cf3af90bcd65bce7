// Test-only helpers shared by the fake_kernel_*_test.cc files.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "protocol/wire.h"
#include "tests/fake_kernel/expect_released.h"
#include "tests/fake_kernel/fake_kernel.h"
#include "tests/fake_kernel/result_json.h"
#include "tests/fake_kernel/scripted_server.h"

namespace coredumpd::fake_kernel::testing {

/// The CLOSE_FILES bit the simulated kernels offer.
inline constexpr std::uint64_t kCloseFiles = protocol::COREDUMP_CLOSE_FILES_DEFAULT;

/// A simulated 6.18 kernel (the Options defaults) aimed at `server`, with a 5 s deadline.
inline Options options_for(const ScriptedServer& server) {
  Options o;
  o.socket_path = server.path();
  o.timeout = std::chrono::seconds(5);
  return o;
}

/// A simulated NEXT kernel: VER1 request, 24-byte acks, every NEXT bit plus CLOSE_FILES offered.
inline Options next_kernel(const ScriptedServer& server) {
  Options o = options_for(server);
  o.request_size = protocol::COREDUMP_REQ_SIZE_VER1;
  o.size_ack = protocol::COREDUMP_ACK_SIZE_VER1;
  o.mask = MASK_NEXT | kCloseFiles;
  return o;
}

/// All bytes of `core` (empty on a read error).
inline std::vector<std::byte> bytes_of(const CoreSource& core) {
  std::string error;
  return core.materialize(error).value_or(std::vector<std::byte>{});
}

/// A result as one JSON line, for failure messages.
inline std::string describe(const Result& r) { return result_to_json(r).dump(); }

/// What a scripted server saw, filled by its script, asserted after join().
struct Seen {
  std::vector<std::byte> request;        ///< the request read
  std::optional<std::uint32_t> marker;   ///< the marker read
  ReadEnd stream;                        ///< what followed the marker
  int after = -3;                        ///< ServerConn::next_read() after the marker
};

}  // namespace coredumpd::fake_kernel::testing
