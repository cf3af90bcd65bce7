#include "daemon/policy/config_json.h"

#include "daemon/policy/config_keys.h"

namespace coredumpd {

nlohmann::json policy_to_json(const Policy& p) { return keys_to_json(policy_keys(), p); }

nlohmann::json config_to_json(const Config& c) { return keys_to_json(global_keys(), c); }

}  // namespace coredumpd
