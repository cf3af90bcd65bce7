// A fake-kernel Result as JSON, for the `fake-kernel` CLI and for test logs.
#pragma once

#include <nlohmann/json.hpp>

#include "tests/fake_kernel/fake_kernel.h"

namespace coredumpd::fake_kernel {

/// Every field of `result` as a JSON object. Byte strings (request, ack_raw) are lowercase hex;
/// unset optionals are null; enums use their *_name() strings; markers carry value and name;
/// timeline values are microseconds since the session started.
nlohmann::json result_to_json(const Result& result);

/// Lowercase hex of `bytes`, no separators ("10000000...").
std::string to_hex(std::span<const std::byte> bytes);

}  // namespace coredumpd::fake_kernel
