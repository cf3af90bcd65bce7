#include "protocol/request.h"

#include <algorithm>
#include <cstring>

namespace coredumpd::protocol {

std::optional<RequestLayout> plan_request_read(std::uint32_t size, std::string& error) {
  if (size < COREDUMP_REQ_SIZE_VER0) {
    error = "coredump_req size " + std::to_string(size) + " is below the minimum of " +
            std::to_string(COREDUMP_REQ_SIZE_VER0) + " bytes";
    return std::nullopt;
  }
  if (size >= COREDUMP_REQ_SIZE_MAX) {
    error = "coredump_req size " + std::to_string(size) + " is implausibly large (limit " +
            std::to_string(COREDUMP_REQ_SIZE_MAX) + " bytes)";
    return std::nullopt;
  }
  const auto known = std::min<std::uint32_t>(size, sizeof(coredump_req));
  return RequestLayout{known, size - known};
}

coredump_req decode_request(std::span<const std::byte> prefix) {
  coredump_req req{};
  std::memcpy(&req, prefix.data(), std::min(prefix.size(), sizeof(req)));
  return req;
}

std::uint32_t peek_size_field(std::span<const std::byte, 4> first4) {
  std::uint32_t size = 0;
  std::memcpy(&size, first4.data(), sizeof(size));
  return size;
}

}  // namespace coredumpd::protocol
