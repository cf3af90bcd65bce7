#include "protocol/core_notes.h"

#include <elf.h>
#include <gtest/gtest.h>
#include <pthread.h>
#include <sys/procfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace coredumpd::protocol {
namespace {

// The scanner's descriptor offsets come from docs/PROTOCOL.md §8; glibc's <sys/procfs.h> and <signal.h> are an
// independent source for the same x86_64 layouts, and the synthetic notes below are built from them.
static_assert(sizeof(elf_prstatus) == 336);
static_assert(offsetof(elf_prstatus, pr_cursig) == 12);
static_assert(offsetof(elf_prstatus, pr_pid) == 32);
static_assert(sizeof(elf_prpsinfo) == 136);
static_assert(offsetof(elf_prpsinfo, pr_pid) == 24);
static_assert(offsetof(elf_prpsinfo, pr_fname) == 40);
static_assert(offsetof(elf_prpsinfo, pr_psargs) == 56);
static_assert(sizeof(siginfo_t) == 128);
static_assert(offsetof(siginfo_t, si_code) == 8);

using Bytes = std::vector<std::byte>;

template <class T>
void append(Bytes& out, const T& v) {
  const auto* p = reinterpret_cast<const std::byte*>(&v);
  out.insert(out.end(), p, p + sizeof(T));
}

template <class T>
void put(Bytes& out, std::size_t at, const T& v) {
  std::memcpy(out.data() + at, &v, sizeof(T));
}

template <class T>
Bytes bytes_of(const T& v) {
  Bytes b;
  append(b, v);
  return b;
}

void pad4(Bytes& b) { b.resize((b.size() + 3) / 4 * 4); }

// Appends one note as the kernel lays it out: Elf64_Nhdr, name + NUL, pad to 4, desc, pad to 4.
void add_note(Bytes& notes, std::string_view name, std::uint32_t type, const Bytes& desc) {
  append(notes, Elf64_Nhdr{static_cast<Elf64_Word>(name.size() + 1), static_cast<Elf64_Word>(desc.size()), type});
  for (char c : name) notes.push_back(static_cast<std::byte>(c));
  notes.push_back(std::byte{0});
  pad4(notes);
  notes.insert(notes.end(), desc.begin(), desc.end());
  pad4(notes);
}

Bytes prstatus(int tid, int cursig) {
  elf_prstatus s{};
  s.pr_info.si_signo = cursig;
  s.pr_cursig = static_cast<short>(cursig);
  s.pr_pid = tid;
  s.pr_ppid = 1;
  return bytes_of(s);
}

Bytes prpsinfo(int pid, const char* fname, const char* psargs) {
  elf_prpsinfo p{};
  p.pr_pid = pid;
  p.pr_ppid = 1;
  // Like the kernel's strncpy/copy_from_user: a long name fills all 16 bytes without a NUL.
  std::memcpy(p.pr_fname, fname, std::min(std::strlen(fname), sizeof p.pr_fname));
  std::memcpy(p.pr_psargs, psargs, std::min(std::strlen(psargs), sizeof p.pr_psargs));
  return bytes_of(p);
}

Bytes siginfo(int signo, int code, std::uint64_t addr) {
  siginfo_t si{};
  si.si_signo = signo;
  si.si_errno = 0;
  si.si_code = code;
  si.si_addr = reinterpret_cast<void*>(addr);
  return bytes_of(si);
}

Bytes nt_file(const std::vector<MappedFile>& files, std::uint64_t page_size) {
  Bytes b;
  append(b, std::uint64_t{files.size()});
  append(b, page_size);
  for (const auto& f : files) {
    append(b, f.start);
    append(b, f.end);
    append(b, f.page_offset);
  }
  for (const auto& f : files) {
    for (char c : f.path) b.push_back(static_cast<std::byte>(c));
    b.push_back(std::byte{0});
  }
  return b;
}

constexpr int kPid = 4200;
constexpr int kTid1 = 4242;
constexpr int kTid2 = 4243;
constexpr std::uint64_t kFaultAddr = 0xdeadbeef000;
const std::vector<MappedFile> kFiles = {
    {0x400000, 0x401000, 0, "/usr/bin/crashy"},
    {0x7f0000000000, 0x7f0000002000, 3, "/usr/lib/x86_64-linux-gnu/libc.so.6 (deleted)"},
};

// The notes of a two-thread SIGSEGV core in the kernel's order (fs/binfmt_elf.c fill_note_info),
// including notes the scanner must skip: FPU state, auxv, a LINUX xstate note and a "GNU" note whose
// type (NT_GNU_ABI_TAG) equals NT_PRSTATUS.
Bytes standard_notes() {
  Bytes n;
  add_note(n, "CORE", NT_PRSTATUS, prstatus(kTid1, SIGSEGV));
  add_note(n, "CORE", NT_PRPSINFO, prpsinfo(kPid, "crashy", "./crashy --flag "));
  add_note(n, "CORE", NT_SIGINFO, siginfo(SIGSEGV, SEGV_MAPERR, kFaultAddr));
  add_note(n, "CORE", NT_AUXV, Bytes(16 * 4, std::byte{0x11}));
  add_note(n, "CORE", NT_FILE, nt_file(kFiles, 4096));
  add_note(n, "CORE", NT_FPREGSET, Bytes(512, std::byte{0x22}));
  add_note(n, "LINUX", NT_X86_XSTATE, Bytes(832, std::byte{0x33}));
  add_note(n, "GNU", NT_GNU_ABI_TAG, Bytes(16, std::byte{0x44}));
  add_note(n, "CORE", NT_PRSTATUS, prstatus(kTid2, 0));
  add_note(n, "CORE", NT_FPREGSET, Bytes(512, std::byte{0x22}));
  return n;
}

struct Core {
  Bytes bytes;
  std::uint64_t notes_offset = 0;
  std::uint64_t notes_size = 0;
  std::uint64_t notes_end() const { return notes_offset + notes_size; }
};

struct CoreOptions {
  bool notes_after_memory = false;  // gdb's gcore layout; the kernel puts the notes right after the phdrs
  bool pn_xnum = false;             // e_phnum = PN_XNUM, real count in section header 0 at the end
  std::size_t load_size = 8192;
};

// A minimal core: ELF header, [PT_NOTE, PT_LOAD], notes and memory in the chosen order, and (for gdb
// and PN_XNUM layouts) a section header table at the very end.
Core build_core(const Bytes& notes, CoreOptions opt = {}) {
  constexpr std::size_t kPhnum = 2;
  const std::size_t headers_end = sizeof(Elf64_Ehdr) + kPhnum * sizeof(Elf64_Phdr);
  Core c;
  std::uint64_t load_offset = 0;
  if (opt.notes_after_memory) {
    load_offset = 4096;
    c.notes_offset = load_offset + opt.load_size;
  } else {
    c.notes_offset = headers_end;
    load_offset = (headers_end + notes.size() + 4095) / 4096 * 4096;
  }
  c.notes_size = notes.size();
  const std::uint64_t data_end = std::max<std::uint64_t>(c.notes_end(), load_offset + opt.load_size);
  const bool with_shdrs = opt.notes_after_memory || opt.pn_xnum;

  Elf64_Ehdr eh{};
  std::memcpy(eh.e_ident, ELFMAG, SELFMAG);
  eh.e_ident[EI_CLASS] = ELFCLASS64;
  eh.e_ident[EI_DATA] = ELFDATA2LSB;
  eh.e_ident[EI_VERSION] = EV_CURRENT;
  eh.e_type = ET_CORE;
  eh.e_machine = EM_X86_64;
  eh.e_version = EV_CURRENT;
  eh.e_phoff = sizeof(Elf64_Ehdr);
  eh.e_ehsize = sizeof(Elf64_Ehdr);
  eh.e_phentsize = sizeof(Elf64_Phdr);
  eh.e_phnum = opt.pn_xnum ? PN_XNUM : kPhnum;
  eh.e_shentsize = sizeof(Elf64_Shdr);
  if (with_shdrs) {
    eh.e_shoff = data_end;
    eh.e_shnum = opt.pn_xnum ? 0 : 1;  // with PN_XNUM, e_shnum 0 means "read shdr[0].sh_size"
  }

  Elf64_Phdr note{};
  note.p_type = PT_NOTE;
  note.p_offset = c.notes_offset;
  note.p_filesz = notes.size();
  note.p_align = 4;
  Elf64_Phdr load{};
  load.p_type = PT_LOAD;
  load.p_flags = PF_R | PF_W;
  load.p_offset = load_offset;
  load.p_vaddr = 0x7ffff000000;
  load.p_filesz = load.p_memsz = opt.load_size;
  load.p_align = 4096;

  c.bytes.resize(data_end);
  put(c.bytes, 0, eh);
  put(c.bytes, sizeof(Elf64_Ehdr), note);
  put(c.bytes, sizeof(Elf64_Ehdr) + sizeof(Elf64_Phdr), load);
  std::copy(notes.begin(), notes.end(), c.bytes.begin() + static_cast<std::ptrdiff_t>(c.notes_offset));
  for (std::size_t i = 0; i < opt.load_size; ++i) c.bytes[load_offset + i] = static_cast<std::byte>(i * 7);
  if (with_shdrs) {
    Elf64_Shdr sh0{};
    if (opt.pn_xnum) {
      sh0.sh_size = 1;
      sh0.sh_info = kPhnum;
    }
    append(c.bytes, sh0);
  }
  return c;
}

Core standard_core(CoreOptions opt = {}) { return build_core(standard_notes(), opt); }

void feed_all(CoreNoteScanner& s, std::span<const std::byte> data, std::size_t chunk) {
  for (std::size_t at = 0; at < data.size(); at += chunk) s.feed(data.subspan(at, std::min(chunk, data.size() - at)));
}

void feed_random(CoreNoteScanner& s, std::span<const std::byte> data, std::mt19937_64& rng, std::size_t max_chunk) {
  std::uniform_int_distribution<std::size_t> size(0, max_chunk);  // 0: empty chunks must be harmless
  for (std::size_t at = 0; at < data.size();) {
    const std::size_t n = std::min(size(rng), data.size() - at);
    s.feed(data.subspan(at, n));
    at += n;
  }
}

void expect_standard_facts(const CoreFacts& f, const Core& c) {
  EXPECT_EQ(f.error, "");
  EXPECT_TRUE(f.elf_core);
  EXPECT_EQ(f.signal, SIGSEGV);
  EXPECT_EQ(f.si_code, SEGV_MAPERR);
  EXPECT_EQ(f.fault_address, kFaultAddr);
  EXPECT_EQ(f.crashing_tid, kTid1);
  EXPECT_EQ(f.pid, kPid);
  EXPECT_EQ(f.thread_tids, (std::vector<std::int64_t>{kTid1, kTid2}));
  EXPECT_EQ(f.fname, "crashy");
  EXPECT_EQ(f.psargs, "./crashy --flag ");
  EXPECT_EQ(f.page_size, 4096u);
  ASSERT_EQ(f.files.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(f.files[i].start, kFiles[i].start) << i;
    EXPECT_EQ(f.files[i].end, kFiles[i].end) << i;
    EXPECT_EQ(f.files[i].page_offset, kFiles[i].page_offset) << i;
    EXPECT_EQ(f.files[i].path, kFiles[i].path) << i;
  }
  EXPECT_EQ(f.notes_offset, c.notes_offset);
  EXPECT_EQ(f.notes_size, c.notes_size);
  EXPECT_EQ(f.promised_size, c.bytes.size());  // every layout ends with its last segment or section table
}

// ---- (1) Synthetic cores with known notes ----

TEST(CoreNotesSynthetic, OneChunk) {
  const Core c = standard_core();
  CoreNoteScanner s;
  s.feed(c.bytes);
  ASSERT_TRUE(s.done());
  expect_standard_facts(s.facts(), c);
  EXPECT_EQ(s.bytes_seen(), c.bytes.size());
  EXPECT_EQ(s.buffered_bytes(), 0u);
}

TEST(CoreNotesSynthetic, ByteAtATimeIsDoneExactlyAtTheEndOfTheNotes) {
  const Core c = standard_core();
  CoreNoteScanner s;
  std::size_t done_at = 0;
  std::size_t max_buffered = 0;
  for (std::size_t i = 0; i < c.bytes.size(); ++i) {
    s.feed(std::span(c.bytes).subspan(i, 1));
    max_buffered = std::max(max_buffered, s.buffered_bytes());
    if (s.done() && done_at == 0) done_at = i + 1;
  }
  ASSERT_TRUE(s.done());
  EXPECT_EQ(done_at, c.notes_end());
  EXPECT_LE(max_buffered, c.notes_end());  // never the memory that follows
  expect_standard_facts(s.facts(), c);
  EXPECT_EQ(s.bytes_seen(), c.bytes.size());
}

TEST(CoreNotesSynthetic, RandomChunkSizes) {
  const Core c = standard_core();
  std::mt19937_64 rng(20240917);
  for (std::size_t max_chunk : {3u, 17u, 100u, 1000u, 20000u}) {
    for (int trial = 0; trial < 40; ++trial) {
      CoreNoteScanner s;
      feed_random(s, c.bytes, rng, max_chunk);
      ASSERT_TRUE(s.done()) << max_chunk;
      expect_standard_facts(s.facts(), c);
      EXPECT_EQ(s.bytes_seen(), c.bytes.size());
    }
  }
}

TEST(CoreNotesSynthetic, NotesAfterMemoryLikeGcoreAreReachedWithoutBufferingMemory) {
  const Core c = standard_core({.notes_after_memory = true, .load_size = 4 << 20});
  CoreNoteScanner s;
  std::size_t max_buffered = 0;
  for (std::size_t at = 0; at < c.bytes.size(); at += 4096) {
    s.feed(std::span(c.bytes).subspan(at, std::min<std::size_t>(4096, c.bytes.size() - at)));
    max_buffered = std::max(max_buffered, s.buffered_bytes());
  }
  ASSERT_TRUE(s.done());
  expect_standard_facts(s.facts(), c);
  EXPECT_LE(max_buffered, sizeof(Elf64_Ehdr) + c.notes_size);
}

TEST(CoreNotesSynthetic, PnXnumReadsOnlyTheFirstProgramHeader) {
  const Core c = standard_core({.pn_xnum = true});
  CoreNoteScanner s;
  feed_all(s, c.bytes, 1000);
  ASSERT_TRUE(s.done());
  expect_standard_facts(s.facts(), c);
}

TEST(CoreNotesSynthetic, FeedingAfterDoneOnlyCounts) {
  const Core c = standard_core();
  CoreNoteScanner s;
  s.feed(c.bytes);
  ASSERT_TRUE(s.done());
  const Bytes mib(1 << 20, std::byte{0x5a});
  for (int i = 0; i < 4096; ++i) s.feed(mib);  // 4 GiB "streamed": must be instant and keep nothing
  EXPECT_EQ(s.bytes_seen(), c.bytes.size() + (std::uint64_t{4096} << 20));
  EXPECT_EQ(s.buffered_bytes(), 0u);
  expect_standard_facts(s.facts(), c);
  s.finish();  // harmless after done()
  EXPECT_EQ(s.facts().error, "");
}

TEST(CoreNotesSignals, PrstatusCursigIsTheFallbackAndSiginfoWins) {
  Bytes n;
  add_note(n, "CORE", NT_PRSTATUS, prstatus(7, SIGABRT));
  add_note(n, "CORE", NT_PRSTATUS, prstatus(8, SIGSEGV));  // only the first thread's cursig counts
  CoreNoteScanner a;
  a.feed(build_core(n).bytes);
  ASSERT_TRUE(a.done());
  EXPECT_EQ(a.facts().error, "");
  EXPECT_EQ(a.facts().signal, SIGABRT);
  EXPECT_FALSE(a.facts().si_code.has_value());
  EXPECT_FALSE(a.facts().fault_address.has_value());
  EXPECT_EQ(a.facts().crashing_tid, 7);

  add_note(n, "CORE", NT_SIGINFO, siginfo(SIGBUS, BUS_ADRERR, 0x1234));
  CoreNoteScanner b;
  b.feed(build_core(n).bytes);
  EXPECT_EQ(b.facts().signal, SIGBUS);
  EXPECT_EQ(b.facts().si_code, BUS_ADRERR);
  EXPECT_EQ(b.facts().fault_address, 0x1234u);
}

TEST(CoreNotesSignals, NoFaultAddressForSignalsSentByKill) {
  for (int code : {SI_USER, SI_TKILL, SI_QUEUE}) {
    Bytes n;
    add_note(n, "CORE", NT_PRSTATUS, prstatus(7, SIGSEGV));
    add_note(n, "CORE", NT_SIGINFO, siginfo(SIGSEGV, code, 0x00000001000003e8));  // what _kill's pid/uid look like
    CoreNoteScanner s;
    s.feed(build_core(n).bytes);
    EXPECT_EQ(s.facts().signal, SIGSEGV);
    EXPECT_EQ(s.facts().si_code, code);
    EXPECT_FALSE(s.facts().fault_address.has_value()) << code;
  }
  Bytes n;
  add_note(n, "CORE", NT_SIGINFO, siginfo(SIGABRT, SI_TKILL, 0));
  CoreNoteScanner s;
  s.feed(build_core(n).bytes);
  EXPECT_EQ(s.facts().signal, SIGABRT);
  EXPECT_FALSE(s.facts().fault_address.has_value());
  EXPECT_TRUE(s.facts().thread_tids.empty());
}

// NT_AUXV: AT_ENTRY up to AT_NULL; pairs after AT_NULL are not read, only the first NT_AUXV counts.
TEST(CoreNotesSynthetic, AuxvEntryPoint) {
  const auto auxv = [](std::vector<std::pair<std::uint64_t, std::uint64_t>> pairs) {
    Bytes b;
    for (const auto& [type, value] : pairs) {
      append(b, type);
      append(b, value);
    }
    return b;
  };
  Bytes n;
  add_note(n, "CORE", NT_AUXV, auxv({{AT_PHDR, 0x400040}, {AT_ENTRY, 0x401020}, {AT_NULL, 0}, {AT_ENTRY, 0x999}}));
  add_note(n, "CORE", NT_AUXV, auxv({{AT_ENTRY, 0x777}}));
  const Core c = build_core(n);
  CoreNoteScanner s;
  s.feed(c.bytes);
  ASSERT_TRUE(s.done());
  EXPECT_EQ(s.facts().entry, 0x401020u);
  CoreNoteScanner none;  // the standard notes' auxv has no AT_ENTRY
  none.feed(standard_core().bytes);
  EXPECT_FALSE(none.facts().entry.has_value());
}

TEST(CoreNotesSynthetic, FnameFillingAll16BytesHasNoNul) {
  Bytes n;
  add_note(n, "CORE", NT_PRPSINFO, prpsinfo(1, "0123456789abcdefXYZ", ""));
  CoreNoteScanner s;
  s.feed(build_core(n).bytes);
  EXPECT_EQ(s.facts().fname, "0123456789abcdef");
  EXPECT_EQ(s.facts().psargs, "");
}

// ---- (3) Hostile and broken input: never a crash, always a reason ----

CoreFacts scan_whole(const Bytes& b, std::size_t cap = 32 << 20) {
  CoreNoteScanner s(cap);
  s.feed(b);
  s.finish();
  EXPECT_TRUE(s.done());
  EXPECT_EQ(s.buffered_bytes(), 0u);
  return s.facts();
}

Bytes with_header(const Core& c, void (*edit)(Elf64_Ehdr&)) {
  Bytes b = c.bytes;
  Elf64_Ehdr eh;
  std::memcpy(&eh, b.data(), sizeof eh);
  edit(eh);
  put(b, 0, eh);
  return b;
}

Bytes with_note_phdr(const Core& c, void (*edit)(Elf64_Phdr&)) {
  Bytes b = c.bytes;
  Elf64_Phdr ph;
  std::memcpy(&ph, b.data() + sizeof(Elf64_Ehdr), sizeof ph);
  edit(ph);
  put(b, sizeof(Elf64_Ehdr), ph);
  return b;
}

TEST(CoreNotesHostile, TruncatedHeader) {
  const Core c = standard_core();
  for (std::size_t len : {0u, 3u, 10u, 16u, 40u, 63u}) {
    CoreNoteScanner s;
    s.feed(std::span(c.bytes).first(len));
    EXPECT_FALSE(s.done()) << len;
    s.finish();
    EXPECT_TRUE(s.done());
    EXPECT_FALSE(s.facts().elf_core);
    EXPECT_EQ(s.facts().error.rfind("stream ended after " + std::to_string(len) + " bytes, before", 0), 0u)
        << s.facts().error;
  }
}

TEST(CoreNotesHostile, StreamEndingInsideTheNotesKeepsTheWholeNotesThatArrived) {
  const Core c = standard_core();
  const std::size_t first_note = sizeof(Elf64_Nhdr) + 8 + sizeof(elf_prstatus);
  CoreNoteScanner s;
  s.feed(std::span(c.bytes).first(c.notes_offset + first_note + 30));
  EXPECT_FALSE(s.done());
  s.finish();
  ASSERT_TRUE(s.done());
  EXPECT_NE(s.facts().error.find("before the end of the note segment"), std::string::npos) << s.facts().error;
  EXPECT_EQ(s.facts().thread_tids, (std::vector<std::int64_t>{kTid1}));
  EXPECT_FALSE(s.facts().pid.has_value());  // its note was cut
}

TEST(CoreNotesHostile, NotAnElfFile) {
  Bytes b(200, std::byte{'x'});
  const CoreFacts f = scan_whole(b);
  EXPECT_EQ(f.error, "not an ELF file (bad magic)");
  EXPECT_FALSE(f.elf_core);
}

TEST(CoreNotesHostile, WrongEType) {
  const Core c = standard_core();
  CoreNoteScanner s;
  s.feed(with_header(c, [](Elf64_Ehdr& e) { e.e_type = ET_EXEC; }));
  ASSERT_TRUE(s.done());
  EXPECT_FALSE(s.facts().elf_core);
  EXPECT_EQ(s.facts().error, "not a core file: e_type is 2");
}

TEST(CoreNotesHostile, Elfclass32CoreIsRecognisedButNotParsed) {
  Elf32_Ehdr eh{};
  std::memcpy(eh.e_ident, ELFMAG, SELFMAG);
  eh.e_ident[EI_CLASS] = ELFCLASS32;
  eh.e_ident[EI_DATA] = ELFDATA2LSB;
  eh.e_ident[EI_VERSION] = EV_CURRENT;
  eh.e_type = ET_CORE;
  eh.e_machine = EM_386;
  eh.e_version = EV_CURRENT;
  eh.e_phoff = sizeof eh;
  eh.e_phentsize = sizeof(Elf32_Phdr);
  eh.e_phnum = 1;
  Bytes b = bytes_of(eh);
  b.resize(4096);
  const CoreFacts f = scan_whole(b);
  EXPECT_TRUE(f.elf_core);
  EXPECT_EQ(f.error, "ELFCLASS32 core (e_machine 3): only 64-bit x86_64 cores are parsed");
}

TEST(CoreNotesHostile, BigEndianAndBadClass) {
  const Core c = standard_core();
  Bytes be = c.bytes;
  be[EI_DATA] = std::byte{ELFDATA2MSB};
  EXPECT_NE(scan_whole(be).error.find("not little-endian"), std::string::npos);
  Bytes bad = c.bytes;
  bad[EI_CLASS] = std::byte{7};
  EXPECT_EQ(scan_whole(bad).error, "invalid ELF class 7");
}

TEST(CoreNotesHostile, OtherMachine) {
  const CoreFacts f = scan_whole(with_header(standard_core(), [](Elf64_Ehdr& e) { e.e_machine = EM_AARCH64; }));
  EXPECT_TRUE(f.elf_core);
  EXPECT_EQ(f.error, "core for e_machine 183: only x86_64 (62) cores are parsed");
}

TEST(CoreNotesHostile, BrokenProgramHeaderTables) {
  const Core c = standard_core();
  EXPECT_EQ(scan_whole(with_header(c, [](Elf64_Ehdr& e) { e.e_phnum = 0; })).error, "core has no program headers");
  EXPECT_EQ(scan_whole(with_header(c, [](Elf64_Ehdr& e) { e.e_phentsize = 32; })).error, "e_phentsize is 32, not 56");
  EXPECT_NE(scan_whole(with_header(c, [](Elf64_Ehdr& e) { e.e_phoff = 8; })).error.find("overlap the ELF header"),
            std::string::npos);
  EXPECT_NE(scan_whole(with_header(c, [](Elf64_Ehdr& e) { e.e_phoff = 1ULL << 63; })).error.find("beyond the"),
            std::string::npos);
  EXPECT_NE(scan_whole(with_header(c, [](Elf64_Ehdr& e) { e.e_phnum = 0xfffe; }), 4096).error.find("4096-byte cap"),
            std::string::npos);
  EXPECT_EQ(scan_whole(with_note_phdr(c, [](Elf64_Phdr& p) { p.p_type = PT_LOAD; })).error,
            "no PT_NOTE among the 2 program headers read");
  // PN_XNUM with phdr[0] not a PT_NOTE: we do not go looking further.
  Bytes x = with_header(c, [](Elf64_Ehdr& e) { e.e_phnum = PN_XNUM; });
  Elf64_Phdr load{};
  load.p_type = PT_LOAD;
  put(x, sizeof(Elf64_Ehdr), load);
  EXPECT_EQ(scan_whole(x).error, "no PT_NOTE among the 1 program headers read");
}

TEST(CoreNotesHostile, HugeNoteSegmentIsCappedAndEarlyNotesAreKept) {
  const Core c = standard_core();
  for (std::uint64_t claimed : {std::uint64_t{1} << 63, std::uint64_t{c.notes_size}}) {
    const std::size_t cap = 700;  // room for the first NT_PRSTATUS and NT_PRPSINFO only
    Bytes b = c.bytes;
    Elf64_Phdr ph;
    std::memcpy(&ph, b.data() + sizeof(Elf64_Ehdr), sizeof ph);
    ph.p_filesz = claimed;
    put(b, sizeof(Elf64_Ehdr), ph);
    CoreNoteScanner s(cap);
    std::size_t max_buffered = 0;
    for (std::size_t at = 0; at < b.size(); ++at) {
      s.feed(std::span(b).subspan(at, 1));
      max_buffered = std::max(max_buffered, s.buffered_bytes());
    }
    ASSERT_TRUE(s.done());
    EXPECT_EQ(s.facts().error,
              "note segment of " + std::to_string(claimed) + " bytes exceeds the " + std::to_string(cap) + "-byte cap");
    EXPECT_EQ(s.facts().notes_size, claimed);
    EXPECT_EQ(s.facts().crashing_tid, kTid1);
    EXPECT_EQ(s.facts().pid, kPid);
    EXPECT_TRUE(s.facts().files.empty());  // beyond the cap
    EXPECT_LE(max_buffered, cap + sizeof(Elf64_Ehdr));
  }
}

TEST(CoreNotesHostile, NoteSegmentPlacement) {
  const Core c = standard_core();
  EXPECT_EQ(scan_whole(with_note_phdr(c, [](Elf64_Phdr& p) { p.p_offset = 0; })).error,
            "PT_NOTE at offset 0 overlaps the headers ending at 176");
  EXPECT_NE(scan_whole(with_note_phdr(c, [](Elf64_Phdr& p) { p.p_offset = ~std::uint64_t{0} - 8, p.p_filesz = 16; }))
                .error.find("runs past 2^64"),
            std::string::npos);
  EXPECT_EQ(scan_whole(with_note_phdr(c, [](Elf64_Phdr& p) { p.p_filesz = 0; })).error, "the PT_NOTE segment is empty");
  // Notes claimed beyond the end of the stream.
  const CoreFacts f = scan_whole(with_note_phdr(c, [](Elf64_Phdr& p) { p.p_offset = 1ULL << 40; }));
  EXPECT_NE(f.error.find("before the end of the note segment"), std::string::npos) << f.error;
  EXPECT_TRUE(f.thread_tids.empty());
}

TEST(CoreNotesHostile, OverflowingNoteSizes) {
  for (bool desc : {true, false}) {
    Bytes n;
    add_note(n, "CORE", NT_PRSTATUS, prstatus(kTid1, SIGSEGV));
    const std::size_t bad_at = n.size();
    append(n, Elf64_Nhdr{desc ? 5u : 0xfffffffdu, desc ? 0xffffffffu : 4u, NT_PRPSINFO});
    n.resize(n.size() + 64, std::byte{'A'});
    add_note(n, "CORE", NT_PRSTATUS, prstatus(kTid2, 0));
    const CoreFacts f = scan_whole(build_core(n).bytes);
    EXPECT_EQ(f.error, "malformed note at byte " + std::to_string(bad_at) + " of the note segment");
    EXPECT_EQ(f.thread_tids, (std::vector<std::int64_t>{kTid1}));  // gathered before the bad note
  }
}

TEST(CoreNotesHostile, MalformedDescriptors) {
  {
    Bytes n;
    add_note(n, "CORE", NT_PRSTATUS, Bytes(20));
    add_note(n, "CORE", NT_PRPSINFO, Bytes(100));
    EXPECT_EQ(scan_whole(build_core(n).bytes).error, "NT_PRSTATUS note of 20 bytes is too short");
  }
  {
    Bytes file;
    append(file, std::uint64_t{1} << 61);  // count * 24 overflows 64 bits
    append(file, std::uint64_t{4096});
    Bytes n;
    add_note(n, "CORE", NT_FILE, file);
    add_note(n, "CORE", NT_PRSTATUS, prstatus(kTid1, SIGSEGV));
    const CoreFacts f = scan_whole(build_core(n).bytes);
    EXPECT_EQ(f.error, "NT_FILE claims 2305843009213693952 entries but has 16 bytes");
    EXPECT_TRUE(f.files.empty());
    EXPECT_EQ(f.crashing_tid, kTid1);  // later notes still read
  }
  {
    Bytes file = nt_file(kFiles, 4096);
    file.resize(file.size() - 3);  // cut the last path's end and its NUL
    Bytes n;
    add_note(n, "CORE", NT_FILE, file);
    const CoreFacts f = scan_whole(build_core(n).bytes);
    EXPECT_EQ(f.error, "NT_FILE path 1 is not NUL-terminated");
    ASSERT_EQ(f.files.size(), 1u);
    EXPECT_EQ(f.files[0].path, kFiles[0].path);
  }
}

TEST(CoreNotesHostile, RandomBytes) {
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<int> byte(0, 255);
  for (int trial = 0; trial < 500; ++trial) {
    Bytes b(std::uniform_int_distribution<std::size_t>(0, 4096)(rng));
    for (auto& x : b) x = static_cast<std::byte>(byte(rng));
    if (trial % 2 == 1 && b.size() >= EI_NIDENT) {  // half get past the ident check
      std::memcpy(b.data(), ELFMAG, SELFMAG);
      b[EI_CLASS] = std::byte{ELFCLASS64};
      b[EI_DATA] = std::byte{ELFDATA2LSB};
    }
    CoreNoteScanner s(1 << 16);
    feed_random(s, b, rng, 300);
    s.finish();
    ASSERT_TRUE(s.done());
    EXPECT_FALSE(s.facts().error.empty());
  }
}

TEST(CoreNotesHostile, MutatedCores) {
  for (const Core& c : {standard_core(), standard_core({.notes_after_memory = true})}) {
    std::mt19937_64 rng(99);
    std::uniform_int_distribution<std::size_t> where(0, c.notes_end() - 1);
    std::uniform_int_distribution<int> byte(0, 255);
    for (int trial = 0; trial < 1500; ++trial) {
      Bytes b = c.bytes;
      for (int k = 0; k < 1 + trial % 8; ++k) {
        // Mostly the headers and note headers, where sizes and offsets live.
        const std::size_t at = trial % 3 == 0 ? where(rng) % 256 : where(rng);
        b[at] = static_cast<std::byte>(byte(rng));
      }
      CoreNoteScanner s(1 << 20);
      feed_random(s, b, rng, 2000);
      s.finish();
      ASSERT_TRUE(s.done());
      EXPECT_EQ(s.bytes_seen(), b.size());
    }
  }
}

// ---- (2) A real core, written by gdb's gcore from a forked child ----

// ---- The size the headers promise ----

TEST(CoreNotesPromisedSize, AStreamCutShortStillKnowsTheWholeSize) {
  for (const CoreOptions opt : {CoreOptions{.load_size = 1 << 20}, CoreOptions{.pn_xnum = true, .load_size = 1 << 20}}) {
    const Core c = standard_core(opt);
    CoreNoteScanner s;
    const std::size_t cut = c.notes_end() + 4096;  // the notes came, most of the memory did not
    feed_all(s, std::span(c.bytes).first(cut), 777);
    s.finish();
    EXPECT_EQ(s.facts().error, "");  // the notes are whole: the scanner itself has nothing to say
    EXPECT_EQ(s.facts().promised_size, c.bytes.size()) << opt.pn_xnum;
    EXPECT_LT(s.bytes_seen(), s.facts().promised_size);
  }
}

TEST(CoreNotesPromisedSize, TheFurthestSegmentCountsNotTheLastHeader) {
  Core c = standard_core({.load_size = 8192});
  // The last header (PT_LOAD) now ends inside the headers: the PT_NOTE before it is the furthest.
  Elf64_Phdr load{};
  std::memcpy(&load, c.bytes.data() + sizeof(Elf64_Ehdr) + sizeof(Elf64_Phdr), sizeof load);
  load.p_offset = 0;
  load.p_filesz = 64;
  put(c.bytes, sizeof(Elf64_Ehdr) + sizeof(Elf64_Phdr), load);
  CoreNoteScanner s;
  s.feed(c.bytes);
  s.finish();
  EXPECT_EQ(s.facts().promised_size, c.notes_end());
  EXPECT_LT(s.facts().promised_size, s.bytes_seen());
}

TEST(CoreNotesPromisedSize, OverflowingSegmentSaturates) {
  Core c = standard_core();
  Elf64_Phdr load{};
  std::memcpy(&load, c.bytes.data() + sizeof(Elf64_Ehdr) + sizeof(Elf64_Phdr), sizeof load);
  load.p_offset = UINT64_MAX - 10;
  put(c.bytes, sizeof(Elf64_Ehdr) + sizeof(Elf64_Phdr), load);
  CoreNoteScanner s;
  s.feed(c.bytes);
  s.finish();
  EXPECT_EQ(s.facts().promised_size, UINT64_MAX);
  EXPECT_EQ(s.facts().error, "");  // the notes themselves are fine
}

TEST(CoreNotesPromisedSize, UnknownUntilTheProgramHeadersArrive) {
  const Core c = standard_core();
  CoreNoteScanner s;
  s.feed(std::span(c.bytes).first(sizeof(Elf64_Ehdr) + 10));
  EXPECT_EQ(s.facts().promised_size, 0u);
  s.finish();
  EXPECT_EQ(s.facts().promised_size, 0u);
  EXPECT_NE(s.facts().error, "");
}

void* sleep_forever(void*) {
  for (;;) pause();
}

TEST(CoreNotesRealCore, GcoreOfAForkedThreeThreadChild) {
  if (std::system("command -v gcore >/dev/null 2>&1") != 0) GTEST_SKIP() << "gdb's gcore is not installed";
  char dir_template[] = "/tmp/core_notes_test.XXXXXX";
  ASSERT_NE(mkdtemp(dir_template), nullptr);
  const std::filesystem::path dir = dir_template;

  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // Only the notes matter: ask gcore (which honours coredump_filter) to leave all memory out.
    std::ofstream("/proc/self/coredump_filter") << "0";
    pthread_t t;
    for (int i = 0; i < 2; ++i) pthread_create(&t, nullptr, sleep_forever, nullptr);
    (void)!write(ready[1], "x", 1);
    sleep_forever(nullptr);
  }
  struct Reaper {  // the child must not outlive a failed assertion
    pid_t pid;
    ~Reaper() {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
  } reaper{child};
  close(ready[1]);
  char c = 0;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  close(ready[0]);

