#include "protocol/core_notes.h"

#include <elf.h>
#include <gelf.h>
#include <libelf.h>

#include <algorithm>
#include <csignal>
#include <cstddef>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <string_view>
#include <type_traits>
#include <utility>

namespace coredumpd::protocol {
namespace {

// Descriptor layouts on x86_64, from include/linux/elfcore.h (struct elf_prstatus_common,
// struct elf_prpsinfo), include/uapi/asm-generic/siginfo.h and fs/binfmt_elf.c (fill_files_note), as
// tabulated in docs/PROTOCOL.md §8. core_notes_test.cc cross-checks them against glibc's <sys/procfs.h>.
constexpr std::size_t kPrstatusCursig = 12;  // short pr_cursig, read as u16: signals are small positives
constexpr std::size_t kPrstatusPid = 32;     // s32 pr_pid
constexpr std::size_t kPrpsinfoPid = 24;     // s32 pr_pid
constexpr std::size_t kPrpsinfoFname = 40;   // char pr_fname[16]
constexpr std::size_t kFnameSize = 16;
constexpr std::size_t kPrpsinfoPsargs = 56;  // char pr_psargs[80]
constexpr std::size_t kPsargsSize = 80;
constexpr std::size_t kSiginfoSigno = 0;     // s32 si_signo
constexpr std::size_t kSiginfoCode = 8;      // s32 si_code (si_errno sits at 4)
constexpr std::size_t kSiginfoAddr = 16;     // void* si_addr, first member of the union
constexpr std::size_t kFileHeader = 16;      // u64 count, u64 page_size
constexpr std::size_t kFileEntry = 24;       // u64 start, end, page_offset

// Reads a little-endian integer at `off`, or nothing if it does not fit: descriptors are untrusted.
template <class T>
std::optional<T> load_le(std::span<const std::byte> bytes, std::size_t off) {
  using U = std::make_unsigned_t<T>;
  if (off > bytes.size() || bytes.size() - off < sizeof(T)) return std::nullopt;
  U v = 0;
  for (std::size_t i = sizeof(T); i-- > 0;) v = static_cast<U>((v << 8) | std::to_integer<U>(bytes[off + i]));
  return static_cast<T>(v);
}

template <class T>
void store_le(std::byte* p, T v) {
  for (std::size_t i = 0; i < sizeof(T); ++i) p[i] = static_cast<std::byte>((v >> (8 * i)) & 0xff);
}

// The chars of `bytes` up to the first NUL (or all of them).
std::string c_string(std::span<const std::byte> bytes) {
  const auto* s = reinterpret_cast<const char*>(bytes.data());
  return std::string(s, strnlen(s, bytes.size()));
}

// The kernel and gdb write section headers last, after the memory, so they are never in our buffer:
// whatever bytes sit at e_shoff in the images we hand to libelf (e.g. notes, once rebased) are not
// section headers. Our private copy of the header forgets them, so libelf never parses those bytes as
// sections, nor looks in section header 0 for a PN_XNUM count: e_phnum becomes 1 (see the class comment).
template <class Ehdr>
void forget_section_headers(std::byte* header) {
  store_le<decltype(Ehdr::e_shoff)>(header + offsetof(Ehdr, e_shoff), 0);
  store_le<decltype(Ehdr::e_shnum)>(header + offsetof(Ehdr, e_shnum), 0);
  store_le<decltype(Ehdr::e_shstrndx)>(header + offsetof(Ehdr, e_shstrndx), SHN_UNDEF);
  const std::span<const std::byte> bytes(header, sizeof(Ehdr));
  if (load_le<decltype(Ehdr::e_phnum)>(bytes, offsetof(Ehdr, e_phnum)) == PN_XNUM)
    store_le<decltype(Ehdr::e_phnum)>(header + offsetof(Ehdr, e_phnum), 1);
}

// Where the section header table ends (e_shoff + e_shnum * e_shentsize, before forget_section_headers()
// erases them), or 0 if there is none. e_shnum 0 with an e_shoff means the count lives in section header
// 0 (SHN_LORESERVE or more sections, or PN_XNUM): that one entry at least is promised. Saturates at 2^64-1.
std::uint64_t section_headers_end(std::span<const std::byte> header) {
  const auto shoff = load_le<std::uint64_t>(header, offsetof(Elf64_Ehdr, e_shoff)).value_or(0);
  if (shoff == 0) return 0;
  const auto shnum = load_le<std::uint16_t>(header, offsetof(Elf64_Ehdr, e_shnum)).value_or(0);
  const auto entsize = load_le<std::uint16_t>(header, offsetof(Elf64_Ehdr, e_shentsize)).value_or(0);
  const std::uint64_t table = std::uint64_t{std::max<std::uint16_t>(shnum, 1)} * entsize;
  return table > std::numeric_limits<std::uint64_t>::max() - shoff ? std::numeric_limits<std::uint64_t>::max()
                                                                    : shoff + table;
}

struct ElfEnd {
  void operator()(Elf* e) const { elf_end(e); }
};
using ElfHandle = std::unique_ptr<Elf, ElfEnd>;

// A read-only libelf view of `image`, which must outlive it. Null on failure (see elf_errmsg).
ElfHandle open_image(std::vector<std::byte>& image) {
  static std::once_flag once;
  static bool usable = false;
  std::call_once(once, [] { usable = elf_version(EV_CURRENT) != EV_NONE; });
  if (!usable) return nullptr;
  return ElfHandle(elf_memory(reinterpret_cast<char*>(image.data()), image.size()));
}

std::string libelf_error() {
  const char* msg = elf_errmsg(-1);
  return msg != nullptr ? msg : "unknown libelf error";
}

bool is_fault_signal(int sig) {
  return sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE || sig == SIGTRAP;
}

}  // namespace

CoreNoteScanner::CoreNoteScanner(std::size_t max_buffer_bytes) : cap_(max_buffer_bytes), region_end_(EI_NIDENT) {}

void CoreNoteScanner::feed(std::span<const std::byte> chunk) {
  std::uint64_t pos = seen_;
  seen_ += chunk.size();
  while (stage_ != Stage::kDone && !chunk.empty()) {
    if (pos < region_begin_) {  // memory dumps before the notes: count, don't keep
      const auto skip = static_cast<std::size_t>(std::min<std::uint64_t>(region_begin_ - pos, chunk.size()));
      chunk = chunk.subspan(skip);
      pos += skip;
      continue;
    }
    const auto take = static_cast<std::size_t>(std::min<std::uint64_t>(region_end_ - pos, chunk.size()));
    buffer_.insert(buffer_.end(), chunk.begin(), chunk.begin() + static_cast<std::ptrdiff_t>(take));
    chunk = chunk.subspan(take);
    pos += take;
    if (pos == region_end_) complete_region();
  }
}

void CoreNoteScanner::finish() {
  if (done()) return;
  static constexpr const char* kWhere[] = {"before the ELF identification was complete",
                                           "before the ELF header was complete",
                                           "before the program headers were complete",
                                           "before the end of the note segment"};
  set_error("stream ended after " + std::to_string(seen_) + " bytes, " + kWhere[static_cast<int>(stage_)]);
  if (stage_ == Stage::kNotes) {
    parse_notes();  // whatever whole notes arrived
  } else {
    stop();
  }
}

void CoreNoteScanner::complete_region() {
  switch (stage_) {
    case Stage::kIdent: return parse_ident();
    case Stage::kHeader: return parse_header();
    case Stage::kProgramHeaders: return parse_program_headers();
    case Stage::kNotes: return parse_notes();
    case Stage::kDone: return;
  }
}

void CoreNoteScanner::set_error(std::string why) {
  if (facts_.error.empty()) facts_.error = std::move(why);
}

void CoreNoteScanner::stop() {
  stage_ = Stage::kDone;
  std::vector<std::byte>().swap(buffer_);
}

void CoreNoteScanner::give_up(std::string why) {
  set_error(std::move(why));
  stop();
}

// e_ident is plain bytes: checked by hand to choose the header size and refuse what libelf would misread.
void CoreNoteScanner::parse_ident() {
  const auto* ident = reinterpret_cast<const unsigned char*>(buffer_.data());
  if (std::memcmp(ident, ELFMAG, SELFMAG) != 0) return give_up("not an ELF file (bad magic)");
  if (ident[EI_DATA] != ELFDATA2LSB) {
    return give_up("ELF data encoding " + std::to_string(ident[EI_DATA]) +
                   " is not little-endian (ELFDATA2LSB): only x86_64 cores are parsed");
  }
  if (ident[EI_CLASS] == ELFCLASS64) {
    header_size_ = sizeof(Elf64_Ehdr);
  } else if (ident[EI_CLASS] == ELFCLASS32) {
    header_size_ = sizeof(Elf32_Ehdr);  // parsed only to tell a 32-bit core from garbage
  } else {
    return give_up("invalid ELF class " + std::to_string(ident[EI_CLASS]));
  }
  stage_ = Stage::kHeader;
  region_end_ = header_size_;
}

void CoreNoteScanner::parse_header() {
  const bool is64 = header_size_ == sizeof(Elf64_Ehdr);
  if (is64) {
    sections_end_ = section_headers_end(buffer_);
    forget_section_headers<Elf64_Ehdr>(buffer_.data());
  } else {
    forget_section_headers<Elf32_Ehdr>(buffer_.data());
  }
  const ElfHandle elf = open_image(buffer_);
  GElf_Ehdr eh;
  if (!elf || gelf_getehdr(elf.get(), &eh) == nullptr) return give_up("libelf rejected the ELF header: " + libelf_error());
  if (eh.e_type != ET_CORE) return give_up("not a core file: e_type is " + std::to_string(eh.e_type));
  facts_.elf_core = true;
  if (!is64) {
    return give_up("ELFCLASS32 core (e_machine " + std::to_string(eh.e_machine) +
                   "): only 64-bit x86_64 cores are parsed");
  }
  if (eh.e_machine != EM_X86_64) {
    return give_up("core for e_machine " + std::to_string(eh.e_machine) + ": only x86_64 (" +
                   std::to_string(EM_X86_64) + ") cores are parsed");
  }
  if (eh.e_phentsize != sizeof(Elf64_Phdr)) return give_up("e_phentsize is " + std::to_string(eh.e_phentsize) + ", not 56");
  if (eh.e_phnum == 0) return give_up("core has no program headers");
  if (eh.e_phoff < header_size_) return give_up("program headers at offset " + std::to_string(eh.e_phoff) + " overlap the ELF header");
  const std::uint64_t table = std::uint64_t{eh.e_phnum} * sizeof(Elf64_Phdr);
  if (eh.e_phoff > cap_ || table > cap_ - eh.e_phoff) {
    return give_up("program headers at offset " + std::to_string(eh.e_phoff) + " (" + std::to_string(table) +
                   " bytes) end beyond the " + std::to_string(cap_) + "-byte cap");
  }
  stage_ = Stage::kProgramHeaders;
  region_end_ = eh.e_phoff + table;
}

void CoreNoteScanner::parse_program_headers() {
  const ElfHandle elf = open_image(buffer_);
  std::size_t phnum = 0;
  if (!elf || elf_getphdrnum(elf.get(), &phnum) != 0) return give_up("libelf rejected the program headers: " + libelf_error());
  GElf_Phdr note{};
  bool found = false;
  // Every header counts for the promised size; the first PT_NOTE is the one parsed.
  std::uint64_t promised = sections_end_;
  for (std::size_t i = 0; i < phnum; ++i) {
    GElf_Phdr ph{};
    if (gelf_getphdr(elf.get(), static_cast<int>(i), &ph) == nullptr) {
      return give_up("libelf could not read program header " + std::to_string(i) + ": " + libelf_error());
    }
    const std::uint64_t end = ph.p_filesz > std::numeric_limits<std::uint64_t>::max() - ph.p_offset
                                  ? std::numeric_limits<std::uint64_t>::max()
                                  : ph.p_offset + ph.p_filesz;
    promised = std::max(promised, end);
    if (!found && ph.p_type == PT_NOTE) {
      note = ph;
      found = true;
    }
  }
  facts_.promised_size = std::max<std::uint64_t>(promised, region_end_);
  if (!found) return give_up("no PT_NOTE among the " + std::to_string(phnum) + " program headers read");
  facts_.notes_offset = note.p_offset;
  facts_.notes_size = note.p_filesz;
  notes_align8_ = note.p_align == 8;

  // The stream only moves forward: notes overlapping the headers we already passed are not supported
  // (neither the kernel nor gdb writes them so).
  const std::uint64_t headers_end = region_end_;
  if (note.p_offset < headers_end) {
    return give_up("PT_NOTE at offset " + std::to_string(note.p_offset) + " overlaps the headers ending at " +
                   std::to_string(headers_end));
  }
  if (note.p_filesz == 0) return give_up("the PT_NOTE segment is empty");
  if (note.p_filesz > std::numeric_limits<std::uint64_t>::max() - note.p_offset) {
    return give_up("PT_NOTE at offset " + std::to_string(note.p_offset) + " of " + std::to_string(note.p_filesz) +
                   " bytes runs past 2^64");
  }
  std::uint64_t keep = note.p_filesz;
  if (keep > cap_) {
    set_error("note segment of " + std::to_string(note.p_filesz) + " bytes exceeds the " + std::to_string(cap_) + "-byte cap");
    keep = cap_;
  }

  // From now on the buffer is [ELF header][notes]: a tiny ELF image with the notes at offset
  // header_size_, which libelf can parse as a raw chunk. The program headers are dropped.
  buffer_.resize(header_size_);
  buffer_.shrink_to_fit();
  store_le<Elf64_Off>(buffer_.data() + offsetof(Elf64_Ehdr, e_phoff), 0);
  store_le<Elf64_Half>(buffer_.data() + offsetof(Elf64_Ehdr, e_phnum), 0);
  kept_prefix_ = header_size_;
  stage_ = Stage::kNotes;
  region_begin_ = note.p_offset;
  region_end_ = note.p_offset + keep;
  if (keep == 0) parse_notes();  // a zero cap: feed() would never reach an empty region
}

void CoreNoteScanner::parse_notes() {
  const std::size_t size = buffer_.size() - kept_prefix_;
  const ElfHandle elf = size > 0 ? open_image(buffer_) : nullptr;
  Elf_Data* data = nullptr;
  if (elf) {
    data = elf_getdata_rawchunk(elf.get(), static_cast<std::int64_t>(kept_prefix_), size,
                                notes_align8_ ? ELF_T_NHDR8 : ELF_T_NHDR);
  }
  if (size > 0 && data == nullptr) return give_up("libelf could not read the notes: " + libelf_error());

  std::size_t offset = 0;
  while (data != nullptr && offset < data->d_size) {
    GElf_Nhdr nh;
    std::size_t name_at = 0;
    std::size_t desc_at = 0;
    // gelf_getnote() bounds-checks namesz/descsz (overflow included) against the chunk; 0 = malformed.
    const std::size_t next = gelf_getnote(data, offset, &nh, &name_at, &desc_at);
    if (next == 0) {
      set_error("malformed note at byte " + std::to_string(offset) + " of the note segment");
      break;
    }
    const auto* base = static_cast<const std::byte*>(data->d_buf);
    const std::string name = c_string({base + name_at, nh.n_namesz});
    if (name == "CORE") parse_note(nh.n_type, {base + desc_at, nh.n_descsz});
    offset = next;
  }
  stop();
}

void CoreNoteScanner::parse_note(std::uint32_t type, std::span<const std::byte> desc) {
  const auto too_short = [&](const char* what) {
    set_error(std::string(what) + " note of " + std::to_string(desc.size()) + " bytes is too short");
  };
  switch (type) {
    case NT_PRSTATUS: {
      const auto tid = load_le<std::int32_t>(desc, kPrstatusPid);
      const auto cursig = load_le<std::uint16_t>(desc, kPrstatusCursig);
      if (!tid || !cursig) return too_short("NT_PRSTATUS");
      if (facts_.thread_tids.empty()) {
        facts_.crashing_tid = *tid;
        if (!siginfo_seen_ && *cursig != 0) facts_.signal = *cursig;
      }
      facts_.thread_tids.push_back(*tid);
      return;
    }
    case NT_PRPSINFO: {
      if (prpsinfo_seen_) return;
      prpsinfo_seen_ = true;
      if (desc.size() < kPrpsinfoPsargs + kPsargsSize) return too_short("NT_PRPSINFO");
      facts_.pid = load_le<std::int32_t>(desc, kPrpsinfoPid);
      facts_.fname = c_string(desc.subspan(kPrpsinfoFname, kFnameSize));
      facts_.psargs = c_string(desc.subspan(kPrpsinfoPsargs, kPsargsSize));
      return;
    }
    case NT_SIGINFO: {  // gdb writes one per thread; the first belongs to the crashing thread
      if (siginfo_seen_) return;
      siginfo_seen_ = true;
      const auto signo = load_le<std::int32_t>(desc, kSiginfoSigno);
      const auto code = load_le<std::int32_t>(desc, kSiginfoCode);
      if (!signo || !code) return too_short("NT_SIGINFO");
      if (*signo != 0) facts_.signal = *signo;
      facts_.si_code = *code;
      // si_code <= 0 means userspace sent it (SI_USER, SI_TKILL...): the union holds _kill, not _sigfault.
      if (is_fault_signal(*signo) && *code > 0) facts_.fault_address = load_le<std::uint64_t>(desc, kSiginfoAddr);
      return;
    }
    case NT_AUXV: {  // (a_type, a_val) pairs of u64 up to AT_NULL
      if (auxv_seen_) return;
      auxv_seen_ = true;
      for (std::size_t at = 0; at + 16 <= desc.size(); at += 16) {
        const auto a_type = *load_le<std::uint64_t>(desc, at);
        if (a_type == AT_NULL) break;
        if (a_type == AT_ENTRY) facts_.entry = *load_le<std::uint64_t>(desc, at + 8);
      }
      return;
    }
    case NT_FILE: {
      if (file_seen_) return;
      file_seen_ = true;
      const auto count = load_le<std::uint64_t>(desc, 0);
      const auto page_size = load_le<std::uint64_t>(desc, 8);
      if (!count || !page_size) return too_short("NT_FILE");
      if (*count > (desc.size() - kFileHeader) / kFileEntry) {
        return set_error("NT_FILE claims " + std::to_string(*count) + " entries but has " + std::to_string(desc.size()) + " bytes");
      }
      facts_.page_size = *page_size;
      auto paths = desc.subspan(kFileHeader + static_cast<std::size_t>(*count) * kFileEntry);
      for (std::size_t i = 0; i < *count; ++i) {
        const auto nul = std::find(paths.begin(), paths.end(), std::byte{0});
        if (nul == paths.end()) return set_error("NT_FILE path " + std::to_string(i) + " is not NUL-terminated");
        const std::size_t at = kFileHeader + i * kFileEntry;
        MappedFile& f = facts_.files.emplace_back();
        f.start = *load_le<std::uint64_t>(desc, at);
        f.end = *load_le<std::uint64_t>(desc, at + 8);
        f.page_offset = *load_le<std::uint64_t>(desc, at + 16);
        const auto len = static_cast<std::size_t>(nul - paths.begin());
        f.path = c_string(paths.first(len));
        paths = paths.subspan(len + 1);
      }
      return;
    }
    default:
      return;
  }
}

}  // namespace coredumpd::protocol
