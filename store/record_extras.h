// Every key of DumpRecord::extra, the JSON object stored with each dump (the index's `extra`
// column, `dumpctl info --extra`, `dumpctl --json`). One constant per top-level key, with its type,
// unit and the code that writes it; readers and writers use these names, never the literal. The
// spelling is the on-disk format: a key's string never changes.
//
// Times are microseconds ("_us") since the session accepted the connection (handshake) or since
// the dump job started (dump), unless said otherwise. Byte strings from the crashing process are
// bytes_to_json() encoded (a string if UTF-8, else an array of byte values).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace coredumpd::extras {

// --- Handshake (daemon/handshake/session.cc) ------------------------------------------------

/// bool: the kernel dumped as the task's own user (PIDFD_COREDUMP_USER, not ..._ROOT).
inline constexpr const char* kOwnerMayRead = "owner_may_read";
/// integer: pidfd_info.cgroupid of the crashing task.
inline constexpr const char* kCgroupId = "cgroup_id";
/// object {peer_uid, peer_gid}: the crash was forwarded by a coredumpd outside our pid namespace.
inline constexpr const char* kForwardedFromHost = "forwarded_from_host";
/// bool true: the peer was not verified as a crashing task (allow_unverified_peers).
inline constexpr const char* kUnverifiedPeer = "unverified_peer";
/// object of integers, µs since accept: "request", "collect_start", "collect_end", "collected".
inline constexpr const char* kHandshakeStepsUs = "handshake_steps_us";
/// object {size, size_ack, mask, memory_types, memory_types_mask}: the kernel's coredump_req.
inline constexpr const char* kRequest = "request";
/// object name -> error text: collectors that failed during the handshake.
inline constexpr const char* kCollectErrors = "collect_errors";
/// object {missed: array of collector names (daemon/proc/collect.h handshake_collector_names()),
/// reason: string}: the handshake deadline came before these collectors finished; their fields
/// are empty unless extra.from_core names them.
inline constexpr const char* kMetadataIncomplete = "metadata_incomplete";
/// array of strings, record fields taken from the core's notes after the stream because the
/// handshake had none: "comm" (NT_PRPSINFO pr_fname), "argv" (pr_psargs), "exe" (NT_FILE),
/// "maps" (NT_FILE, in kCoreMappedFiles), "signal" (NT_SIGINFO / NT_PRSTATUS). Written by
/// daemon/dump/core_fill.cc.
inline constexpr const char* kFromCore = "from_core";
/// array of {start, end, offset (bytes), path (byte string)}: the core's NT_FILE mappings, stored
/// when /proc/<pid>/maps was not read (at most 4096 entries).
inline constexpr const char* kCoreMappedFiles = "core_mapped_files";
/// object name -> integer µs: how long each collector took.
inline constexpr const char* kCollectTimingsUs = "collect_timings_us";
/// string: why the record has no signal from the kernel (decode_coredump_signal() in
/// daemon/proc/peer.h: "this kernel does not report it ..."); absent when the pidfd gave one.
/// A core's own notes may still give the signal later (DumpRecord::signal).
inline constexpr const char* kSignalUnavailable = "signal_unavailable";
/// string: why the handshake got no si_code from the kernel (decode_coredump_code() in
/// daemon/proc/peer.h: PIDFD_INFO_COREDUMP_CODE is newer than 6.18); absent when the pidfd gave
/// one. A core's NT_SIGINFO may still give it later (kSiCode).
inline constexpr const char* kSiCodeUnavailable = "si_code_unavailable";
/// integer, bytes: the task's RLIMIT_CORE soft limit (absent if unknown).
inline constexpr const char* kRlimitCore = "rlimit_core";
/// object {"<tid>": byte string}: each thread's comm, read from /proc/<pid>/task/*/comm before the
/// ack; keys are TIDs in the crashing task's pid namespace (as NT_PRSTATUS pr_pid has them), so
/// the analysis can name its threads (daemon/proc/collect.cc).
inline constexpr const char* kThreadNames = "thread_names";
/// object {"read": n, "omitted": n, "reason": string}: thread names not captured (a cap, a pid
/// namespace whose TIDs could not be mapped, a thread gone).
inline constexpr const char* kThreadNamesIncomplete = "thread_names_incomplete";
/// object: /proc files read at the handshake (status, maps, namespaces, ...); the dump job adds
/// "smaps_rollup" (post-dump collector).
inline constexpr const char* kProc = "proc";
/// object: to_json(ContainerInfo) (daemon/policy/container.h); its "key" is also the index's
/// container_key column (DumpRecord::container_key).
inline constexpr const char* kContainer = "container";
/// string: name of the policy rule that chose the policy, "" for the defaults; also the index's
/// rule column (DumpRecord::rule).
inline constexpr const char* kRule = "rule";
/// array of byte strings: the task's environment (policy capture_environ).
inline constexpr const char* kEnviron = "environ";
/// object {socket, skipped, receiver_ack, outcome ("delivered"/"fallback"), error, bytes_relayed}:
/// forwarding to a receiver in the container (session, then the dump job).
inline constexpr const char* kForward = "forward";
/// integer µs since accept: the coredump_ack was ready to send.
inline constexpr const char* kHandshakeUs = "handshake_us";
/// object {offered, acked, mode, wait, records, sparse, close_files, memory_types}: the ack.
inline constexpr const char* kNegotiation = "negotiation";
/// object {rule, container, burst, interval_s, suppressed, suppressed_total}: the rate limit that
/// turned this crash into a metadata-only record.
inline constexpr const char* kRateLimited = "rate_limited";

// --- Dump (daemon/dump/dump_job.cc) ---------------------------------------------------------

