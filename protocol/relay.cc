#include "protocol/relay.h"

#include <algorithm>

namespace coredumpd::protocol {

coredump_req receiver_request(const coredump_req& kernel, std::uint64_t close_files_bit) {
  const std::uint64_t relayable = COREDUMP_KERNEL | COREDUMP_USERSPACE | COREDUMP_REJECT | COREDUMP_WAIT |
                                  COREDUMP_RECORDS | COREDUMP_SPARSE | COREDUMP_MEMORY_TYPES | close_files_bit;
  coredump_req r{};
  r.size = std::clamp<std::uint32_t>(kernel.size, COREDUMP_REQ_SIZE_VER0, COREDUMP_REQ_SIZE_VER1);
  r.size_ack = std::min<std::uint32_t>(kernel.size_ack, COREDUMP_ACK_SIZE_VER1);
  r.mask = kernel.mask & relayable;
  if (r.size >= COREDUMP_REQ_SIZE_VER1) {
    r.memory_types = kernel.memory_types;
    r.memory_types_mask = kernel.memory_types_mask;
  }
  return r;
}

Wants wants_matching_ack(const coredump_ack& a, std::uint64_t close_files_bit) {
  Wants w;
  w.mode = (a.mask & COREDUMP_KERNEL) ? Mode::Kernel : (a.mask & COREDUMP_USERSPACE) ? Mode::Userspace : Mode::Reject;
  w.wait = (a.mask & COREDUMP_WAIT) != 0;
  w.records = (a.mask & COREDUMP_RECORDS) != 0;
  w.sparse = (a.mask & COREDUMP_SPARSE) != 0;
  w.close_files = (a.mask & close_files_bit) != 0;
  if (a.mask & COREDUMP_MEMORY_TYPES) w.memory_types = a.memory_types;
  return w;
}

bool same_stream(const coredump_ack& host, const coredump_ack& receiver, std::uint64_t close_files_bit) {
  const std::uint64_t stream_bits = COREDUMP_MODE_MASK | COREDUMP_RECORDS | COREDUMP_SPARSE | COREDUMP_MEMORY_TYPES |
                                    close_files_bit;
  if ((host.mask & stream_bits) != (receiver.mask & stream_bits)) return false;
  return !(host.mask & COREDUMP_MEMORY_TYPES) || host.memory_types == receiver.memory_types;
}

}  // namespace coredumpd::protocol
