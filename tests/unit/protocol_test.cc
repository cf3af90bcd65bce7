// Unit tests of protocol/: request reading, ack negotiation, kernel-side ack validation, markers.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "protocol/marker.h"
#include "protocol/negotiate.h"
#include "protocol/request.h"
#include "protocol/wire.h"

namespace cp = coredumpd::protocol;

namespace {

constexpr std::uint64_t kCloseFiles = cp::COREDUMP_CLOSE_FILES_DEFAULT;

// What a 6.17/6.18 kernel sends [OBS 6.18]: 10 00 00 00 10 00 00 00 0f 00 ...
cp::coredump_req ver0_request() {
  const unsigned char wire[16] = {0x10, 0, 0, 0, 0x10, 0, 0, 0, 0x0f, 0, 0, 0, 0, 0, 0, 0};
  return cp::decode_request(std::as_bytes(std::span(wire)));
}

cp::coredump_req ver1_request(std::uint64_t mask) {
  cp::coredump_req r{};
  r.size = cp::COREDUMP_REQ_SIZE_VER1;
  r.size_ack = cp::COREDUMP_ACK_SIZE_VER1;
  r.mask = mask;
  r.memory_types = 0x33;
  r.memory_types_mask = 0x1FF;
  return r;
}

cp::Negotiation must_negotiate(const cp::coredump_req& req, const cp::Wants& wants) {
  std::string error;
  auto n = cp::negotiate(req, wants, kCloseFiles, error);
  EXPECT_TRUE(n.has_value()) << error;
  return n.value_or(cp::Negotiation{});
}

cp::Marker verdict(const cp::coredump_req& req, const cp::coredump_ack& ack) {
  return cp::kernel_ack_verdict(req, cp::ack_bytes(ack), kCloseFiles);
}

}  // namespace

TEST(Request, Ver0BytesObservedOn618Decode) {
  const auto req = ver0_request();
  EXPECT_EQ(req.size, 16u);
  EXPECT_EQ(req.size_ack, 16u);
  EXPECT_EQ(req.mask, cp::COREDUMP_MASK_VER0);
  EXPECT_EQ(req.memory_types, 0u);  // not sent: must read as zero
  EXPECT_EQ(req.memory_types_mask, 0u);
}

TEST(Request, SizesBelow16AreRefused) {
  for (std::uint32_t size : {0u, 1u, 4u, 8u, 15u}) {
    std::string error;
    EXPECT_FALSE(cp::plan_request_read(size, error).has_value()) << size;
    EXPECT_NE(error.find("below the minimum"), std::string::npos) << error;
  }
}

TEST(Request, ImplausiblyLargeSizesAreRefused) {
  std::string error;
  EXPECT_FALSE(cp::plan_request_read(4096, error).has_value());
  EXPECT_FALSE(cp::plan_request_read(0xFFFFFFFF, error).has_value());
  EXPECT_TRUE(cp::plan_request_read(4095, error).has_value());
}

TEST(Request, Of16BytesIsReadWhole) {
  std::string error;
  const auto layout = cp::plan_request_read(16, error);
  ASSERT_TRUE(layout);
  EXPECT_EQ(layout->known, 16u);
  EXPECT_EQ(layout->discard, 0u);
}

TEST(Request, Of48BytesReadsKnownPrefixAndDiscardsTheRest) {
  std::string error;
  const auto layout = cp::plan_request_read(48, error);
  ASSERT_TRUE(layout);
  EXPECT_EQ(layout->known, sizeof(cp::coredump_req));
  EXPECT_EQ(layout->discard, 48u - sizeof(cp::coredump_req));

  std::vector<std::byte> wire(48, std::byte{0xAB});  // unknown future fields are garbage to us
  auto req = ver1_request(0x7F);
  req.size = 48;
  std::memcpy(wire.data(), &req, sizeof(req));
  const auto decoded = cp::decode_request(std::span(wire).first(layout->known));
  EXPECT_EQ(decoded.size, 48u);
  EXPECT_EQ(decoded.mask, 0x7Fu);
  EXPECT_EQ(decoded.memory_types_mask, 0x1FFu);
}

TEST(Request, SizeFieldIsHostByteOrder) {
  const std::uint32_t size = 32;
  std::array<std::byte, 4> b;
  std::memcpy(b.data(), &size, 4);
  EXPECT_EQ(cp::peek_size_field(b), 32u);
}