  const std::string cmd = "gcore -o " + (dir / "core").string() + " " + std::to_string(child) + " >" +
                          (dir / "gcore.log").string() + " 2>&1";
  const int rc = std::system(cmd.c_str());
  const std::filesystem::path core = dir / ("core." + std::to_string(child));
  if (rc != 0 || !std::filesystem::exists(core)) {
    std::ifstream log(dir / "gcore.log");
    std::string why;
    std::getline(log, why, '\0');
    std::filesystem::remove_all(dir);
    GTEST_SKIP() << "gcore could not dump the child (is ptrace permitted?): " << why;
  }

  std::ifstream in(core, std::ios::binary);
  CoreNoteScanner s;
  std::vector<char> buf(64 * 1024);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    s.feed(std::as_bytes(std::span(buf.data(), static_cast<std::size_t>(in.gcount()))));
  }
  s.finish();
  const std::uint64_t size = std::filesystem::file_size(core);
  std::filesystem::remove_all(dir);

  const CoreFacts& f = s.facts();
  EXPECT_EQ(f.error, "");
  EXPECT_TRUE(f.elf_core);
  EXPECT_EQ(s.bytes_seen(), size);
  EXPECT_GT(f.notes_size, 0u);
  EXPECT_LE(f.notes_offset + f.notes_size, size);
  EXPECT_EQ(f.promised_size, size);  // gdb's layout: sections after the memory
  ASSERT_GE(f.thread_tids.size(), 1u);
  EXPECT_EQ(f.thread_tids.size(), 3u);  // main thread + the two sleepers
  EXPECT_NE(std::find(f.thread_tids.begin(), f.thread_tids.end(), child), f.thread_tids.end());
  EXPECT_EQ(f.pid, child);  // same PID namespace as gdb
  // The kernel counts NT_FILE offsets in pages; gdb writes page_size 1 and counts in bytes.
  EXPECT_TRUE(f.page_size == 1 || f.page_size == static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE))) << f.page_size;
  ASSERT_FALSE(f.files.empty());
  const std::string exe = std::filesystem::read_symlink("/proc/self/exe").string();
  EXPECT_NE(std::find_if(f.files.begin(), f.files.end(), [&](const MappedFile& m) { return m.path == exe; }),
            f.files.end())
      << "the test binary should be among the mapped files";
  EXPECT_EQ(f.fname, std::filesystem::path(exe).filename().string().substr(0, 15));
  ASSERT_TRUE(f.entry.has_value());
  EXPECT_NE(std::find_if(f.files.begin(), f.files.end(),
                         [&](const MappedFile& m) { return m.path == exe && m.start <= *f.entry && *f.entry < m.end; }),
            f.files.end())
      << "AT_ENTRY lies in one of the test binary's mappings";
  for (const MappedFile& m : f.files) EXPECT_LT(m.start, m.end) << m.path;
}

}  // namespace
}  // namespace coredumpd::protocol
