// Unit tests of protocol/relay.h: what a forwarding host offers its receiver and how the receiver's
// ack becomes the host's ack to the kernel.
#include <gtest/gtest.h>

#include "protocol/negotiate.h"
#include "protocol/relay.h"

// Qualified, never `using namespace`: <linux/coredump.h> (6.17+) declares coredump_req, coredump_ack
// and the COREDUMP_* names at global scope too (protocol/wire.h).
namespace cp = coredumpd::protocol;

namespace {

constexpr std::uint64_t kCloseFiles = cp::COREDUMP_CLOSE_FILES_DEFAULT;
constexpr std::uint64_t kNext =
    cp::COREDUMP_MASK_VER0 | cp::COREDUMP_RECORDS | cp::COREDUMP_SPARSE | cp::COREDUMP_MEMORY_TYPES;

cp::coredump_req kernel_req(std::uint32_t size, std::uint32_t size_ack, std::uint64_t mask) {
  cp::coredump_req r{};
  r.size = size;
  r.size_ack = size_ack;
  r.mask = mask;
  if (size >= 32) {
    r.memory_types = 0x33;
    r.memory_types_mask = 0x1FF;
  }
  return r;
}

}  // namespace

TEST(Relay, ReceiverIsOfferedWhatTheKernelOffered) {
  const auto ver0 = cp::receiver_request(kernel_req(16, 16, cp::COREDUMP_MASK_VER0), kCloseFiles);
  EXPECT_EQ(ver0.size, 16u);
  EXPECT_EQ(ver0.size_ack, 16u);
  EXPECT_EQ(ver0.mask, cp::COREDUMP_MASK_VER0);
  EXPECT_EQ(ver0.memory_types_mask, 0u);

  // A newer kernel: a longer request and ack than we know, and a bit we cannot relay.
  const auto next = cp::receiver_request(kernel_req(48, 40, kNext | kCloseFiles | (1ULL << 40)), kCloseFiles);
  EXPECT_EQ(next.size, 32u) << "VER1 at most: the receiver gets only fields we understand";
  EXPECT_EQ(next.size_ack, 24u) << "an ack we can pass on to the kernel";
  EXPECT_EQ(next.mask, kNext | kCloseFiles) << "unknown bits are never offered";
  EXPECT_EQ(next.memory_types, 0x33u);
  EXPECT_EQ(next.memory_types_mask, 0x1FFu);
}

// Every ack the kernel's rules accept from the receiver turns into a host ack for the same stream
// that the kernel's rules accept too.
TEST(Relay, EveryValidReceiverAckMapsToAValidKernelAckForTheSameStream) {
  const auto kernel = kernel_req(32, 24, kNext | kCloseFiles);
  const auto offered = cp::receiver_request(kernel, kCloseFiles);
  int valid = 0;
  for (std::uint64_t mask = 0; mask < 0x100; ++mask) {
    for (std::uint64_t types : {0ULL, 0x11ULL}) {
      cp::coredump_ack a{};
      a.size = 24;
      a.mask = mask;
      a.memory_types = types;
      const auto wire = std::span(reinterpret_cast<const std::byte*>(&a), 24);
      if (cp::kernel_ack_verdict(offered, wire, kCloseFiles) != cp::Marker::REQACK) continue;
      ++valid;
      std::string error;
      const auto n = cp::negotiate(kernel, cp::wants_matching_ack(a, kCloseFiles), kCloseFiles, error);
      ASSERT_TRUE(n) << error;
      EXPECT_TRUE(cp::same_stream(n->ack, a, kCloseFiles)) << std::hex << mask;
      if (!(mask & cp::COREDUMP_REJECT)) {  // WAIT is meaningless with REJECT; negotiate() never sends it there
        EXPECT_EQ(n->ack.mask & cp::COREDUMP_WAIT, mask & cp::COREDUMP_WAIT) << std::hex << mask;
      }
      EXPECT_EQ(cp::kernel_ack_verdict(kernel, cp::ack_bytes(n->ack), kCloseFiles), cp::Marker::REQACK)
          << std::hex << mask;
    }
  }
  EXPECT_GT(valid, 20);
}

TEST(Relay, SameStreamComparesModeFlagsAndMemoryTypes) {
  cp::coredump_ack a{24, 0, cp::COREDUMP_KERNEL | cp::COREDUMP_RECORDS | cp::COREDUMP_WAIT, 0};
  cp::coredump_ack b{16, 0, cp::COREDUMP_KERNEL | cp::COREDUMP_RECORDS, 0};
  EXPECT_TRUE(cp::same_stream(a, b, kCloseFiles)) << "WAIT and size do not change the stream";
  b.mask = cp::COREDUMP_KERNEL;
  EXPECT_FALSE(cp::same_stream(a, b, kCloseFiles));
  cp::coredump_ack c{24, 0, cp::COREDUMP_KERNEL | cp::COREDUMP_MEMORY_TYPES, 0x11};
  cp::coredump_ack d = c;
  d.memory_types = 0x13;
  EXPECT_FALSE(cp::same_stream(c, d, kCloseFiles));
}
