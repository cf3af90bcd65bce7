// Wire format of the core_pattern "@@" socket protocol: coredump_req, coredump_ack, the mask bits
// and the 4-byte markers. Pure data, no I/O.
//
// Source of every value: include/uapi/linux/coredump.h (mainline 6.17 for VER0; linux-next fs-next
// 2026-09-23 for RECORDS/SPARSE/MEMORY_TYPES and the VER1 sizes; RFC v2 2026-09-02 for CLOSE_FILES),
// as described in docs/PROTOCOL.md §4–§6. All integers are host byte order.
#pragma once

#include <cstddef>
#include <cstdint>

// <linux/coredump.h> (linux-libc-dev 6.17+) declares struct coredump_req/coredump_ack and the
// COREDUMP_* constants at global scope, under the same names as ours below. Ours live in
// coredumpd::protocol and are what the project uses: name them qualified (protocol::, or an alias
// such as `namespace cp = coredumpd::protocol`), never through a file-scope `using namespace`,
// which makes every such name ambiguous once the kernel's header is included anywhere.
// COREDUMPD_HAVE_UAPI_* come from cmake/KernelHeaders.cmake (compile checks: the kernel declares
// these names as enum constants, which #ifdef cannot see).
#ifdef COREDUMPD_HAVE_UAPI_COREDUMP_H
#include <linux/coredump.h>
#endif