/// integer: siginfo si_code of the fatal signal: from the pidfd at the handshake
/// (PIDFD_INFO_COREDUMP_CODE; the only source for a record without a core), then from the core's
/// NT_SIGINFO note when there is one.
inline constexpr const char* kSiCode = "si_code";
/// integer: the faulting address from NT_SIGINFO (unsigned, as a number).
inline constexpr const char* kFaultAddress = "fault_address";
/// integer: threads in the core (NT_PRSTATUS notes).
inline constexpr const char* kThreads = "threads";
/// string: why the core's notes could not be read in full.
inline constexpr const char* kCoreNoteError = "core_note_error";
/// object name -> error text: post-dump collectors that failed.
inline constexpr const char* kPostDumpErrors = "post_dump_errors";
/// integer, bytes: how much of the core was compressed while the kernel was still streaming.
inline constexpr const char* kCompressedWhileStreaming = "compressed_while_streaming";
/// array: the compressibility sampler's samples (what decided zstd or raw).
inline constexpr const char* kCompressibilitySamples = "compressibility_samples";
/// integer: records decoded from a COREDUMP_RECORDS stream.
inline constexpr const char* kRecords = "records";
/// integer, bytes: core bytes kept of a Truncated dump (what verify expects of the file).
inline constexpr const char* kStoredCoreBytes = "stored_core_bytes";
/// integer, bytes: a short stream's promise, the end of the furthest segment or section its ELF
/// headers describe (daemon/dump/outcome.cc); with kCoreReceivedBytes, what verify and info compare.
inline constexpr const char* kCoreExpectedBytes = "core_expected_bytes";
/// integer, bytes: how much of a short stream arrived (the record's core_size too).
inline constexpr const char* kCoreReceivedBytes = "core_received_bytes";
/// integer: the task's wait status from PIDFD_INFO_EXIT (Linux 6.15+), asked for short streams only.
inline constexpr const char* kTaskExitStatus = "task_exit_status";
/// integer µs since the job started: the first read of the stream (the kernel's wait before it).
inline constexpr const char* kDrainStartUs = "drain_start_us";
/// integer µs since the job started: the kernel's stream ended.
inline constexpr const char* kStreamUs = "stream_us";
/// integer µs since the job started: the socket was closed, releasing the task.
inline constexpr const char* kReleasedUs = "released_us";
/// integer µs since the job started: the core file was complete (compressed and committed, or the
/// raw spool persisted; daemon/dump/compress_stage.cc). Absent if no core file was kept.
inline constexpr const char* kCompressedUs = "compressed_us";
/// integer µs since the job started: the core and the record were stored.
inline constexpr const char* kStoredUs = "stored_us";
/// integer: spool blocks that overflowed the memory arenas into the page cache.
inline constexpr const char* kSpoolPageCacheBlocks = "spool_page_cache_blocks";
/// object: the daemon stopped after this core had arrived in full and before it was stored; the
/// next start stored it from its kept spool (daemon/dump/spool_recovery.h). Keys "at_us" (wall
/// clock µs of the recovery), "spooled" (bytes), "reason".
inline constexpr const char* kRecovered = "recovered";

// --- Retention (store/vacuum.cc) ------------------------------------------------------------

/// object {reason, time_us (UTC µs), path, stored_size (bytes)}: vacuum() removed the core.
inline constexpr const char* kVacuumed = "vacuumed";
/// object {reason, journaled_us, moved_us (UTC µs)}: the index could not take this record when it
/// was written (read-only or full store); it waited in the pending journal (store/pending_journal.h)
/// and was moved into the index later.
inline constexpr const char* kJournaled = "journaled";
/// object {dir, file, reason, kept_us (UTC µs); moved_us once moved}: the store could not take
/// this core (not mounted yet, read-only, full), so it was kept under `dir` (a fallback on /run,
/// daemon/dump/core_fallback.h) with its record in the pending journal, and moved into the store
/// later (store/fallback_core.h). Without moved_us the core is still in `dir`/`file`.
inline constexpr const char* kFallback = "fallback";

// --- Keys inside objects that the store and dumpctl read --------------------------------------

/// In kVacuumed: string, the VacuumReason name ("max_use", "keep_free", "uid_quota", ...).
inline constexpr const char* kVacuumedReason = "reason";
/// In kContainer: byte string, container_key(): "docker:<id>", "nspawn:<name>", "host", ...
inline constexpr const char* kContainerKey = "key";
/// In kContainer: byte string, the container's name ("" if none).
inline constexpr const char* kContainerName = "name";
/// In kContainer: string, the container's full id ("" if none).
inline constexpr const char* kContainerId = "id";

}  // namespace coredumpd::extras

namespace coredumpd {

/// extra.rule (extras::kRule) if it is a string, else "": DumpRecord::rule as a record stored
/// before the index had a rule column says it.
std::string rule_from_extra(const nlohmann::json& extra);

/// The key of extra.container (extras::kContainer, kContainerKey) as bytes (bytes_from_json), ""
/// if the object has no valid key, std::nullopt if `extra` has no container object:
/// DumpRecord::container_key as a record stored before the index had that column says it.
std::optional<std::string> container_key_from_extra(const nlohmann::json& extra);

/// A core that arrived short of what its ELF program headers promise (a SIGKILL mid-stream).
struct ShortCore {
  std::uint64_t expected = 0;  ///< bytes the headers promise (extras::kCoreExpectedBytes)
  std::uint64_t received = 0;  ///< bytes that arrived (extras::kCoreReceivedBytes)
};

/// The short core `extra` records (both keys, unsigned, expected > received), else std::nullopt.
std::optional<ShortCore> short_core_from_extra(const nlohmann::json& extra);

}  // namespace coredumpd