TEST(Marker, EveryValueHasAResult) {
  const struct { std::uint32_t raw; bool accepted; const char* name; } cases[] = {
      {0, true, "REQACK"}, {1, false, "MINSIZE"}, {2, false, "MAXSIZE"},
      {3, false, "UNSUPPORTED"}, {4, false, "CONFLICTING"}, {5, false, "UNKNOWN"},
      {0xFFFFFFFF, false, "UNKNOWN"},
  };
  for (const auto& c : cases) {
    const auto r = cp::interpret_marker(c.raw);
    EXPECT_EQ(r.raw, c.raw);
    EXPECT_EQ(r.accepted, c.accepted) << c.raw;
    EXPECT_EQ(r.name, c.name) << c.raw;
    EXPECT_FALSE(r.reason.empty()) << c.raw;
  }
  EXPECT_NE(cp::interpret_marker(7).reason.find("7"), std::string::npos);
}

TEST(Negotiate, Ver0KernelWaitAckIsWhatSystemdSends) {
  const auto n = must_negotiate(ver0_request(), cp::Wants{});
  EXPECT_EQ(n.ack.size, 16u);
  EXPECT_EQ(n.ack.spare, 0u);
  EXPECT_EQ(n.ack.mask, cp::COREDUMP_KERNEL | cp::COREDUMP_WAIT);
  EXPECT_EQ(n.ack.memory_types, 0u);
  EXPECT_EQ(cp::ack_bytes(n.ack).size(), 16u);
  EXPECT_EQ(n.close_files, cp::FlagOutcome::NotOffered);
  EXPECT_EQ(n.records, cp::FlagOutcome::NotOffered);
  EXPECT_EQ(verdict(ver0_request(), n.ack), cp::Marker::REQACK);
}

TEST(Negotiate, UnofferedFlagsAreNeverSent) {
  cp::Wants all;
  all.records = all.sparse = all.close_files = true;
  all.memory_types = 0x3;
  const auto n = must_negotiate(ver0_request(), all);
  EXPECT_EQ(n.ack.mask & ~cp::COREDUMP_MASK_VER0, 0u);
  EXPECT_EQ(n.close_files, cp::FlagOutcome::NotOffered);
  EXPECT_EQ(n.memory_types, cp::FlagOutcome::NotOffered);
  EXPECT_EQ(n.ack.memory_types, 0u);
}

TEST(Negotiate, RejectNeverCarriesWaitOrCloseFiles) {
  cp::Wants w;
  w.mode = cp::Mode::Reject;
  w.close_files = true;
  const auto req = ver1_request(cp::COREDUMP_MASK_VER0 | kCloseFiles);
  const auto n = must_negotiate(req, w);
  EXPECT_EQ(n.ack.mask, cp::COREDUMP_REJECT);
  EXPECT_EQ(n.close_files, cp::FlagOutcome::DeclinedByPolicy);
  EXPECT_EQ(verdict(req, n.ack), cp::Marker::REQACK);
}

TEST(Negotiate, CloseFilesRequestedOnlyWhenOfferedAndWanted) {
  const auto req = ver1_request(cp::COREDUMP_MASK_VER0 | kCloseFiles);
  cp::Wants w;
  w.close_files = true;
  auto n = must_negotiate(req, w);
  EXPECT_TRUE(n.ack.mask & kCloseFiles);
  EXPECT_EQ(n.close_files, cp::FlagOutcome::Granted);
  w.close_files = false;
  n = must_negotiate(req, w);
  EXPECT_FALSE(n.ack.mask & kCloseFiles);
  EXPECT_EQ(n.close_files, cp::FlagOutcome::DeclinedByPolicy);
}

TEST(Negotiate, SparseImpliesRecordsAndOnlyWithKernelMode) {
  const auto req = ver1_request(0x7F);
  cp::Wants w;
  w.sparse = true;
  auto n = must_negotiate(req, w);
  EXPECT_EQ(n.ack.mask & (cp::COREDUMP_RECORDS | cp::COREDUMP_SPARSE), cp::COREDUMP_RECORDS | cp::COREDUMP_SPARSE);
  w.mode = cp::Mode::Userspace;
  n = must_negotiate(req, w);
  EXPECT_EQ(n.ack.mask & (cp::COREDUMP_RECORDS | cp::COREDUMP_SPARSE), 0u);
  EXPECT_EQ(verdict(req, n.ack), cp::Marker::REQACK);
}

