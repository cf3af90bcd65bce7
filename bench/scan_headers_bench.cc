// The cost of CoreNoteScanner's promised size (issue 20 item 1): scans the headers of a core with
// 65534 program headers (the most without PN_XNUM, all of which the scanner now reads) followed by
// a 1 GiB stream in 1 MiB chunks, and prints the best of 50 scans in microseconds. See
// bench/README.md ("The size a core's headers promise"). Usage: scan-headers-bench
#include <elf.h>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>
#include "protocol/core_notes.h"
using namespace coredumpd::protocol;
int main() {
  const std::size_t phnum = 65534;
  const std::size_t notes_at = sizeof(Elf64_Ehdr) + phnum * sizeof(Elf64_Phdr);
  std::vector<std::byte> head(notes_at + 64);
  Elf64_Ehdr eh{};
  std::memcpy(eh.e_ident, ELFMAG, SELFMAG);
  eh.e_ident[EI_CLASS] = ELFCLASS64; eh.e_ident[EI_DATA] = ELFDATA2LSB; eh.e_ident[EI_VERSION] = EV_CURRENT;
  eh.e_type = ET_CORE; eh.e_machine = EM_X86_64; eh.e_version = EV_CURRENT;
  eh.e_phoff = sizeof eh; eh.e_ehsize = sizeof eh; eh.e_phentsize = sizeof(Elf64_Phdr); eh.e_phnum = phnum;
  std::memcpy(head.data(), &eh, sizeof eh);
  for (std::size_t i = 0; i < phnum; ++i) {
    Elf64_Phdr ph{};
    ph.p_type = i == 0 ? PT_NOTE : PT_LOAD;
    ph.p_offset = i == 0 ? notes_at : (std::uint64_t{1} << 20) + i * 4096;
    ph.p_filesz = i == 0 ? 24 : 4096;
    std::memcpy(head.data() + sizeof eh + i * sizeof ph, &ph, sizeof ph);
  }
  const Elf64_Nhdr nh{5, 4, NT_AUXV};
  std::memcpy(head.data() + notes_at, &nh, sizeof nh);
  std::memcpy(head.data() + notes_at + sizeof nh, "CORE\0\0\0\0\1\2\3\4", 12);
  std::vector<std::byte> mib(1 << 20, std::byte{1});
  const int runs = 50;
  double best = 1e18;
  for (int r = 0; r < runs; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    CoreNoteScanner s;
    s.feed(head);
    for (int i = 0; i < 1024; ++i) s.feed(mib);
    s.finish();
    const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    if (us < best) best = us;
    if (!s.facts().error.empty()) { std::printf("error %s\n", s.facts().error.c_str()); return 1; }
  }
  std::printf("best of %d: %.0f us per scan (65534 phdrs + 1 GiB in 1 MiB chunks)\n", runs, best);
}
