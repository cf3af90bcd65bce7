// A dump's stored core file: where it is, whether it is usable, and streaming it out (decompressed
// from "<id>.zst", or read as is from a raw "<id>.core").
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "store/dump_record.h"
#include "util/unique_fd.h"

namespace coredumpd::cli {

/// What `dumpctl list` shows in its COREFILE column.
enum class CoreStatus {
  Present,      ///< Complete and the file exists
  Truncated,    ///< Truncated and the file exists (usable, but cut short)
  Missing,      ///< Complete/Truncated but the file is not in the store (deleted by hand, lost)
  Vacuumed,     ///< its core was deleted by retention (the record keeps extra.vacuumed: why, when)
  Failed,       ///< Failed: no usable core
  Interrupted,  ///< the daemon died while receiving it
  None,         ///< no core was meant to be stored (MetadataOnly, Rejected, Forwarded)
  InProgress,   ///< still being received
};

/// Column text: "present", "truncated", "missing", "vacuumed", "failed", "interrupted", "none",
/// "in progress".
const char* core_status_name(CoreStatus s);

/// The absolute path of the record's core file, `<store>/<path>`, if the record's state says a core
/// was stored (Complete or Truncated) and `path` is a plain file name (never "..", never a '/'):
/// index contents are not trusted to build paths. std::nullopt otherwise. Does not touch the disk.
std::optional<std::string> core_file_path(const std::string& store, const DumpRecord& r);

/// The record's COREFILE status; checks whether the file exists (stat).
CoreStatus core_status(const std::string& store, const DumpRecord& r);

/// The COREFILE status the record alone tells (`file_exists` says whether its core file is there,
/// for Complete and Truncated dumps that were not vacuumed): what core_status() computes after its
/// stat, and what a client of the query service, which cannot stat the store, shows.
CoreStatus core_status_of(const DumpRecord& r, bool file_exists);

/// Receives core bytes (decompressed, or read from a raw core); may throw to abort.
using ByteSink = std::function<void(const char* data, std::size_t size)>;

/// Streams the core file at `path`, stored as `compression` says ("zstd": decompressed, concatenated
/// frames; "none": read as is, holes as zeros), through `sink` with bounded buffers (stream_core(),
/// store/core_stream.h): memory use does not grow with the core's size. Returns the number
/// of core bytes produced. Throws DumpctlError if the file cannot be opened or read, is not valid
/// zstd, or ends in the middle of a frame. An empty file yields nothing.
std::uint64_t stream_core_file(const std::string& path, std::string_view compression, const ByteSink& sink);

/// Streams the core stored in the open file `fd` (from its current offset) as stream_core_file()
/// does; `shown` names it in errors (a path, or "the core of <id> sent by coredumpd").
std::uint64_t stream_core_fd(int fd, std::string_view compression, const std::string& shown, const ByteSink& sink);

/// A dump's core open for reading: from the store by path (dumpctl as root), or the descriptor the
/// query service passed (cli/query_client.h).
struct OpenCore {
  UniqueFd fd;                      ///< read-only, at offset 0
  std::string compression;          ///< as stored: kCompressionZstd or kCompressionNone
  std::string shown;                ///< how errors name it (escaped)
  std::optional<std::string> path;  ///< the file in the store, when it was opened there
};

/// Streams `core` through `sink` (stream_core_fd()) and, for Complete dumps, checks that exactly
/// r.core_size bytes came out. Returns the byte count. Throws DumpctlError.
std::uint64_t extract_core(OpenCore& core, const DumpRecord& r, const ByteSink& sink);

/// The record's core file path, checked: throws DumpctlError if the record has no stored core
/// (its state and reason are named), uses a compression other than "zstd" or "none", or its file
/// is missing or not a regular file.
std::string require_core_file(const std::string& store, const DumpRecord& r);

/// Streams the record's core through `sink`: require_core_file(), then stream_core_file(), and
/// for Complete dumps a check that exactly
/// `core_size` bytes came out. Returns the byte count. Throws DumpctlError; bytes already passed
/// to `sink` are then not a valid core.
std::uint64_t extract_core(const std::string& store, const DumpRecord& r, const ByteSink& sink);

/// The path of the record's raw core (compression "none"), for a program that reads it in place (a
/// debugger): require_core_file(), and for Complete dumps a check that the file's size is exactly
/// `core_size` (what extract_core() would count, without reading it). Throws DumpctlError, also if
/// the record's compression is not "none".
std::string require_raw_core(const std::string& store, const DumpRecord& r);

/// Writes all `size` bytes to `fd`, retrying on EINTR and short writes. Throws DumpctlError naming
/// `what` (e.g. the output file) on failure.
void write_all(int fd, const char* data, std::size_t size, const std::string& what);

}  // namespace coredumpd::cli
