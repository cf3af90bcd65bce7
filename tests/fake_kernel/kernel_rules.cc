// The kernel's ack rules as a table (see kernel_rules.h for the sources [K] [S] [N] [R]).
#include "tests/fake_kernel/kernel_rules.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>

namespace coredumpd::fake_kernel::kernel_rules {
namespace {

// The ack as the kernel sees it after recv() into a zeroed struct: fields past the bytes sent are 0.
struct Ack {
  std::uint32_t size = 0;
  std::uint32_t spare = 0;
  std::uint64_t mask = 0;
  std::uint64_t memory_types = 0;
};

template <typename T>
T field_at(std::span<const std::byte> wire, std::size_t offset) {
  std::array<std::byte, sizeof(T)> raw{};
  if (offset < wire.size()) {
    const std::size_t n = std::min(sizeof(T), wire.size() - offset);
    std::copy_n(wire.begin() + static_cast<std::ptrdiff_t>(offset), n, raw.begin());
  }
  T value{};
  std::memcpy(&value, raw.data(), sizeof(T));
  return value;
}

Ack decode(std::span<const std::byte> wire) {
  Ack a;
  a.size = field_at<std::uint32_t>(wire, 0);
  a.spare = field_at<std::uint32_t>(wire, ACK_OFF_SPARE);
  a.mask = field_at<std::uint64_t>(wire, ACK_OFF_MASK);
  a.memory_types = field_at<std::uint64_t>(wire, ACK_OFF_MEMORY_TYPES);
  return a;
}

bool has(std::uint64_t mask, std::uint64_t bit) { return bit != 0 && (mask & bit) == bit; }

// An extension rule binds only a kernel that has the feature, i.e. offers it: on a kernel without
// it, the bit in an ack is "flag-not-offered" and nothing more.
bool uses(const Offer& o, const Ack& a, std::uint64_t bit) { return has(o.mask, bit) && has(a.mask, bit); }

using Broken = bool (*)(const Offer&, const Ack&);

struct Row {
  Rule rule;
  Broken broken;
};

constexpr std::uint64_t kModes = KERNEL | USERSPACE | REJECT;

// There is deliberately no rule against WAIT with REJECT: [K] has none, and [S]
// socket_request_reject acks REJECT|WAIT and expects REQACK. Nor one on bytes past offset 24 (a
// simulated kernel with size_ack > 24): no kernel source or selftest says what such a kernel does
// with them, so they are ignored, as the daemon's kernel_ack_verdict() ignores them too.
const std::array<Row, 12> kRows{{
    {{"ack-size-below-ver0", Stage::SizeField, 1, Mark::MINSIZE,
      "[K] `usize < COREDUMP_ACK_SIZE_VER0` on the peeked size -> COREDUMP_MARK_MINSIZE; "
      "[S] socket_request_invalid_size_small"},
     [](const Offer&, const Ack& a) { return a.size < ACK_SIZE_VER0; }},
    {{"ack-size-above-size-ack", Stage::SizeField, 2, Mark::MAXSIZE,
      "[K] `usize > sizeof(ack)` -> COREDUMP_MARK_MAXSIZE, with req.size_ack = sizeof(struct "
      "coredump_ack); [S] socket_request_invalid_size_large"},
     [](const Offer& o, const Ack& a) { return a.size > o.size_ack; }},
    {{"flag-not-offered", Stage::WholeAck, 3, Mark::UNSUPPORTED,
      "[K] `ack.mask & ~req.mask` -> COREDUMP_MARK_UNSUPPORTED, first check after the read; "
      "[S] socket_request_unknown_flag (bit 63)"},
     [](const Offer& o, const Ack& a) { return (a.mask & ~o.mask) != 0; }},
    {{"not-exactly-one-mode", Stage::WholeAck, 4, Mark::CONFLICTING,
      "[K] `hweight64(ack.mask & (USERSPACE|KERNEL|REJECT)) != 1` -> COREDUMP_MARK_CONFLICTING; "
      "[S] socket_request_invalid_flag_combination (KERNEL|REJECT|WAIT), [N] socket_request_no_mode"},
     [](const Offer&, const Ack& a) { return std::popcount(a.mask & kModes) != 1; }},
    {{"spare-not-zero", Stage::WholeAck, 5, Mark::UNSUPPORTED,
      "[K] `if (ack.spare)` -> COREDUMP_MARK_UNSUPPORTED, after the mode check; [N] socket_request_spare"},
     [](const Offer&, const Ack& a) { return a.spare != 0; }},
    {{"records-without-kernel", Stage::WholeAck, std::nullopt, Mark::CONFLICTING,
      "[N] socket_request_records_without_kernel (USERSPACE|RECORDS); uapi: RECORDS \"requires "
      "COREDUMP_KERNEL\""},
     [](const Offer& o, const Ack& a) { return uses(o, a, RECORDS) && !has(a.mask, KERNEL); }},
    {{"sparse-without-records", Stage::WholeAck, std::nullopt, Mark::CONFLICTING,
      "[N] socket_request_sparse_without_records (KERNEL|SPARSE); uapi: SPARSE \"requires "
      "COREDUMP_RECORDS\""},
     [](const Offer& o, const Ack& a) { return uses(o, a, SPARSE) && !has(a.mask, RECORDS); }},
    {{"memory-types-without-kernel", Stage::WholeAck, std::nullopt, Mark::CONFLICTING,
      "[N] socket_request_memory_types_without_kernel (USERSPACE|MEMORY_TYPES)"},
     [](const Offer& o, const Ack& a) { return uses(o, a, MEMORY_TYPES) && !has(a.mask, KERNEL); }},
    {{"memory-types-ack-too-short", Stage::WholeAck, std::nullopt, Mark::MINSIZE,
      "[N] socket_request_memory_types_short_ack (16 bytes), "
      "socket_request_memory_types_ack_size_between (20: the whole field is needed)"},
     [](const Offer& o, const Ack& a) { return uses(o, a, MEMORY_TYPES) && a.size < ACK_SIZE_VER1; }},
    {{"memory-types-field-without-flag", Stage::WholeAck, std::nullopt, Mark::UNSUPPORTED,
      "[N] socket_request_memory_types_stale_field (KERNEL, memory_types 1)"},
     [](const Offer& o, const Ack& a) {
       return has(o.mask, MEMORY_TYPES) && !has(a.mask, MEMORY_TYPES) && a.memory_types != 0;
     }},
    {{"memory-type-not-offered", Stage::WholeAck, std::nullopt, Mark::UNSUPPORTED,
      "[N] socket_request_memory_types_unknown_bit (a type outside req.memory_types_mask)"},
     [](const Offer& o, const Ack& a) {
       return uses(o, a, MEMORY_TYPES) && (a.memory_types & ~o.memory_types_mask) != 0;
     }},
    {{"close-files-with-reject", Stage::WholeAck, std::nullopt, Mark::CONFLICTING,
      "[R] RFC v2 as docs/PROTOCOL.md §6.4 records it (no dump, no close); its selftests ack "
      "CLOSE_FILES only with KERNEL or USERSPACE (close_files_*: REQACK)"},
     [](const Offer& o, const Ack& a) { return uses(o, a, o.close_files_bit) && has(a.mask, REJECT); }},
}};

const std::array<Rule, kRows.size()> kRules = [] {
  std::array<Rule, kRows.size()> out{};
  std::transform(kRows.begin(), kRows.end(), out.begin(), [](const Row& r) { return r.rule; });
  return out;
}();

const Rule* rule_of(const Row& row) { return &kRules[static_cast<std::size_t>(&row - kRows.data())]; }

// The verdict from the failing rules, given in table order.
Verdict verdict_of(std::vector<const Rule*> failing) {
  Verdict v;
  v.failing = std::move(failing);
  if (v.failing.empty()) {
    v.acceptable = {Mark::REQACK};
    return v;
  }
  v.rule = v.failing.front();
  v.mark = v.rule->mark;
  v.acceptable = {v.mark};
  // A stepped rule answers before any later stepped rule; an unordered one might answer before it.
  for (const Rule* r : v.failing) {
    if (r == v.rule || r->step) continue;
    if (std::find(v.acceptable.begin(), v.acceptable.end(), r->mark) == v.acceptable.end()) {
      v.acceptable.push_back(r->mark);
    }
  }
  return v;
}

std::vector<const Rule*> failing_rules(const Offer& offer, const Ack& ack, Stage stage) {
  std::vector<const Rule*> out;
  for (const Row& row : kRows) {
    if (row.rule.stage == stage && row.broken(offer, ack)) out.push_back(rule_of(row));
  }
  return out;
}

}  // namespace

std::string_view mark_name(Mark mark) {
  switch (mark) {
    case Mark::REQACK: return "REQACK";
    case Mark::MINSIZE: return "MINSIZE";
    case Mark::MAXSIZE: return "MAXSIZE";
    case Mark::UNSUPPORTED: return "UNSUPPORTED";
    case Mark::CONFLICTING: return "CONFLICTING";
  }
  return "?";
}

std::span<const Rule> rules() { return kRules; }

bool Verdict::allows(Mark m) const { return std::find(acceptable.begin(), acceptable.end(), m) != acceptable.end(); }

std::optional<Verdict> size_verdict(const Offer& offer, std::uint32_t size_field) {
  Ack ack;
  ack.size = size_field;
  const std::vector<const Rule*> failing = failing_rules(offer, ack, Stage::SizeField);
  if (failing.empty()) return std::nullopt;
  // Both size rules can fail only if size_ack < 16; [K] checks MINSIZE first.
  return verdict_of({failing.front()});
}

Verdict ack_verdict(const Offer& offer, std::span<const std::byte> ack_wire) {
  const Ack ack = decode(ack_wire);
  if (auto by_size = size_verdict(offer, ack.size)) return *by_size;
  return verdict_of(failing_rules(offer, ack, Stage::WholeAck));
}

}  // namespace coredumpd::fake_kernel::kernel_rules
