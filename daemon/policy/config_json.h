// The effective configuration written back as JSON (`coredumpd --check-config`).
#pragma once

#include <nlohmann/json.hpp>

#include "daemon/policy/config.h"

namespace coredumpd {

/// Every setting of `c` as a configuration document: each key apply_config() reads, with its
/// value ("user" resolved to "uid", memory types as names, unset limits as null), and each rule
/// with its name, its match and its full effective policy (the defaults merged in). Loading the
/// result with apply_config() over any base gives `c` back (command-line-only settings aside).
nlohmann::json config_to_json(const Config& c);

/// The policy keys of `p` as in "defaults" or a rule: every one of them.
nlohmann::json policy_to_json(const Policy& p);

}  // namespace coredumpd