TEST(Negotiate, RecordsWithoutSparseWhenKernelLacksSparse) {
  const auto req = ver1_request(cp::COREDUMP_MASK_VER0 | cp::COREDUMP_RECORDS);
  cp::Wants w;
  w.sparse = true;
  const auto n = must_negotiate(req, w);
  EXPECT_EQ(n.records, cp::FlagOutcome::Granted);
  EXPECT_EQ(n.sparse, cp::FlagOutcome::NotOffered);
}

TEST(Negotiate, MemoryTypesNeedRoomInTheAck) {
  auto req = ver1_request(0x7F);
  cp::Wants w;
  w.memory_types = 0x13;
  auto n = must_negotiate(req, w);
  EXPECT_EQ(n.ack.size, 24u);
  EXPECT_TRUE(n.ack.mask & cp::COREDUMP_MEMORY_TYPES);
  EXPECT_EQ(n.ack.memory_types, 0x13u);
  EXPECT_EQ(verdict(req, n.ack), cp::Marker::REQACK);

  req.size_ack = 20;  // a kernel whose ack ends inside memory_types
  n = must_negotiate(req, w);
  EXPECT_EQ(n.ack.size, 20u);
  EXPECT_FALSE(n.ack.mask & cp::COREDUMP_MEMORY_TYPES);
  EXPECT_EQ(n.ack.memory_types, 0u);
  EXPECT_FALSE(n.note.empty());
  EXPECT_EQ(verdict(req, n.ack), cp::Marker::REQACK);
}

TEST(Negotiate, MemoryTypesRestrictedToWhatTheKernelKnows) {
  auto req = ver1_request(0x7F);
  req.memory_types_mask = 0x0F;  // a kernel without ELF_HEADERS and later types
  cp::Wants w;
  w.memory_types = 0x1FF;
  const auto n = must_negotiate(req, w);
  EXPECT_EQ(n.ack.memory_types, 0x0Fu);
  EXPECT_EQ(verdict(req, n.ack), cp::Marker::REQACK);
}

TEST(Negotiate, UnknownOfferedBitsAreReportedNotSent) {
  auto req = ver1_request(cp::COREDUMP_MASK_VER0 | (1ULL << 40));
  const auto n = must_negotiate(req, cp::Wants{});
  EXPECT_EQ(n.unknown, 1ULL << 40);
  EXPECT_EQ(n.ack.mask & (1ULL << 40), 0u);
}

TEST(Negotiate, FallsBackWhenWantedModeNotOffered) {
  auto req = ver0_request();
  req.mask = cp::COREDUMP_REJECT | cp::COREDUMP_USERSPACE;
  const auto n = must_negotiate(req, cp::Wants{});
  EXPECT_EQ(n.mode, cp::Mode::Reject);
  EXPECT_FALSE(n.note.empty());
  req.mask = cp::COREDUMP_WAIT;
  std::string error;
  EXPECT_FALSE(cp::negotiate(req, cp::Wants{}, kCloseFiles, error));
  EXPECT_FALSE(error.empty());
}

// Property: for random offered masks and random wants, every ack is one the kernel accepts and
// carries exactly one mode and only offered bits.
TEST(Negotiate, RandomOffersNeverYieldARefusedAck) {
  std::mt19937_64 rng(12345);
  for (int i = 0; i < 20000; ++i) {
    cp::coredump_req req{};
    req.size = 32;
    req.size_ack = 16 + static_cast<std::uint32_t>(rng() % 16);
    req.mask = rng() & (0xFF | (1ULL << 50));
    req.mask |= cp::COREDUMP_MODE_MASK & rng();
    if (!(req.mask & cp::COREDUMP_MODE_MASK)) req.mask |= cp::COREDUMP_KERNEL;
    req.memory_types_mask = rng() & 0x1FF;
    cp::Wants w;
    w.mode = static_cast<cp::Mode>(rng() % 3);
    w.wait = rng() & 1;
    w.records = rng() & 1;
    w.sparse = rng() & 1;
    w.close_files = rng() & 1;
    if (rng() & 1) w.memory_types = rng() & 0xFFFF;
    std::string error;
    const auto n = cp::negotiate(req, w, kCloseFiles, error);
    ASSERT_TRUE(n) << error;
    EXPECT_EQ(n->ack.mask & ~req.mask, 0u);
    EXPECT_EQ(std::popcount(n->ack.mask & cp::COREDUMP_MODE_MASK), 1);
    EXPECT_LE(n->ack.size, req.size_ack);
    EXPECT_GE(n->ack.size, 16u);
    EXPECT_EQ(n->ack.spare, 0u);
    ASSERT_EQ(verdict(req, n->ack), cp::Marker::REQACK) << "mask " << req.mask << " ack " << n->ack.mask;
  }
}

