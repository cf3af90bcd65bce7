#include "analyzer/modules.h"

#include <cxxabi.h>
#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <string_view>

#include "analyzer/package_note.h"

namespace coredumpd::analyzer {
namespace {

constexpr std::string_view kDeleted = " (deleted)";
constexpr std::size_t kMaxWarnings = 32;

std::string hex(const unsigned char* bytes, int len) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (int i = 0; i < len; ++i) {
    out += kDigits[bytes[i] >> 4];
    out += kDigits[bytes[i] & 15];
  }
  return out;
}

// The kernel's own images ([vdso], linux-vdso.so.1) have no file to find.
bool is_kernel_image(std::string_view name) {
  return name.empty() || name.front() == '[' || name.starts_with("linux-vdso") || name.starts_with("linux-gate");
}

std::string base_name(std::string_view path) {
  if (path.ends_with(kDeleted)) path.remove_suffix(kDeleted.size());
  const auto slash = path.rfind('/');
  return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

// The build-id of the ELF file at `path` ("" if unreadable or none).
std::string file_build_id(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  std::string id;
  if (Elf* elf = elf_begin(fd, ELF_C_READ, nullptr)) {
    const void* bits = nullptr;
    if (const ssize_t len = dwelf_elf_gnu_build_id(elf, &bits); len > 0 && len < 1024) {
      id = hex(static_cast<const unsigned char*>(bits), static_cast<int>(len));
    }
    elf_end(elf);
  }
  ::close(fd);
  return id;
}

void warn_missing(ModuleScan& scan, const analysis::Module& m) {
  if (is_kernel_image(m.path)) return;
  scan.missing_files = true;
  if (scan.warnings.size() >= kMaxWarnings) return;
  std::string why;
  if (std::string_view(m.path).ends_with(kDeleted)) {
    why = "deleted before the crash";
  } else if (::access(m.path.c_str(), R_OK) == 0) {
    why = m.build_id.empty() ? "no build-id to match its file against"
                             : "its file does not have the core's build-id " + m.build_id;
  } else {
    why = "no such file here";
  }
  scan.warnings.push_back("no ELF file for " + m.path + ": " + why + "; its frames are unsymbolised (module+offset)");
}

int on_module(Dwfl_Module* mod, void**, const char* name, Dwarf_Addr, void* arg) {
  auto& scan = *static_cast<ModuleScan*>(arg);
  if (scan.modules.size() >= analysis::kMaxModules) {
    ++scan.omitted;
    return DWARF_CB_OK;
  }
  analysis::Module m;
  m.path = name != nullptr ? name : "";
  Dwarf_Addr bias = 0;
  Elf* elf = dwfl_module_getelf(mod, &bias);  // finds the file (build-id, then path) if not yet done
  const char* mainfile = nullptr;
  const char* debugfile = nullptr;
  Dwarf_Addr start = 0, end = 0;
  dwfl_module_info(mod, nullptr, &start, &end, nullptr, nullptr, &mainfile, &debugfile);
  m.start = start;
  m.end = std::max(start, end);  // a forged core can make libdwfl report an inverted range
  if (mainfile != nullptr) m.elf = mainfile;
  if (debugfile != nullptr) m.debug = debugfile;
  const unsigned char* id = nullptr;
  GElf_Addr id_vaddr = 0;
  if (const int len = dwfl_module_build_id(mod, &id, &id_vaddr); len > 0) m.build_id = hex(id, len);
  m.package = read_package_note(elf);
  // libdwfl opens a module named by NT_FILE itself when its build-id matches, without recording a
  // file name (mainfile stays null): check the same to tell that from an image of the core.
  if (m.elf.empty() && !m.build_id.empty() && file_build_id(m.path) == m.build_id) m.elf = m.path;
  if (m.elf.empty()) warn_missing(scan, m);
  scan.modules.push_back(std::move(m));
  return DWARF_CB_OK;
}

}  // namespace

std::string demangle(const char* symbol) {
  int status = -1;
  std::unique_ptr<char, decltype(&std::free)> out(abi::__cxa_demangle(symbol, nullptr, nullptr, &status), std::free);
  return status == 0 && out ? std::string(out.get()) : std::string(symbol);
}

ModuleScan scan_modules(Dwfl* dwfl) {
  ModuleScan scan;
  dwfl_getmodules(dwfl, on_module, &scan, 0);
  std::sort(scan.modules.begin(), scan.modules.end(),
            [](const analysis::Module& a, const analysis::Module& b) { return a.start < b.start; });
  return scan;
}

analysis::Frame describe_frame(Dwfl* dwfl, Dwarf_Addr pc, bool activation) {
  analysis::Frame f;
  f.pc = pc;
  const Dwarf_Addr lookup = activation || pc == 0 ? pc : pc - 1;
  Dwfl_Module* mod = dwfl_addrmodule(dwfl, lookup);
  if (mod == nullptr) return f;
  Dwarf_Addr start = 0;
  const char* name = dwfl_module_info(mod, nullptr, &start, nullptr, nullptr, nullptr, nullptr, nullptr);
  f.module = base_name(name != nullptr ? name : "");
  f.module_offset = pc - start;
  GElf_Off offset = 0;
  GElf_Sym sym;
  if (const char* symbol = dwfl_module_addrinfo(mod, lookup, &offset, &sym, nullptr, nullptr, nullptr)) {
    f.function = demangle(symbol);
    // A versioned name from a .symtab ("__libc_start_main@@GLIBC_2.34"): the symbol is the name.
    if (const auto at = f.function.find('@'); at != std::string::npos && at > 0) f.function.resize(at);
    f.function_offset = offset + (pc - lookup);
  }
  if (Dwfl_Line* line = dwfl_module_getsrc(mod, lookup)) {
    int lineno = 0;
    if (const char* file = dwfl_lineinfo(line, nullptr, &lineno, nullptr, nullptr, nullptr)) f.file = file;
    f.line = lineno > 0 ? static_cast<std::uint32_t>(lineno) : 0;
  }
  return f;
}

}  // namespace coredumpd::analyzer
