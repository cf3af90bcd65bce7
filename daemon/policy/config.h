// The daemon's configuration: built-in defaults, overridden by JSON files (the main file and its
// conf.d/ drop-ins, config_files.h) and the command line. Unknown keys and bad values are errors
// naming the file, the key and the reason.
#pragma once

#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "daemon/policy/analysis_settings.h"
#include "daemon/policy/journal_settings.h"
#include "daemon/policy/upload_settings.h"
#include "daemon/policy/compression_options.h"
#include "daemon/policy/policy.h"
#include "store/query_protocol.h"
#include "store/retention_limits.h"
#include "protocol/wire.h"

namespace coredumpd {

/// A configuration error; what() reads "<file>: <key>: <reason>".
class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Threads to use for CPU-bound work: the number of CPUs, at least 1 and at most 8.
int default_parallelism();

/// The longest "testing": {"collector_delay_ms"} accepted: long enough to outlast any handshake
/// deadline a test sets, short enough that a forgotten hook cannot hold a collector thread for long.
inline constexpr std::chrono::milliseconds kTestCollectorDelayMax{5000};

/// The coredumpd flag that turns the test hooks on (Config::test_hooks), as errors name it.
inline constexpr const char* kEnableTestHooksFlag = "--enable-test-hooks";

/// Everything the daemon is configured with. Defaults are the values a fresh install runs with.
struct Config {
  std::string socket_path = "/run/coredumpd/coredump.socket";  ///< where the kernel connects (@@PATH)
  std::string store_dir = "/var/lib/coredumpd";                ///< cores and index.sqlite
  /// Records the index cannot take (a read-only or full store) wait here (store/pending_journal.h).
  /// "": `pending` beside the socket (/run/coredumpd/pending by default): see pending_dir_of().
  std::string pending_dir;
  /// Cores the store cannot take yet (not mounted in early boot, read-only, full) wait here
  /// (daemon/dump/core_fallback.h). "": `fallback` beside the socket: see fallback_dir_of().
  std::string fallback_dir;
  /// Most bytes the fallback's cores hold together; 0: no fallback (metadata only, as before).
  std::uint64_t fallback_max_bytes = std::uint64_t{256} << 20;
  /// Free bytes the fallback leaves on its filesystem (a tmpfs: memory).
  std::uint64_t fallback_keep_free = std::uint64_t{32} << 20;
  /// Where the query service listens (docs/QUERY.md) unless systemd passes its socket; "" turns the
  /// service off. Read at start only.
  std::string query_socket = kDefaultQuerySocket;
  /// Longest the crashing task may stay frozen before we ack (accept -> ack sent). The kernel has no
  /// timeout of its own (docs/PROTOCOL.md §4.7), so this bound is ours to keep.
  std::chrono::milliseconds handshake_timeout{2000};
  /// Longest a core stream may stall between two reads before the dump is cut short.
  std::chrono::milliseconds stream_idle_timeout{30000};
  /// On SIGTERM, how long in-flight dumps may take to finish before the daemon exits anyway
  /// (they are then marked interrupted at the next start). Keep below systemd's TimeoutStopSec.
  std::chrono::milliseconds shutdown_grace{20000};
  int listen_backlog = 4096;   ///< the kernel's connect is non-blocking: a full backlog loses dumps (docs/PROTOCOL.md §2.4)
  int dump_workers = 64;       ///< threads draining core streams (blocked on the socket most of the time)
  /// Cores compressed at once (each may use compression.threads zstd workers). Default: one per CPU.
  int compression_jobs = default_parallelism();
  /// Dumps admitted at once (streaming, or spooled and waiting to be compressed): a sanity bound
  /// beside the two budgets below. A crash that finds no room waits for it (the kernel keeps the
  /// task frozen) until its handshake deadline nears, then gets `overload_action`.
  int max_concurrent_dumps = 1024;
  /// Memory the dumps in flight may hold together (bytes): each reserves its spool blocks and read
  /// buffer, Spool::kArenaBytes + Spool::kBlockBytes (6 MiB), from admission to the end of its stream. The
  /// daemon's RSS bound follows from it (bench/README.md, "Crash storms").
  std::uint64_t dump_memory_budget = std::uint64_t{256} << 20;
  /// Disk the dumps in flight may hold together (bytes): each reserves its estimated core size
  /// (the spool is uncompressed), cut to the policy's max_core_bytes and to a quarter of this
  /// budget (a larger core is bounded as it is written, by keep_free and max_core_bytes).
  std::uint64_t dump_disk_budget = std::uint64_t{4} << 30;
  /// What a crash gets when no room freed up before its handshake deadline: MetadataOnly (a record
  /// without the core, USERSPACE mode) or Reject. Never a silent drop.
  Action overload_action = Action::MetadataOnly;
  int collector_threads = 2;   ///< threads reading /proc during handshakes
  CompressionOptions compression;
  /// Value of COREDUMP_CLOSE_FILES on this host (RFC; not final, docs/PROTOCOL.md §6.4).
  std::uint64_t close_files_bit = protocol::COREDUMP_CLOSE_FILES_DEFAULT;
  /// Accept peers whose pidfd lacks PIDFD_COREDUMPED. For the fake-kernel tests only; command line only.
  bool allow_unverified_peers = false;
  /// Receiver side of forwarding: accept a peer that is not a crashing task but a process outside
  /// this daemon's pid namespace (SO_PEERCRED pid 0, pidfd not resolvable here) — only the host can
  /// be that when this daemon runs in a container — as a forwarder of a crash (action "forward" of
  /// the host's coredumpd). Such dumps are recorded with extra.forwarded_from_host. Off by default:
  /// every other non-crashing peer stays refused either way.
  bool accept_forwarded = false;
  /// The spool is written and read with O_DIRECT (spool.h), blocks the disk cannot take yet going
  /// through the page cache: the default, since on a VM whose free memory goes back to its host a
  /// page-cache spool drained at half the kernel's rate (bench/README.md, "The spool bypasses the
  /// page cache"). false: all through the page cache.
  bool spool_direct_io = true;
  /// Compress a core while it streams in (at SCHED_IDLE, reading the spool back from the disk) rather
  /// than only once its stream has ended. Default: with 4 or more CPUs. On 2 CPUs the kernel's emit
  /// and the drain take both, and a compressor beside them delays the task's release (bench/README.md,
  /// "Compression after the stream on fewer than 4 CPUs").
  bool compress_while_streaming = default_parallelism() >= 4;
  /// A collector that loops (e.g. over thousands of fds) stops after this long.
  std::chrono::milliseconds collector_budget{500};
  /// Test hooks are on (coredumpd --enable-test-hooks; command line only). Without it a "testing"
  /// section is a configuration error, so no file or drop-in can turn a hook on by itself.
  bool test_hooks = false;
  /// Tests only ("testing": {"collector_delay_ms": N}, N <= kTestCollectorDelayMax): a handshake
  /// collector that sleeps N ms, to prove the handshake deadline holds when a collector blocks. A
  /// stop (SIGTERM) ends the sleep at once.
  std::chrono::milliseconds test_collector_delay{0};
  /// Tests only ("testing": {"collector_delay_in": name}): the collector of
  /// handshake_collector_names() (daemon/proc/collect.h) that sleeps test_collector_delay before it
  /// reads, as a stalled /proc read would; "" for a collector of its own.
  std::string test_collector_delay_in;

