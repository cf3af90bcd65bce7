// Extracting crash facts from an ELF core's notes while the core streams past (docs/PROTOCOL.md §8), without
// buffering the core itself: only the ELF header, the program headers and the PT_NOTE segment are kept.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace coredumpd::protocol {

/// One NT_FILE entry: a file-backed mapping of the dumped process (docs/PROTOCOL.md §8).
struct MappedFile {
  std::uint64_t start = 0;        ///< first virtual address of the mapping
  std::uint64_t end = 0;          ///< one past its last virtual address
  std::uint64_t page_offset = 0;  ///< file offset of `start` in units of CoreFacts::page_size (not bytes)
  std::string path;               ///< path as the kernel printed it (a deleted file ends in " (deleted)")
};

/// What a core's notes say about the crash. Only notes named "CORE" count; of NT_PRPSINFO, NT_SIGINFO,
/// NT_AUXV and NT_FILE only the first (gdb writes an NT_SIGINFO per thread, the crashing thread's first). A
/// field stays empty when its note is absent or too short. PIDs/TIDs are in the crashed task's own PID
/// namespace (docs/PROTOCOL.md §3.6, §8), unlike SO_PEERCRED, which the kernel translates into the daemon's.
struct CoreFacts {
  bool elf_core = false;                       ///< a valid ELF header with e_type == ET_CORE was seen
  std::optional<int> signal;                   ///< NT_SIGINFO si_signo, else first NT_PRSTATUS pr_cursig; a 0 is no signal
  std::optional<int> si_code;                  ///< NT_SIGINFO si_code (e.g. SEGV_MAPERR, SI_TKILL)
  std::optional<std::uint64_t> fault_address;  ///< NT_SIGINFO si_addr; only for SIGSEGV/SIGBUS/SIGILL/SIGFPE/
                                               ///< SIGTRAP raised by the kernel (si_code > 0): for kill()-sent
                                               ///< signals those bytes hold the sender's pid/uid instead
  std::optional<std::int64_t> crashing_tid;    ///< pr_pid of the first NT_PRSTATUS (the kernel writes the dumping thread first)
  std::optional<std::int64_t> pid;             ///< NT_PRPSINFO pr_pid (the thread-group id)
  std::vector<std::int64_t> thread_tids;       ///< pr_pid of every NT_PRSTATUS, in note order
  std::string fname;                           ///< NT_PRPSINFO pr_fname (comm, at most 15 chars), up to its first NUL
  std::string psargs;                          ///< NT_PRPSINFO pr_psargs up to its first NUL: the first 79 bytes of the
                                               ///< command line with NULs turned into spaces by the kernel, so it
                                               ///< usually ends in one space
  std::uint64_t page_size = 0;                 ///< NT_FILE page size, the unit of MappedFile::page_offset: the
                                               ///< kernel writes PAGE_SIZE, gdb's gcore writes 1 (byte offsets)
  std::vector<MappedFile> files;               ///< NT_FILE entries, in note order
  std::optional<std::uint64_t> entry;          ///< NT_AUXV AT_ENTRY: the executable's entry point, an address
                                               ///< inside its text mapping (the first NT_AUXV only)
  std::uint64_t notes_offset = 0;              ///< file offset of the PT_NOTE segment, in bytes
  std::uint64_t notes_size = 0;                ///< p_filesz of the PT_NOTE segment, in bytes (as claimed)
  std::uint64_t promised_size = 0;             ///< bytes the headers say the core has: the end of its furthest
                                               ///< segment (max p_offset + p_filesz over the program headers read)
                                               ///< or of its section header table (e_shoff + e_shnum * e_shentsize,
                                               ///< one entry if e_shnum is 0), whichever is further; 0 until the
                                               ///< program headers are read. A stream that ends before it is short
  std::string error;                           ///< empty, or the first reason the stream could not be fully parsed;
                                               ///< facts gathered before the problem are kept
};

