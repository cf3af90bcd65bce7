// The fake kernel's rule table (kernel_rules.h) against the daemon's own statement of the same rules,
// protocol::kernel_size_verdict() and kernel_ack_verdict(), over a systematic sweep: simulated
// kernels from 6.18 to NEXT with the CLOSE_FILES RFC, every combination of the ack bits they know
// plus unknown ones, sizes below, at, between and above the struct versions, spare and memory
// types set or not, junk past the known fields. Where the table allows several markers (rules of
// unpublished order, kernel_rules.h), the daemon's must be one of them; elsewhere it must be equal.
// The first disagreement is reported with the whole case and the rule's source.
#include "tests/fake_kernel/kernel_rules.h"

#include <array>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "protocol/marker.h"
#include "protocol/negotiate.h"
#include "protocol/wire.h"

namespace coredumpd::fake_kernel::kernel_rules {
namespace {

namespace proto = coredumpd::protocol;

// Both sides redeclare the UAPI; they must at least agree on it.
TEST(KernelRules, UapiValuesMatchTheDaemonsWireHeader) {
  EXPECT_EQ(KERNEL, proto::COREDUMP_KERNEL);
  EXPECT_EQ(USERSPACE, proto::COREDUMP_USERSPACE);
  EXPECT_EQ(REJECT, proto::COREDUMP_REJECT);
  EXPECT_EQ(WAIT, proto::COREDUMP_WAIT);
  EXPECT_EQ(RECORDS, proto::COREDUMP_RECORDS);
  EXPECT_EQ(SPARSE, proto::COREDUMP_SPARSE);
  EXPECT_EQ(MEMORY_TYPES, proto::COREDUMP_MEMORY_TYPES);
  EXPECT_EQ(ACK_SIZE_VER0, proto::COREDUMP_ACK_SIZE_VER0);
  EXPECT_EQ(ACK_SIZE_VER1, proto::COREDUMP_ACK_SIZE_VER1);
  EXPECT_EQ(REQ_SIZE_VER0, proto::COREDUMP_REQ_SIZE_VER0);
  EXPECT_EQ(REQ_SIZE_VER1, proto::COREDUMP_REQ_SIZE_VER1);
  EXPECT_EQ(ACK_OFF_SPARE, offsetof(proto::coredump_ack, spare));
  EXPECT_EQ(ACK_OFF_MASK, offsetof(proto::coredump_ack, mask));
  EXPECT_EQ(ACK_OFF_MEMORY_TYPES, offsetof(proto::coredump_ack, memory_types));
  for (std::uint32_t m = 0; m <= 4; ++m) {
    EXPECT_EQ(mark_name(static_cast<Mark>(m)), proto::interpret_marker(m).name) << m;
  }
}

// Every rule names its source, and the stepped ones are [K]'s, in order.
TEST(KernelRules, EveryRuleCitesItsSource) {
  int last_step = 0;
  for (const Rule& r : rules()) {
    EXPECT_FALSE(r.source.empty()) << r.id;
    if (r.step) {
      EXPECT_GT(*r.step, last_step) << r.id;
      last_step = *r.step;
      EXPECT_NE(r.source.find("[K]"), std::string_view::npos) << r.id << ": a fixed order needs [K]";
    }
  }
}

struct SimKernel {
  const char* name;
  std::uint32_t size_ack;
  std::uint64_t mask;
  std::uint64_t memory_types_mask;
  std::uint64_t close_files_bit;  // the host's value, whether offered or not
};

constexpr std::uint64_t kNext = 0x7F;
constexpr std::uint64_t kCf = proto::COREDUMP_CLOSE_FILES_DEFAULT;

const std::array<SimKernel, 9> kKernels{{
    {"6.18", 16, 0xF, 0, kCf},
    {"6.18, host without CLOSE_FILES", 16, 0xF, 0, 0},
    {"NEXT", 24, kNext, 0x1FF, kCf},
    {"NEXT + CLOSE_FILES (RFC)", 24, kNext | kCf, 0x1FF, kCf},
    {"NEXT + CLOSE_FILES at bit 9", 24, kNext | (1ULL << 9), 0x1FF, 1ULL << 9},
    {"VER0 structs + RECORDS/SPARSE", 16, 0x3F, 0, kCf},
    {"VER0 structs + MEMORY_TYPES (no room)", 16, 0x4F, 0x1FF, kCf},
    {"6.18 + CLOSE_FILES (RFC)", 16, 0xF | kCf, 0, kCf},
    {"future: size_ack 32", 32, kNext, 0x1FF, kCf},
}};

std::string hex(std::uint64_t v) {
  std::ostringstream os;
  os << "0x" << std::hex << v;
  return os.str();
}

std::string describe_case(const SimKernel& k, std::span<const std::byte> wire, std::uint32_t size) {
  std::ostringstream os;
  os << "kernel '" << k.name << "' (size_ack " << k.size_ack << ", mask " << hex(k.mask)
     << ", memory_types_mask " << hex(k.memory_types_mask) << ", close_files_bit " << hex(k.close_files_bit)
     << "), ack size field " << size << ", bytes:";
  for (std::byte b : wire) os << ' ' << hex(std::to_integer<unsigned>(b)).substr(2);
  return os.str();
}

std::string describe_verdict(const Verdict& v) {
  std::ostringstream os;
  os << mark_name(v.mark);
  if (v.rule) os << " by rule '" << v.rule->id << "' (" << v.rule->source << ")";
  if (v.acceptable.size() > 1) {
    os << "; also acceptable:";
    for (Mark m : v.acceptable) os << ' ' << mark_name(m);
  }
  return os.str();
}

TEST(KernelRules, AgreesWithTheDaemonsKernelAckVerdictOverASweep) {
  const std::array<std::uint32_t, 16> sizes{0, 4, 8, 15, 16, 17, 20, 23, 24, 25, 28, 32, 33, 64, 4096, 0xFFFFFFFFu};
  const std::array<std::uint32_t, 3> spares{0, 1, 0x80000000u};
  const std::array<std::uint64_t, 4> types{0, 0x1, 0x200, 1ULL << 63};
  // ambiguous: the table allows several markers; other_choice: the daemon picked another one than
  // the fake kernel sends (allowed, but worth knowing when reading a fake-kernel test's marker).
  std::uint64_t cases = 0, ambiguous = 0, other_choice = 0, disagreements = 0;
  std::string first;
  std::set<std::string_view> deciding_rules;

  auto disagree = [&](const std::string& what) {
    if (disagreements++ == 0) first = what;
    if (std::getenv("KERNEL_RULES_ALL")) std::printf("DISAGREE %s\n", what.c_str());
  };

  for (const SimKernel& k : kKernels) {
    const proto::coredump_req req{k.size_ack > 16 ? 32u : 16u, k.size_ack, k.mask, 0x33, k.memory_types_mask};
    const Offer offer{k.size_ack, k.mask, k.memory_types_mask, k.close_files_bit};
    // The ack bits: every combination of what this kernel offers, the known extension bits, the
    // host's CLOSE_FILES value and one bit no kernel defines.
    std::vector<std::uint64_t> bits;
    const std::uint64_t universe = k.mask | kNext | kCf | k.close_files_bit | (1ULL << 63);
    for (int b = 0; b < 64; ++b) {
      if (universe & (1ULL << b)) bits.push_back(1ULL << b);
    }
    for (std::uint32_t size : sizes) {
      // The size field alone (the ack stays unread if it decides).
      const std::optional<proto::Marker> daemon_size = proto::kernel_size_verdict(req, size);
      const std::optional<Verdict> oracle_size = size_verdict(offer, size);
      ++cases;
      if (daemon_size.has_value() != oracle_size.has_value() ||
          (daemon_size && static_cast<std::uint32_t>(*daemon_size) != static_cast<std::uint32_t>(oracle_size->mark))) {
        disagree("size field " + std::to_string(size) + " for kernel '" + k.name + "': kernel_size_verdict says " +
                 (daemon_size ? std::string(mark_name(static_cast<Mark>(*daemon_size))) : "read on") +
                 ", kernel_rules says " + (oracle_size ? describe_verdict(*oracle_size) : "read on"));
      }
      if (oracle_size) deciding_rules.insert(oracle_size->rule->id);
      if (daemon_size || oracle_size) continue;

      for (std::uint64_t combo = 0; combo < (1ULL << bits.size()); ++combo) {
        std::uint64_t mask = 0;
        for (std::size_t i = 0; i < bits.size(); ++i) {
          if (combo & (1ULL << i)) mask |= bits[i];
        }
        for (std::uint32_t spare : spares) {
          for (std::uint64_t memory_types : types) {
            for (bool tail : {false, true}) {
              if (tail && size <= ACK_SIZE_VER1) continue;  // no bytes past the known fields
              if (memory_types != 0 && size <= ACK_OFF_MEMORY_TYPES) continue;  // not sent
              std::array<std::byte, 64> buf{};
              std::memcpy(buf.data(), &size, 4);
              std::memcpy(buf.data() + ACK_OFF_SPARE, &spare, 4);
              std::memcpy(buf.data() + ACK_OFF_MASK, &mask, 8);
              std::memcpy(buf.data() + ACK_OFF_MEMORY_TYPES, &memory_types, 8);
              if (tail) buf[size - 1] = std::byte{0x5a};
              const std::span<const std::byte> wire(buf.data(), size);

              const proto::Marker daemon = proto::kernel_ack_verdict(req, wire, k.close_files_bit);
              const Verdict oracle = ack_verdict(offer, wire);
              ++cases;
              if (oracle.acceptable.size() > 1) ++ambiguous;
              if (oracle.allows(static_cast<Mark>(daemon)) && static_cast<Mark>(daemon) != oracle.mark) ++other_choice;
              if (oracle.rule) deciding_rules.insert(oracle.rule->id);
              if (!oracle.allows(static_cast<Mark>(daemon))) {
                disagree(describe_case(k, wire, size) + ": kernel_ack_verdict says " +
                         std::string(mark_name(static_cast<Mark>(daemon))) + ", kernel_rules says " +
                         describe_verdict(oracle));
              }
            }
          }
        }
      }
    }
  }
  std::printf("kernel_rules vs kernel_ack_verdict: %llu cases, %llu with several acceptable markers "
              "(%llu where the daemon names another than the fake kernel sends), %llu disagreements\n",
              static_cast<unsigned long long>(cases), static_cast<unsigned long long>(ambiguous),
              static_cast<unsigned long long>(other_choice), static_cast<unsigned long long>(disagreements));
  EXPECT_EQ(disagreements, 0u) << "first disagreement: " << first;

  // The sweep reached every rule of the table as the deciding one.
  for (const Rule& r : rules()) EXPECT_TRUE(deciding_rules.count(r.id)) << "rule never decided: " << r.id;
}

}  // namespace
}  // namespace coredumpd::fake_kernel::kernel_rules