// The kernel's side (docs/PROTOCOL.md §4.5, §11.3).
TEST(KernelVerdict, SizeField) {
  const auto req = ver0_request();
  EXPECT_EQ(cp::kernel_size_verdict(req, 8), cp::Marker::MINSIZE);
  EXPECT_EQ(cp::kernel_size_verdict(req, 24), cp::Marker::MAXSIZE);
  EXPECT_EQ(cp::kernel_size_verdict(req, 20), cp::Marker::MAXSIZE);
  EXPECT_EQ(cp::kernel_size_verdict(req, 4096), cp::Marker::MAXSIZE);
  EXPECT_EQ(cp::kernel_size_verdict(req, 16), std::nullopt);
}

TEST(KernelVerdict, MasksObservedOn618) {
  const auto req = ver0_request();
  auto ack_with = [](std::uint64_t mask, std::uint32_t spare = 0) {
    cp::coredump_ack a{};
    a.size = 16;
    a.spare = spare;
    a.mask = mask;
    return a;
  };
  EXPECT_EQ(verdict(req, ack_with(0x11)), cp::Marker::UNSUPPORTED);
  EXPECT_EQ(verdict(req, ack_with(1ULL << 63)), cp::Marker::UNSUPPORTED);
  EXPECT_EQ(verdict(req, ack_with(cp::COREDUMP_KERNEL, 1)), cp::Marker::UNSUPPORTED);
  EXPECT_EQ(verdict(req, ack_with(cp::COREDUMP_KERNEL | cp::COREDUMP_REJECT)), cp::Marker::CONFLICTING);
  EXPECT_EQ(verdict(req, ack_with(cp::COREDUMP_KERNEL | cp::COREDUMP_USERSPACE | cp::COREDUMP_WAIT)),
            cp::Marker::CONFLICTING);
  EXPECT_EQ(verdict(req, ack_with(cp::COREDUMP_WAIT)), cp::Marker::CONFLICTING);
  EXPECT_EQ(verdict(req, ack_with(0)), cp::Marker::CONFLICTING);
  EXPECT_EQ(verdict(req, ack_with(cp::COREDUMP_REJECT | cp::COREDUMP_WAIT)), cp::Marker::REQACK);
}

TEST(KernelVerdict, RfcDependencies) {
  const auto req = ver1_request(0x7F | kCloseFiles);
  auto ack_with = [](std::uint64_t mask, std::uint32_t size = 24, std::uint64_t types = 0) {
    cp::coredump_ack a{};
    a.size = size;
    a.mask = mask;
    a.memory_types = types;
    return a;
  };
  EXPECT_EQ(verdict(req, ack_with(cp::COREDUMP_USERSPACE | cp::COREDUMP_RECORDS)), cp::Marker::CONFLICTING);
  EXPECT_EQ(verdict(req, ack_with(cp::COREDUMP_KERNEL | cp::COREDUMP_SPARSE)), cp::Marker::CONFLICTING);
  EXPECT_EQ(verdict(req, ack_with(cp::COREDUMP_USERSPACE | cp::COREDUMP_MEMORY_TYPES)), cp::Marker::CONFLICTING);
  EXPECT_EQ(verdict(req, ack_with(cp::COREDUMP_REJECT | kCloseFiles)), cp::Marker::CONFLICTING);
  EXPECT_EQ(verdict(req, ack_with(cp::COREDUMP_KERNEL | cp::COREDUMP_MEMORY_TYPES, 16)), cp::Marker::MINSIZE);
  EXPECT_EQ(verdict(req, ack_with(cp::COREDUMP_KERNEL | cp::COREDUMP_MEMORY_TYPES, 20)), cp::Marker::MINSIZE);
  EXPECT_EQ(verdict(req, ack_with(cp::COREDUMP_KERNEL, 24, 0x1)), cp::Marker::UNSUPPORTED);
  EXPECT_EQ(verdict(req, ack_with(cp::COREDUMP_KERNEL | cp::COREDUMP_MEMORY_TYPES, 24, 0x200)),
            cp::Marker::UNSUPPORTED);
  EXPECT_EQ(verdict(req, ack_with(cp::COREDUMP_KERNEL | cp::COREDUMP_MEMORY_TYPES, 24, 0)), cp::Marker::REQACK);
}
