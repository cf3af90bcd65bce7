#include "analyzer/package_note.h"

#include <gelf.h>

#include <algorithm>
#include <cstring>
#include <string_view>

namespace coredumpd::analyzer {
namespace {

constexpr std::size_t kMaxNoteBytes = 64 * 1024;

nlohmann::json parse_note(Elf_Data* data) {
  GElf_Nhdr nhdr;
  std::size_t name_off = 0, desc_off = 0;
  for (std::size_t off = 0; off < data->d_size;) {
    const std::size_t next = gelf_getnote(data, off, &nhdr, &name_off, &desc_off);
    if (next == 0) break;
    off = next;
    if (nhdr.n_type != kPackageNoteType || nhdr.n_namesz != 4) continue;
    const char* base = static_cast<const char*>(data->d_buf);
    if (std::memcmp(base + name_off, "FDO", 4) != 0) continue;
    std::string_view desc(base + desc_off, std::min<std::size_t>(nhdr.n_descsz, kMaxNoteBytes));
    desc = desc.substr(0, desc.find('\0'));  // the JSON is NUL-padded to the note's alignment
    auto j = nlohmann::json::parse(desc.begin(), desc.end(), nullptr, /*allow_exceptions=*/false);
    if (j.is_object()) return j;
  }
  return nullptr;
}

}  // namespace

nlohmann::json read_package_note(Elf* elf) {
  std::size_t phnum = 0;
  if (elf == nullptr || elf_getphdrnum(elf, &phnum) != 0) return nullptr;
  for (std::size_t i = 0; i < phnum && i < 4096; ++i) {
    GElf_Phdr phdr;
    if (gelf_getphdr(elf, static_cast<int>(i), &phdr) == nullptr || phdr.p_type != PT_NOTE) continue;
    if (phdr.p_filesz == 0 || phdr.p_filesz > kMaxNoteBytes * 4) continue;
    Elf_Data* data = elf_getdata_rawchunk(elf, static_cast<int64_t>(phdr.p_offset), phdr.p_filesz,
                                          phdr.p_align == 8 ? ELF_T_NHDR8 : ELF_T_NHDR);
    if (data == nullptr) continue;
    if (auto j = parse_note(data); !j.is_null()) return j;
  }
  return nullptr;
}

}  // namespace coredumpd::analyzer
