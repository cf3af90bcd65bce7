// One crash as coredumpd records it: identity, metadata, and what became of its core.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace coredumpd {

/// DumpRecord::compression of a core stored as a zstd stream, in "<id>" + kZstdExtension.
inline constexpr std::string_view kCompressionZstd = "zstd";
/// DumpRecord::compression of a core stored uncompressed (sampling showed zstd would not shrink
/// it), in "<id>" + kRawExtension. The file holds the core's bytes; it may be sparse (holes read
/// as zeros).
inline constexpr std::string_view kCompressionNone = "none";
/// File name extension of a kCompressionZstd core.
inline constexpr std::string_view kZstdExtension = ".zst";
/// File name extension of a kCompressionNone core.
inline constexpr std::string_view kRawExtension = ".core";

/// Lifecycle of a record in the index. A record is shown as having a usable core only in Complete
/// (and Truncated, with a warning).
enum class DumpState {
  InProgress,    ///< ack sent, core streaming; never shown as complete
  Complete,      ///< core file durable, renamed into place, sizes final
  Truncated,     ///< core file durable but cut short (stream ended early or a size limit applied)
  Failed,        ///< no usable core (I/O error, protocol error, refused marker); `reason` says why
  Interrupted,   ///< the daemon died while the dump was in progress (found at the next start)
  MetadataOnly,  ///< policy or load chose a record without a core (USERSPACE, rate limit, ...)
  Rejected,      ///< policy said no dump: the kernel was sent REJECT
  Forwarded,     ///< handed to a receiver in the crashing process's container (extra.forward); no core here
};

/// Stable lower-case name ("in_progress", "complete", ...); used in the index and JSON.
const char* state_name(DumpState s);
/// Parses a name produced by state_name(); std::nullopt for anything else.
std::optional<DumpState> parse_state(const std::string& s);

/// Everything stored about one crash. Strings that come from the crashing process (comm, exe, argv,
/// cwd, cgroup, hostname) are untrusted bytes: they may hold any byte except NUL, need not be UTF-8,
/// and are never used to build a path.
struct DumpRecord {
  std::string id;                    ///< 32 lower-case hex chars; also the core file's name stem
  DumpState state = DumpState::InProgress;
  std::string reason;                ///< why Failed/Truncated/Rejected/MetadataOnly; empty otherwise
  std::int64_t timestamp_us = 0;     ///< crash time: UTC microseconds since the epoch, taken at accept

  // Identity of the crashing process (host namespaces; from the pidfd and /proc/<pid>).
  std::int64_t pid = 0;              ///< host TGID
  std::optional<std::int64_t> tid;   ///< host TID of the crashing thread, if it could be mapped
  std::int64_t uid = -1, gid = -1;   ///< real ids
  std::int64_t euid = -1, egid = -1; ///< effective ids
  std::string comm;                  ///< /proc/<pid>/comm without the newline
  std::string exe;                   ///< /proc/<pid>/exe link target (may end in " (deleted)")
  std::vector<std::string> argv;     ///< /proc/<pid>/cmdline split at NUL; empty strings kept
  std::string cwd;
  std::string cgroup;                ///< /proc/<pid>/cgroup verbatim (all hierarchies on v1)
  std::string hostname;              ///< in the crashing process's UTS namespace
  std::string boot_id;               ///< /proc/sys/kernel/random/boot_id of this boot
  std::uint32_t coredump_mask = 0;   ///< pidfd_info.coredump_mask (PIDFD_COREDUMPED, ..._ROOT)

  // The fatal signal: the pidfd's coredump_signal at the handshake (PIDFD_INFO_COREDUMP_SIGNAL,
  // 6.19+), else the core's NT_SIGINFO / NT_PRSTATUS notes; when neither, extra
  // "signal_unavailable" says why (record_extras.h).
  std::optional<int> signal;
  std::optional<std::int64_t> crashing_tid_ns;  ///< NT_PRSTATUS pr_pid: TID in the task's own pid ns

  // The core and where it went.
  std::uint64_t core_size = 0;       ///< uncompressed bytes received from the kernel
  /// st_size of the stored file. For compression "none" this equals the core bytes kept
  /// (core_size when Complete, extra.stored_core_bytes when Truncated).
  std::uint64_t stored_size = 0;
  /// How the core is stored: kCompressionZstd (a zstd stream), kCompressionNone (the raw bytes,
  /// kept as is because zstd would not shrink them), or "" when no core is stored.
  std::string compression;
  /// Core file name relative to the store dir: "<id>.zst" for "zstd", "<id>.core" for "none";
  /// "" when no core is stored.
  std::string path;

  // What the policy was chosen by: columns of the index (queried by retention and dumpctl), also
  // written to `extra` (extras::kRule, extras::kContainer) for readers of the JSON.
  /// Name of the policy rule that chose this dump's policy; "" for the defaults, or when no policy
  /// was decided (a handshake cut short).
  std::string rule;
  /// container_key() of the crashing task's container ("docker:<id>", "nspawn:<name>", "host"...;
  /// bytes; "" if the container object has no key); std::nullopt when no container was
  /// identified (no extra.container).
  std::optional<std::string> container_key;

  /// Further metadata (negotiation, collectors' output, timings...), free-form JSON object.
  nlohmann::json extra = nlohmann::json::object();

  // What the analysis of the stored core found (analysis/crash_report.h), written after the store
  // by Index::set_analysis() only; Index::update() leaves these columns alone.
  /// The crash signature's hash (analysis/signature.h, 32 hex chars); "" until analysed or when
  /// the analysis had no frame to sign.
  std::string signature;
  /// The signature's readable form ("SIGSEGV: crash_here | level2 | main"); "" with no signature.
  std::string signature_text;
  /// The analyzer's report as JSON (analysis::to_json()); null when not analysed (yet). Index::list()
  /// leaves it null (a report may be 1 MiB); Index::get() reads it.
  nlohmann::json analysis;
};

/// Name of a signal number ("SIGSEGV"), or "SIG<n>" when unknown.
std::string signal_name(int signo);

/// Converts a record to JSON for `dumpctl --json`. Strings that are valid UTF-8 become JSON strings;
/// any other byte string becomes an array of byte values (0..255), as journalctl does for binary
/// fields, so that no byte is lost or altered. Keys are the field names of DumpRecord; `state` is
/// state_name(); `argv` is an array of such byte strings; optional fields are null when unset; an
/// extra key `signal_name` holds signal_name(signal) (or null). `extra` is copied as is.
nlohmann::json to_json(const DumpRecord& r);

/// A byte string as JSON: a string if valid UTF-8, else an array of its byte values.
nlohmann::json bytes_to_json(const std::string& bytes);

/// The inverse of bytes_to_json(): a JSON string's UTF-8 bytes, or the bytes of an array of
/// integers 0..255. std::nullopt for any other JSON value (for readers of `dumpctl --json`).
std::optional<std::string> bytes_from_json(const nlohmann::json& j);

}  // namespace coredumpd