  /// "retention": vacuum before and after each store. Default: systemd-coredump's (default_retention()).
  RetentionLimits retention = default_retention();

  /// "analysis": the analysis of stored cores (daemon/analyze/); applies to jobs started after a reload.
  AnalysisSettings analysis;

  /// "journal": the crash's journal entry (daemon/journal/); applies to entries sent after a reload.
  JournalSettings journal;

  /// "upload": records and cores to S3 and the fleet index (daemon/upload/); off while endpoint is "".
  UploadSettings upload;

  Policy defaults;          ///< policy when no rule matches
  std::vector<Rule> rules;  ///< first match wins
};

/// The retention limits in force: `c.retention` with every rule's "max_use" (and the defaults'
/// one, as the quota of rule "") added to max_use_per_rule_bytes, so that one mechanism enforces
/// both. Where both name a rule, they agree (apply_config_json() refuses a conflict).
RetentionLimits effective_retention(const Config& c);

/// The pending journal's directory: c.pending_dir, or when that is "" the directory `pending` beside
/// c.socket_path (a tmpfs under /run by default, writable when the store is not).
std::string pending_dir_of(const Config& c);
/// The fallback's directory: c.fallback_dir, or when that is "" the directory `fallback` beside the
/// socket (/run/coredumpd/fallback by default).
std::string fallback_dir_of(const Config& c);

/// Reads one JSON configuration file (no drop-ins) over `base` and returns the result. Throws
/// ConfigError. The daemon reads the main file and its drop-ins with load_config() (config_files.h).
Config load_config_file(const std::string& path, Config base);

/// Parses and applies one JSON document (named `origin` in errors) over `base`. Throws ConfigError.
Config apply_config_json(const std::string& origin, const std::string& text, Config base);

/// Parses configuration text: JSON with // and /* */ comments. Throws ConfigError
/// "<origin>: (syntax): <reason>".
nlohmann::json parse_config_text(const std::string& origin, const std::string& text);

/// Where a rule of a merged document was written: its file and its index in that file's "rules".
struct RuleSource {
  std::string file;
  std::size_t index = 0;
};

/// Applies an already parsed document (named `origin` in errors) over `base`. Every key present
/// replaces the base's setting, except that the keys of "compression", "testing", "retention" and
/// "defaults" are applied one by one over the base's; "rules", when present, replaces the base's
/// rules, each rule starting from the resulting "defaults". `rule_sources`, for a document merged
/// from several files (one entry per rule), makes the errors only the merged document can have
/// (quota conflicts between rules of different files) name the rule's own file and index. Throws
/// ConfigError.
Config apply_config(const std::string& origin, const nlohmann::json& doc, Config base,
                    const std::vector<RuleSource>& rule_sources = {});

/// The memory type names of "memory_types" with their COREDUMP_MEMORY_* bits, in bit order.
const std::vector<std::pair<std::string, std::uint64_t>>& memory_type_names();

}  // namespace coredumpd