/// Scans an ELF core as it streams by and fills CoreFacts from its notes.
///
/// feed() takes consecutive chunks of any size. The scanner copies only the ELF header, the program
/// headers and the first PT_NOTE segment; bytes before, between and after them (the memory dumps) are
/// merely counted. Once the notes are parsed, or an error makes parsing impossible, done() is true,
/// the buffer is released and every later feed() is O(1).
///
/// Accepted input: 64-bit little-endian x86_64 cores (ELFCLASS64, ELFDATA2LSB, EM_X86_64, ET_CORE) whose
/// PT_NOTE lies after the program headers, as both the kernel (notes right after the headers) and gdb's
/// gcore (notes after the memory) write them. Anything else ends with `error` set; nothing throws on
/// hostile input except std::bad_alloc, and allocations are bounded by max_buffer_bytes.
///
/// PN_XNUM (e_phnum == 0xffff): the real count lives in section header 0, which the kernel writes at
/// the end of the core, long after the notes have gone by. The scanner then reads only phdr[0], which
/// the kernel (fs/binfmt_elf.c writes the note phdr first) and gdb always make the PT_NOTE; the
/// promised size then comes from the section header table, which both write after all segments.
class CoreNoteScanner {
 public:
  /// `max_buffer_bytes` caps both the program header table (e_phoff + its size) and the PT_NOTE
  /// segment (plus a 64-byte ELF header kept in front of it). The default 32 MiB fits the largest
  /// kernel core: 65535 phdrs are ~3.6 MiB, NT_FILE at most 16 MiB (core_file_note_size_limit,
  /// docs/PROTOCOL.md §7.2).
  explicit CoreNoteScanner(std::size_t max_buffer_bytes = 32 * 1024 * 1024);

  /// Consumes the next `chunk` of the stream (1 byte to MiBs; empty is fine). Parses the notes as soon
  /// as their last byte arrives. If the PT_NOTE is larger than the cap, sets
  /// "note segment of N bytes exceeds the M-byte cap" at once, buffers only the first M bytes and
  /// parses the whole notes that fit in them.
  void feed(std::span<const std::byte> chunk);

  /// Declares the end of the stream. If the notes were not complete, sets an error saying where the
  /// stream ended and parses the whole notes that did arrive. done() is true afterwards.
  void finish();

  /// True once the notes are parsed, or given up on with `facts().error` set.
  bool done() const { return stage_ == Stage::kDone; }

  /// The facts gathered so far: final once done(); before that only elf_core and notes_offset/size
  /// (and a cap error) may be set.
  const CoreFacts& facts() const { return facts_; }

  /// Total bytes passed to feed(), i.e. the stream offset reached.
  std::uint64_t bytes_seen() const { return seen_; }

  /// Bytes currently held in the internal buffer (0 once done()); for tests and memory accounting.
  std::size_t buffered_bytes() const { return buffer_.size(); }

 private:
  enum class Stage { kIdent, kHeader, kProgramHeaders, kNotes, kDone };

  void complete_region();
  void parse_ident();
  void parse_header();
  void parse_program_headers();
  void parse_notes();
  void parse_note(std::uint32_t type, std::span<const std::byte> desc);
  void set_error(std::string why);  // keeps the first error
  void stop();                      // done: release the buffer
  void give_up(std::string why);    // set_error + stop

  std::size_t cap_;
  Stage stage_ = Stage::kIdent;
  std::uint64_t seen_ = 0;
  // buffer_ holds kept_prefix_ bytes of our own, then stream bytes [region_begin_, min(seen_, region_end_)).
  std::vector<std::byte> buffer_;
  std::size_t kept_prefix_ = 0;
  std::uint64_t region_begin_ = 0;
  std::uint64_t region_end_ = 0;
  std::size_t header_size_ = 0;  // sizeof(Elf64_Ehdr) or sizeof(Elf32_Ehdr)
  bool notes_align8_ = false;    // PT_NOTE p_align == 8: 8-byte aligned descriptors (ELF_T_NHDR8)
  bool siginfo_seen_ = false;
  bool prpsinfo_seen_ = false;
  bool file_seen_ = false;
  std::uint64_t sections_end_ = 0;  // end of the section header table per the ELF header; 0 if none
  bool auxv_seen_ = false;
  CoreFacts facts_;
};

}  // namespace coredumpd::protocol
