// The tables of the top-level keys, of "compression" and of "testing" (config_keys.h).
#include "daemon/policy/config_keys.h"

#include <algorithm>

#include "daemon/policy/config_retention.h"
#include "daemon/proc/collect.h"

namespace coredumpd {

namespace {

using nlohmann::json;

constexpr std::string_view kOverloadActions[] = {"metadata-only", "reject"};

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
    {.name = "pending_dir", .type = "path", .values = "absolute; keep it off the store's filesystem",
     .default_text = "\"pending\" beside the socket: /run/coredumpd/pending",
     .description = "Where records wait that the index cannot take (a read-only or full store), until it can "
                    "(records.jsonl, at most 8 MiB).",
     .apply = [](const KeyValue& v, Config& c) { c.pending_dir = v.path(); },
     .write = [](const Config& c) -> json { return pending_dir_of(c); }},
    {.name = "fallback_dir", .type = "path", .values = "absolute; on a filesystem that is there in early boot (/run)",
     .default_text = "\"fallback\" beside the socket: /run/coredumpd/fallback",
     .description = "Where cores wait (created 0700) while the store cannot take them: not mounted yet in early boot, "
                    "read-only or full; moved into the store once it can (docs/EARLY_BOOT.md).",
     .apply = [](const KeyValue& v, Config& c) { c.fallback_dir = v.path(); },
     .write = [](const Config& c) -> json { return fallback_dir_of(c); }},
    {.name = "fallback_max_bytes", .type = "size", .values = "0 turns the fallback off", .default_text = "\"256M\"",
     .description = "Most bytes the cores in the fallback hold together (counted as spooled, uncompressed, while one "
                    "streams in); a core beyond it is recorded without its core, with the reason.",
     .apply = [](const KeyValue& v, Config& c) { c.fallback_max_bytes = v.size(); },
     .write = [](const Config& c) -> json { return c.fallback_max_bytes; }},
    {.name = "fallback_keep_free", .type = "size", .default_text = "\"32M\"",
     .description = "Free space the fallback never takes from its filesystem (/run is memory, shared with the system).",
     .apply = [](const KeyValue& v, Config& c) { c.fallback_keep_free = v.size(); },
     .write = [](const Config& c) -> json { return c.fallback_keep_free; }},
    {.name = "query_socket", .type = "path", .values = "absolute, shorter than 108 bytes, or \"\" (no query service)",
     .description = "Where users' dumpctl asks the daemon for their own dumps (docs/QUERY.md); ignored when systemd "
                    "passes the socket named \"query\". Read at start only.",
     .apply = [](const KeyValue& v, Config& c) {
       if (v.value.is_string() && v.value.get_ref<const std::string&>().empty()) {
         c.query_socket.clear();
         return;
       }
       c.query_socket = v.path();
       if (c.query_socket.size() >= 108) v.fail("path must be shorter than 108 bytes (UNIX_PATH_MAX)");
     },
     .write = [](const Config& c) -> json { return c.query_socket; }},
    integer_key<&Config::handshake_timeout>("handshake_timeout_ms", 10, 60'000,
        "Longest the crashing task stays frozen before the ack (the kernel has no timeout of its own)."),
    integer_key<&Config::stream_idle_timeout>("stream_idle_timeout_ms", 100, 3'600'000,
        "A core stream stalled this long between two reads is cut short."),
    integer_key<&Config::shutdown_grace>("shutdown_grace_ms", 0, 3'600'000,
        "On SIGTERM, how long dumps in flight may take to finish; keep below TimeoutStopSec=."),
    integer_key<&Config::listen_backlog>("listen_backlog", 16, 65535,
        "listen() backlog of a socket coredumpd creates; a full backlog loses dumps."),
    integer_key<&Config::dump_workers>("dump_workers", 1, 256,
        "Threads draining core streams (blocked on the socket most of the time)."),
    integer_key<&Config::collector_threads>("collector_threads", 1, 64, "Threads reading /proc during handshakes."),
    integer_key<&Config::compression_jobs>("compression_jobs", 1, 64,
        "Cores compressed at once, each with compression.threads zstd workers.",
        "the number of CPUs, at most 8"),
    integer_key<&Config::max_concurrent_dumps>("max_concurrent_dumps", 1, 4096,
        "Sanity bound on dumps in flight, beside the budgets; a crash beyond it waits for room, as over a budget."),
    {.name = "dump_memory_budget", .type = "size", .values = "at least 6M (one dump)", .default_text = "\"256M\"",
     .description = "Memory the core streams in flight hold together (6 MiB of spool buffers each, until the stream ends); a crash that does not fit waits.",
     .apply = [](const KeyValue& v, Config& c) {
       c.dump_memory_budget = v.size();
       if (c.dump_memory_budget < (std::uint64_t{6} << 20)) v.fail("must be at least 6M, the buffers of one dump");
     },
     .write = [](const Config& c) -> json { return c.dump_memory_budget; }},
    {.name = "dump_disk_budget", .type = "size", .default_text = "\"4G\"",
     .description = "Estimated core bytes of the dumps in flight together (spooled uncompressed; one dump counts at most a quarter); a crash that does not fit waits.",
     .apply = [](const KeyValue& v, Config& c) { c.dump_disk_budget = v.size(); },
     .write = [](const Config& c) -> json { return c.dump_disk_budget; }},
    {.name = "overload_action", .type = "string", .choices = kOverloadActions,
     .description = "What a crash gets when no room frees up before its handshake deadline: a record without the core, or a rejection.",
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
    integer_key<&Config::collector_budget>("collector_budget_ms", 1, 60'000,
        "A /proc collector that loops (e.g. over thousands of fds) stops after this long."),
    boolean_key<&Config::accept_forwarded>("accept_forwarded",
        "Receiver side of forwarding: accept a crash forwarded by the host's coredumpd."),
    boolean_key<&Config::spool_direct_io>("spool_direct_io",
        "The spool bypasses the page cache (O_DIRECT); false: all through the page cache."),
    boolean_key<&Config::compress_while_streaming>("compress_while_streaming",
        "Compress a core while it streams in, not only once its stream has ended.",
        "true with 4 or more CPUs"),
    {.name = "testing", .type = "object",
     .description = "Tests only, refused unless coredumpd runs with --enable-test-hooks: see the testing keys.",
     .apply = [](const KeyValue& v, Config& c) {
       if (!c.test_hooks)
         v.fail(std::string("a test-only section, refused: test hooks are off (coredumpd ") + kEnableTestHooksFlag +
                " turns them on, for tests only)");
       apply_keys(testing_keys(), v, c);
     },
     // Only when the hooks are on: --check-config's output must load again without the flag.
     .write = [](const Config& c) { return c.test_hooks ? keys_to_json(testing_keys(), c) : json(json::value_t::discarded); }},
    {.name = "retention", .type = "object",
     .description = "Store size limits, enforced before and after each store: see the retention keys.",
     .apply = [](const KeyValue& v, Config& c) { c.retention = parse_retention(v.origin, v.value, c.retention); },
     .write = [](const Config& c) { return keys_to_json(retention_keys(), c.retention); }},
    {.name = "analysis", .type = "object",
     .description = "The analysis of stored cores (stack traces, signature): see the analysis keys.",
     .apply = [](const KeyValue& v, Config& c) { apply_keys(analysis_keys(), v, c.analysis, {.unknown_key = unknown_key_naming(analysis_keys())}); },
     .write = [](const Config& c) { return keys_to_json(analysis_keys(), c.analysis); }},
    {.name = "journal", .type = "object",
     .description = "One journal entry per crash, as systemd-coredump writes it: see the journal keys.",
     .apply = [](const KeyValue& v, Config& c) { apply_keys(journal_keys(), v, c.journal, {.unknown_key = unknown_key_naming(journal_keys())}); },
     .write = [](const Config& c) { return keys_to_json(journal_keys(), c.journal); }},
    {.name = "upload", .type = "object",
     .description = "Records and cores to an S3 endpoint and the fleet index (PostgreSQL): see the upload keys.",
     .apply = [](const KeyValue& v, Config& c) { apply_keys(upload_keys(), v, c.upload, {.unknown_key = unknown_key_naming(upload_keys())}); },
     .write = [](const Config& c) { return keys_to_json(upload_keys(), c.upload); }},
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
    integer_key<&CompressionOptions::level>("level", 1, 19,
        "Accepted, but the level used is the policy's compression_level."),
    integer_key<&CompressionOptions::threads>("threads", 0, 64,
        "zstd workers per core; 0 compresses on the dump thread."),
    boolean_key<&CompressionOptions::core_tables>("core_tables",
        "At levels 3 and 4, match tables measured on cores (less CPU); false: zstd's own."),
};

constexpr ConfigKey<Config> kTesting[] = {
    integer_key<&Config::test_collector_delay>("collector_delay_ms", 0, kTestCollectorDelayMax.count(),
        "Tests only: a handshake collector sleeps this long (a stop ends it), to prove the handshake deadline holds."),
    {.name = "collector_delay_in", .type = "string", .values = "a handshake collector's name (comm, exe, cmdline, ...)",
     .description = "Tests only: the collector that sleeps collector_delay_ms before it reads; empty: one of its own.",
     .apply = [](const KeyValue& v, Config& c) {
       c.test_collector_delay_in = v.string();
       const auto names = handshake_collector_names();
       if (!c.test_collector_delay_in.empty() &&
           std::find(names.begin(), names.end(), c.test_collector_delay_in) == names.end())
         v.fail("no handshake collector is called \"" + c.test_collector_delay_in + "\"");
     },
     .write = [](const Config& c) -> json { return c.test_collector_delay_in; }},
};

}  // namespace

std::span<const ConfigKey<Config>> global_keys() { return kGlobal; }
std::span<const ConfigKey<CompressionOptions>> compression_keys() { return kCompression; }
std::span<const ConfigKey<Config>> testing_keys() { return kTesting; }

}  // namespace coredumpd