namespace coredumpd::protocol {

// ---- Mask bits shared by coredump_req.mask and coredump_ack.mask (docs/PROTOCOL.md §4.4) ----
inline constexpr std::uint64_t COREDUMP_KERNEL = 1ULL << 0;        ///< 6.17: kernel streams the ELF core
inline constexpr std::uint64_t COREDUMP_USERSPACE = 1ULL << 1;     ///< 6.17: kernel writes nothing
inline constexpr std::uint64_t COREDUMP_REJECT = 1ULL << 2;        ///< 6.17: no dump at all
inline constexpr std::uint64_t COREDUMP_WAIT = 1ULL << 3;          ///< 6.17: task parked until we hang up
inline constexpr std::uint64_t COREDUMP_RECORDS = 1ULL << 4;       ///< NEXT: stream as records (§6.2)
inline constexpr std::uint64_t COREDUMP_SPARSE = 1ULL << 5;        ///< NEXT: holes as ZERO records
inline constexpr std::uint64_t COREDUMP_MEMORY_TYPES = 1ULL << 6;  ///< NEXT: ack.memory_types applies

/// COREDUMP_CLOSE_FILES (RFC v2, 2026-09-02). Its final value is not settled: the kernel's header
/// wins when it declares the flag, else the inferred next free bit (0x80, docs/PROTOCOL.md §6.4).
/// The daemon's configuration may override it per host (see Config::close_files_bit).
#ifdef COREDUMPD_HAVE_UAPI_COREDUMP_CLOSE_FILES
inline constexpr std::uint64_t COREDUMP_CLOSE_FILES_DEFAULT = static_cast<std::uint64_t>(::COREDUMP_CLOSE_FILES);
#else
inline constexpr std::uint64_t COREDUMP_CLOSE_FILES_DEFAULT = 1ULL << 7;
#endif

/// The modes of which an ack must carry exactly one (docs/PROTOCOL.md §4.4, §4.5 step 5).
inline constexpr std::uint64_t COREDUMP_MODE_MASK = COREDUMP_KERNEL | COREDUMP_USERSPACE | COREDUMP_REJECT;
/// What every 6.17/6.18 kernel offers [OBS 6.18: 0xF].
inline constexpr std::uint64_t COREDUMP_MASK_VER0 = COREDUMP_KERNEL | COREDUMP_USERSPACE | COREDUMP_REJECT | COREDUMP_WAIT;

// ---- Sizes (docs/PROTOCOL.md §4.2, §4.3) ----
inline constexpr std::uint32_t COREDUMP_REQ_SIZE_VER0 = 16;  ///< 6.17
inline constexpr std::uint32_t COREDUMP_REQ_SIZE_VER1 = 32;  ///< NEXT: + memory_types, memory_types_mask
inline constexpr std::uint32_t COREDUMP_ACK_SIZE_VER0 = 16;  ///< 6.17
inline constexpr std::uint32_t COREDUMP_ACK_SIZE_VER1 = 24;  ///< NEXT: + memory_types
/// Defensive upper bound on a request's size field, as the selftests and systemd apply (docs/PROTOCOL.md §4.2).
inline constexpr std::uint32_t COREDUMP_REQ_SIZE_MAX = 4096;

/// struct coredump_req as this build knows it (VER1). A shorter request leaves the tail zero.
struct coredump_req {
  std::uint32_t size;               ///< bytes the kernel sent (>= 16)
  std::uint32_t size_ack;           ///< largest ack the kernel accepts (>= 16)
  std::uint64_t mask;               ///< features offered
  std::uint64_t memory_types;       ///< NEXT: the task's own coredump_filter selection
  std::uint64_t memory_types_mask;  ///< NEXT: every memory type this kernel knows
};
static_assert(sizeof(coredump_req) == COREDUMP_REQ_SIZE_VER1);

/// struct coredump_ack as this build knows it (VER1). Only the first `size` bytes are sent.
struct coredump_ack {
  std::uint32_t size;          ///< bytes sent; 16 <= size <= req.size_ack
  std::uint32_t spare;         ///< must be 0 (else the kernel answers UNSUPPORTED)
  std::uint64_t mask;          ///< subset of req.mask, exactly one mode bit
  std::uint64_t memory_types;  ///< NEXT: meaningful only with COREDUMP_MEMORY_TYPES
};
static_assert(sizeof(coredump_ack) == COREDUMP_ACK_SIZE_VER1);

/// Byte offset of coredump_ack.memory_types: MEMORY_TYPES may be acked only if the ack reaches past
/// the whole field (docs/PROTOCOL.md §6.1 rule 3).
inline constexpr std::uint32_t COREDUMP_ACK_MEMORY_TYPES_END = 24;

/// enum coredump_mark: the 4-byte marker the kernel sends after reading our ack (docs/PROTOCOL.md §4.6).
/// The UAPI comment calling it a single byte is stale: it is a u32.
enum class Marker : std::uint32_t {
  REQACK = 0,       ///< COREDUMP_MARK_REQACK: ack accepted
  MINSIZE = 1,      ///< COREDUMP_MARK_MINSIZE: ack.size too small
  MAXSIZE = 2,      ///< COREDUMP_MARK_MAXSIZE: ack.size > req.size_ack
  UNSUPPORTED = 3,  ///< COREDUMP_MARK_UNSUPPORTED: unknown bit, spare != 0, bad memory types
  CONFLICTING = 4,  ///< COREDUMP_MARK_CONFLICTING: invalid combination of bits
};
inline constexpr std::uint32_t MARKER_SIZE = 4;

// ---- Memory types (NEXT, docs/PROTOCOL.md §6.3): same bits as /proc/<pid>/coredump_filter ----
inline constexpr std::uint64_t COREDUMP_MEMORY_ANON_PRIVATE = 1ULL << 0;
inline constexpr std::uint64_t COREDUMP_MEMORY_ANON_SHARED = 1ULL << 1;
inline constexpr std::uint64_t COREDUMP_MEMORY_FILE_PRIVATE = 1ULL << 2;
inline constexpr std::uint64_t COREDUMP_MEMORY_FILE_SHARED = 1ULL << 3;
inline constexpr std::uint64_t COREDUMP_MEMORY_ELF_HEADERS = 1ULL << 4;
inline constexpr std::uint64_t COREDUMP_MEMORY_HUGETLB_PRIVATE = 1ULL << 5;
inline constexpr std::uint64_t COREDUMP_MEMORY_HUGETLB_SHARED = 1ULL << 6;
inline constexpr std::uint64_t COREDUMP_MEMORY_DAX_PRIVATE = 1ULL << 7;
inline constexpr std::uint64_t COREDUMP_MEMORY_DAX_SHARED = 1ULL << 8;

// ---- Agreement with the kernel's header, where the build has one (see the top of this file) ----
#ifdef COREDUMPD_HAVE_UAPI_COREDUMP_H
/// What the kernel's header says as a std::uint64_t (its constants are of unnamed enum types).
template <typename T>
constexpr std::uint64_t uapi_value(T v) {
  return static_cast<std::uint64_t>(v);
}
static_assert(uapi_value(::COREDUMP_KERNEL) == COREDUMP_KERNEL);
static_assert(uapi_value(::COREDUMP_USERSPACE) == COREDUMP_USERSPACE);
static_assert(uapi_value(::COREDUMP_REJECT) == COREDUMP_REJECT);
static_assert(uapi_value(::COREDUMP_WAIT) == COREDUMP_WAIT);
static_assert(uapi_value(::COREDUMP_REQ_SIZE_VER0) == COREDUMP_REQ_SIZE_VER0);
static_assert(uapi_value(::COREDUMP_ACK_SIZE_VER0) == COREDUMP_ACK_SIZE_VER0);

// The kernel's structs are the newest version it has published: a prefix of ours (VER0 or VER1),
// with the fields both know at the same offsets.
static_assert(sizeof(::coredump_req) == COREDUMP_REQ_SIZE_VER0 ||
              sizeof(::coredump_req) == COREDUMP_REQ_SIZE_VER1);
static_assert(sizeof(::coredump_ack) == COREDUMP_ACK_SIZE_VER0 ||
              sizeof(::coredump_ack) == COREDUMP_ACK_SIZE_VER1);
static_assert(offsetof(::coredump_req, size) == offsetof(coredump_req, size));
static_assert(offsetof(::coredump_req, size_ack) == offsetof(coredump_req, size_ack));
static_assert(offsetof(::coredump_req, mask) == offsetof(coredump_req, mask));
static_assert(offsetof(::coredump_ack, size) == offsetof(coredump_ack, size));
static_assert(offsetof(::coredump_ack, spare) == offsetof(coredump_ack, spare));
static_assert(offsetof(::coredump_ack, mask) == offsetof(coredump_ack, mask));

// The linux-next series that brings the VER1 sizes also brings RECORDS, SPARSE and MEMORY_TYPES
// (the sources at the top): a header with the one and not the others fails here, on purpose.
#ifdef COREDUMPD_HAVE_UAPI_COREDUMP_REQ_SIZE_VER1
static_assert(uapi_value(::COREDUMP_REQ_SIZE_VER1) == COREDUMP_REQ_SIZE_VER1);
static_assert(uapi_value(::COREDUMP_ACK_SIZE_VER1) == COREDUMP_ACK_SIZE_VER1);
static_assert(uapi_value(::COREDUMP_RECORDS) == COREDUMP_RECORDS);
static_assert(uapi_value(::COREDUMP_SPARSE) == COREDUMP_SPARSE);
static_assert(uapi_value(::COREDUMP_MEMORY_TYPES) == COREDUMP_MEMORY_TYPES);
static_assert(offsetof(::coredump_req, memory_types) == offsetof(coredump_req, memory_types));
static_assert(offsetof(::coredump_req, memory_types_mask) == offsetof(coredump_req, memory_types_mask));
static_assert(offsetof(::coredump_ack, memory_types) == offsetof(coredump_ack, memory_types));
#endif

// enum coredump_mark: the same values, and a u32 on the wire.
static_assert(uapi_value(::COREDUMP_MARK_REQACK) == static_cast<std::uint32_t>(Marker::REQACK));
static_assert(uapi_value(::COREDUMP_MARK_MINSIZE) == static_cast<std::uint32_t>(Marker::MINSIZE));
static_assert(uapi_value(::COREDUMP_MARK_MAXSIZE) == static_cast<std::uint32_t>(Marker::MAXSIZE));
static_assert(uapi_value(::COREDUMP_MARK_UNSUPPORTED) == static_cast<std::uint32_t>(Marker::UNSUPPORTED));
static_assert(uapi_value(::COREDUMP_MARK_CONFLICTING) == static_cast<std::uint32_t>(Marker::CONFLICTING));
static_assert(sizeof(::coredump_mark) == MARKER_SIZE);
#endif

}  // namespace coredumpd::protocol
