// The tables of the top-level keys, of "compression" and of "testing" (config_keys.h).
#include "daemon/policy/config_keys.h"

#include "daemon/policy/config_retention.h"

namespace coredumpd {

namespace {

using nlohmann::json;
using std::chrono::milliseconds;

constexpr std::string_view kOverloadActions[] = {"metadata-only", "reject"};

milliseconds ms(const KeyValue& v) { return milliseconds(v.integer()); }

constexpr ConfigKey<Config> kGlobal[] = {
    {.name = "socket", .type = "path", .values = "absolute, shorter than 108 bytes, no spaces",
     .description = "Where the kernel connects (kernel.core_pattern=@@PATH); ignored when systemd passes the socket.",
     .apply = [](const KeyValue& v, Config& c) {
       c.socket_path = v.path();
       if (c.socket_path.size() >= 108) v.fail("path must be shorter than 108 bytes (UNIX_PATH_MAX)");
       if (c.socket_path.find(' ') != std::string::npos) v.fail("the kernel refuses socket paths with spaces");
     },
     .write = [](const Config& c) -> json { return c.socket_path; }},
    {.name = "store", .type = "path", .values = "absolute",
     .description = "The store: cores and index.sqlite.",
     .apply = [](const KeyValue& v, Config& c) { c.store_dir = v.path(); },
     .write = [](const Config& c) -> json { return c.store_dir; }},
    {.name = "handshake_timeout_ms", .type = "integer (ms)", .min = 10, .max = 60'000,
     .description = "Longest the crashing task stays frozen before the ack (the kernel has no timeout of its own).",
     .apply = [](const KeyValue& v, Config& c) { c.handshake_timeout = ms(v); },
     .write = [](const Config& c) -> json { return c.handshake_timeout.count(); }},
    {.name = "stream_idle_timeout_ms", .type = "integer (ms)", .min = 100, .max = 3'600'000,
     .description = "A core stream stalled this long between two reads is cut short.",
     .apply = [](const KeyValue& v, Config& c) { c.stream_idle_timeout = ms(v); },
     .write = [](const Config& c) -> json { return c.stream_idle_timeout.count(); }},
    {.name = "shutdown_grace_ms", .type = "integer (ms)", .min = 0, .max = 3'600'000,
     .description = "On SIGTERM, how long dumps in flight may take to finish; keep below TimeoutStopSec=.",
     .apply = [](const KeyValue& v, Config& c) { c.shutdown_grace = ms(v); },
     .write = [](const Config& c) -> json { return c.shutdown_grace.count(); }},
    {.name = "listen_backlog", .type = "integer", .min = 16, .max = 65535,
     .description = "listen() backlog of a socket coredumpd creates; a full backlog loses dumps.",
     .apply = [](const KeyValue& v, Config& c) { c.listen_backlog = static_cast<int>(v.integer()); },
     .write = [](const Config& c) -> json { return c.listen_backlog; }},
    {.name = "dump_workers", .type = "integer", .min = 1, .max = 256,
     .description = "Threads draining core streams (blocked on the socket most of the time).",
     .apply = [](const KeyValue& v, Config& c) { c.dump_workers = static_cast<int>(v.integer()); },
     .write = [](const Config& c) -> json { return c.dump_workers; }},
    {.name = "collector_threads", .type = "integer", .min = 1, .max = 64,
     .description = "Threads reading /proc during handshakes.",
     .apply = [](const KeyValue& v, Config& c) { c.collector_threads = static_cast<int>(v.integer()); },
     .write = [](const Config& c) -> json { return c.collector_threads; }},
    {.name = "compression_jobs", .type = "integer", .min = 1, .max = 64,
     .default_text = "the number of CPUs, at most 8",
     .description = "Cores compressed at once, each with compression.threads zstd workers.",
     .apply = [](const KeyValue& v, Config& c) { c.compression_jobs = static_cast<int>(v.integer()); },
     .write = [](const Config& c) -> json { return c.compression_jobs; }},
    {.name = "max_concurrent_dumps", .type = "integer", .min = 1, .max = 4096,
     .description = "Cores streaming at once (~5 MiB of buffers each); beyond it a crash gets overload_action.",
     .apply = [](const KeyValue& v, Config& c) { c.max_concurrent_dumps = static_cast<int>(v.integer()); },
     .write = [](const Config& c) -> json { return c.max_concurrent_dumps; }},
    {.name = "overload_action", .type = "string", .choices = kOverloadActions,
     .description = "What a crash beyond max_concurrent_dumps gets: a record without the core, or a rejection.",
     .apply = [](const KeyValue& v, Config& c) { c.overload_action = *action_from_name(v.choice()); },
     .write = [](const Config& c) -> json { return action_name(c.overload_action); }},
    {.name = "compression", .type = "object",
     .description = "zstd settings: see the compression keys.",
     .apply = [](const KeyValue& v, Config& c) {
       apply_keys(compression_keys(), v, c.compression,
                  {.not_object = "expected an object with \"level\", \"threads\" and/or \"core_tables\""});
     },
     .write = [](const Config& c) { return keys_to_json(compression_keys(), c.compression); }},
    {.name = "close_files_bit", .type = "integer", .min = 1, .max = std::int64_t{1} << 62,
     .values = "a single bit above 0x40",
     .default_text = "128 (0x80), unless the kernel headers define COREDUMP_CLOSE_FILES",
     .description = "Mask bit of COREDUMP_CLOSE_FILES (an RFC, value not final); change only for a kernel using another.",
     .apply = [](const KeyValue& v, Config& c) {
       const auto bit = v.integer();
       if ((bit & (bit - 1)) != 0) v.fail("must be a single bit (a power of two)");
       if (static_cast<std::uint64_t>(bit) <= protocol::COREDUMP_MEMORY_TYPES)
         v.fail("collides with a mainline/NEXT mask bit (0x01..0x40)");
       c.close_files_bit = static_cast<std::uint64_t>(bit);
     },
     .write = [](const Config& c) -> json { return c.close_files_bit; }},
    {.name = "collector_budget_ms", .type = "integer (ms)", .min = 1, .max = 60'000,
     .description = "A /proc collector that loops (e.g. over thousands of fds) stops after this long.",
     .apply = [](const KeyValue& v, Config& c) { c.collector_budget = ms(v); },
     .write = [](const Config& c) -> json { return c.collector_budget.count(); }},
    {.name = "accept_forwarded", .type = "boolean",
     .description = "Receiver side of forwarding: accept a crash forwarded by the host's coredumpd.",
     .apply = [](const KeyValue& v, Config& c) { c.accept_forwarded = v.boolean(); },
     .write = [](const Config& c) -> json { return c.accept_forwarded; }},
    {.name = "spool_direct_io", .type = "boolean",
     .description = "The spool bypasses the page cache (O_DIRECT); false: all through the page cache.",
     .apply = [](const KeyValue& v, Config& c) { c.spool_direct_io = v.boolean(); },
     .write = [](const Config& c) -> json { return c.spool_direct_io; }},
    {.name = "compress_while_streaming", .type = "boolean", .default_text = "true with 4 or more CPUs",
     .description = "Compress a core while it streams in, not only once its stream has ended.",
     .apply = [](const KeyValue& v, Config& c) { c.compress_while_streaming = v.boolean(); },
     .write = [](const Config& c) -> json { return c.compress_while_streaming; }},
    {.name = "testing", .type = "object",
     .description = "Tests only: see the testing keys.",
     .apply = [](const KeyValue& v, Config& c) { apply_keys(testing_keys(), v, c); },
     .write = [](const Config& c) { return keys_to_json(testing_keys(), c); }},
    {.name = "retention", .type = "object",
     .description = "Store size limits, enforced before and after each store: see the retention keys.",
     .apply = [](const KeyValue& v, Config& c) { c.retention = parse_retention(v.origin, v.value, c.retention); },
     .write = [](const Config& c) { return keys_to_json(retention_keys(), c.retention); }},
    {.name = "defaults", .type = "object",
     .description = "Policy for a crash no rule matches; rules start from it: see the policy keys.",
     .apply = [](const KeyValue& v, Config& c) { apply_policy(v, c.defaults); },
     .write = [](const Config& c) { return keys_to_json(policy_keys(), c.defaults); }},
    {.name = "rules", .type = "list of rules",
     .description = "Ordered rules; the first whose match holds supplies the policy: see the rule keys.",
     .apply = [](const KeyValue& v, Config&) {
       if (!v.value.is_array()) v.fail("expected a list of rules");
     },
     .write = [](const Config& c) {
       json rules = json::array();
       for (const auto& r : c.rules) {
         json rule = keys_to_json(rule_keys(), r);
         rule.update(keys_to_json(policy_keys(), r.policy));
         rules.push_back(std::move(rule));
       }
       return rules;
     },
     .apply_late = apply_rules},
};

constexpr ConfigKey<CompressionOptions> kCompression[] = {
    {.name = "level", .type = "integer", .min = 1, .max = 19,
     .description = "Accepted, but the level used is the policy's compression_level.",
     .apply = [](const KeyValue& v, CompressionOptions& o) { o.level = static_cast<int>(v.integer()); },
     .write = [](const CompressionOptions& o) -> json { return o.level; }},
    {.name = "threads", .type = "integer", .min = 0, .max = 64,
     .description = "zstd workers per core; 0 compresses on the dump thread.",
     .apply = [](const KeyValue& v, CompressionOptions& o) { o.threads = static_cast<int>(v.integer()); },
     .write = [](const CompressionOptions& o) -> json { return o.threads; }},
    {.name = "core_tables", .type = "boolean",
     .description = "At levels 3 and 4, match tables measured on cores (less CPU); false: zstd's own.",
     .apply = [](const KeyValue& v, CompressionOptions& o) { o.core_tables = v.boolean(); },
     .write = [](const CompressionOptions& o) -> json { return o.core_tables; }},
};

constexpr ConfigKey<Config> kTesting[] = {
    {.name = "collector_delay_ms", .type = "integer (ms)", .min = 0, .max = 600'000,
     .description = "Tests only: a handshake collector sleeps this long, to prove the handshake deadline holds.",
     .apply = [](const KeyValue& v, Config& c) { c.test_collector_delay = ms(v); },
     .write = [](const Config& c) -> json { return c.test_collector_delay.count(); }},
};

}  // namespace

std::span<const ConfigKey<Config>> global_keys() { return kGlobal; }
std::span<const ConfigKey<CompressionOptions>> compression_keys() { return kCompression; }
std::span<const ConfigKey<Config>> testing_keys() { return kTesting; }

}  // namespace coredumpd
