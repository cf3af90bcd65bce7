#include "analyzer/unwind.h"

#include <elfutils/libdwfl.h>
#include <gelf.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <map>
#include <set>
#include <memory>
#include <vector>

#include "analyzer/modules.h"

namespace coredumpd::analyzer {
namespace {

char* g_debuginfo_path = nullptr;  // libdwfl's default search path (.debug, /usr/lib/debug)

const Dwfl_Callbacks kCallbacks = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .section_address = dwfl_offline_section_address,
    .debuginfo_path = &g_debuginfo_path,
};

// libdwfl's last error, else libelf's (libdwfl passes some of those on without its own message).
std::string dwfl_error() {
  const std::string dwfl_msg = dwfl_errno() != 0 ? dwfl_errmsg(-1) : "";
  if (!dwfl_msg.empty() && dwfl_msg != "no error") return dwfl_msg;
  const std::string elf_msg = elf_errno() != 0 ? elf_errmsg(-1) : "";
  if (!elf_msg.empty() && elf_msg != "no error") return elf_msg;
  return "no reason given by libdwfl";
}

struct ElfCloser {
  void operator()(Elf* e) const { elf_end(e); }
};
struct DwflCloser {
  void operator()(Dwfl* d) const { dwfl_end(d); }
};

/// The core itself, for the one word the unwinder cannot find: the return address of a call
/// through a null pointer (return_address_at_pc0()).
struct CoreMemory {
  Elf* elf = nullptr;
  int machine = EM_NONE;
};

/// The 8-byte word at `addr` in the core's PT_LOAD segments (libelf's program headers and
/// elf_getdata_rawchunk), or nullopt when the core does not hold it.
std::optional<std::uint64_t> read_core_word(const CoreMemory& core, std::uint64_t addr) {
  std::size_t count = 0;
  if (elf_getphdrnum(core.elf, &count) != 0) return std::nullopt;
  for (std::size_t i = 0; i < count; ++i) {
    GElf_Phdr ph;
    if (gelf_getphdr(core.elf, static_cast<int>(i), &ph) == nullptr || ph.p_type != PT_LOAD) continue;
    if (addr < ph.p_vaddr || addr - ph.p_vaddr > ph.p_filesz || ph.p_filesz - (addr - ph.p_vaddr) < 8) continue;
    Elf_Data* d = elf_getdata_rawchunk(core.elf, static_cast<int64_t>(ph.p_offset + (addr - ph.p_vaddr)), 8, ELF_T_BYTE);
    if (d == nullptr || d->d_size != 8) return std::nullopt;
    std::uint64_t word = 0;
    std::memcpy(&word, d->d_buf, 8);
    return word;
  }
  return std::nullopt;
}

/// Where a call through a null pointer returns to, for frame #0 at pc 0: no unwind data covers
/// address 0, and libdwfl's frame-pointer fallback skips the caller (its return address is not
/// in a frame yet). x86-64: the word at the stack pointer (DWARF register 7) that the call pushed;
/// AArch64: the link register (x30). nullopt for other machines or unreadable state.
std::optional<std::uint64_t> return_address_at_pc0(Dwfl_Frame* frame, const CoreMemory& core) {
  Dwarf_Word value = 0;
  if (core.machine == EM_X86_64) {
    if (dwfl_frame_reg(frame, 7, &value) != 0) return std::nullopt;
    return read_core_word(core, value);
  }
  if (core.machine == EM_AARCH64 && dwfl_frame_reg(frame, 30, &value) == 0) return value;
  return std::nullopt;
}

struct FrameWalk {
  Dwfl* dwfl;
  std::size_t max_frames;
  analysis::Thread* thread;
  const CoreMemory* core;
  std::size_t counted = 0;
  std::string error;
};

void add_frame(FrameWalk& walk, Dwarf_Addr pc, bool activation) {
  ++walk.counted;
  if (walk.thread->frames.size() < walk.max_frames) {
    walk.thread->frames.push_back(describe_frame(walk.dwfl, pc, activation));
  }
}

int on_frame(Dwfl_Frame* frame, void* arg) {
  auto& walk = *static_cast<FrameWalk*>(arg);
  Dwarf_Addr pc = 0;
  bool activation = false;
  if (!dwfl_frame_pc(frame, &pc, &activation)) {
    walk.error = dwfl_error();
    return DWARF_CB_ABORT;
  }
  add_frame(walk, pc, activation);
  if (walk.counted == 1 && pc == 0) {
    if (const auto ret = return_address_at_pc0(frame, *walk.core)) add_frame(walk, *ret, /*activation=*/false);
  }
  if (walk.counted >= std::max(kMaxFramesCounted, walk.max_frames)) {
    walk.error = "stopped after " + std::to_string(walk.counted) + " frames";
    return DWARF_CB_ABORT;
  }
  return DWARF_CB_OK;
}

int on_thread(Dwfl_Thread* thread, void* arg) {
  static_cast<std::vector<std::int64_t>*>(arg)->push_back(dwfl_thread_tid(thread));
  return DWARF_CB_OK;
}

// The selected threads, unwound during one dwfl_getthreads() walk (dwfl_getthread_frames() would
// walk the notes again per thread, and libdw 0.188 leaks a little on each of its early stops).
struct ThreadWalk {
  Dwfl* dwfl;
  const CoreMemory* core;
  const UnwindOptions* options;
  std::set<std::int64_t> wanted;
  std::map<std::int64_t, analysis::Thread> done;
};

int on_wanted_thread(Dwfl_Thread* thread, void* arg) {
  auto& walk = *static_cast<ThreadWalk*>(arg);
  const std::int64_t tid = dwfl_thread_tid(thread);
  if (!walk.wanted.contains(tid) || walk.done.contains(tid)) return DWARF_CB_OK;
  analysis::Thread t;
  t.tid = tid;
  if (const auto it = walk.options->thread_names.find(tid); it != walk.options->thread_names.end()) t.name = it->second;
  FrameWalk frames{walk.dwfl, walk.options->max_frames, &t, walk.core, 0, {}};
  const int rc = dwfl_thread_getframes(thread, on_frame, &frames);
  if (rc == -1 && frames.error.empty()) frames.error = dwfl_error();
  t.error = frames.error;
  t.frames_omitted = frames.counted - t.frames.size();
  walk.done.emplace(tid, std::move(t));
  return DWARF_CB_OK;
}

}  // namespace

analysis::CrashReport unwind_core(int core_fd, const UnwindOptions& options) {
  elf_version(EV_CURRENT);
  std::unique_ptr<Elf, ElfCloser> elf(elf_begin(core_fd, ELF_C_READ, nullptr));
  if (!elf || elf_kind(elf.get()) != ELF_K_ELF) {
    return analysis::unavailable(elf ? "core: not an ELF file" : std::string("core: not an ELF file: ") + elf_errmsg(-1));
  }
  GElf_Ehdr ehdr;
  if (gelf_getehdr(elf.get(), &ehdr) == nullptr) {
    return analysis::unavailable(std::string("core: bad ELF header: ") + elf_errmsg(-1));
  }
  if (ehdr.e_type != ET_CORE) {
    return analysis::unavailable("core: an ELF file, but not a core (e_type " + std::to_string(ehdr.e_type) + ")");
  }
  std::unique_ptr<Dwfl, DwflCloser> dwfl(dwfl_begin(&kCallbacks));
  if (!dwfl) return analysis::unavailable("libdwfl: " + dwfl_error());

  analysis::CrashReport report;
  report.state = "ok";
  dwfl_report_begin(dwfl.get());
  if (dwfl_core_file_report(dwfl.get(), elf.get(), nullptr) < 0) {
    report.warnings.push_back("modules: " + dwfl_error());
  }
  dwfl_report_end(dwfl.get(), nullptr, nullptr);
  if (dwfl_core_file_attach(dwfl.get(), elf.get()) < 0) {
    return analysis::unavailable("core: its threads cannot be read (no usable NT_PRSTATUS note; a core cut "
                                 "before its notes has none): " + dwfl_error());
  }
  std::vector<std::int64_t> tids;  // in NT_PRSTATUS order
  if (dwfl_getthreads(dwfl.get(), on_thread, &tids) != 0 || tids.empty()) {
    return analysis::unavailable("core: no threads: " + dwfl_error());
  }
  report.threads_total = tids.size();
  std::int64_t crashed = tids.front();
  if (options.crashing_tid) {
    if (std::find(tids.begin(), tids.end(), *options.crashing_tid) != tids.end()) {
      crashed = *options.crashing_tid;
    } else {
      report.warnings.push_back("crashing thread " + std::to_string(*options.crashing_tid) +
                                " is not in the core: the first NT_PRSTATUS thread is shown first");
    }
  }
  std::vector<std::int64_t> others;
  for (const auto tid : tids) {
    if (tid != crashed) others.push_back(tid);
  }
  std::sort(others.begin(), others.end());
  const std::size_t keep_others = std::min(others.size(), std::max<std::size_t>(options.max_threads, 1) - 1);
  report.threads_omitted = others.size() - keep_others;
  others.resize(keep_others);

  const CoreMemory core{elf.get(), ehdr.e_machine};
  ThreadWalk walk{dwfl.get(), &core, &options, {others.begin(), others.end()}, {}};
  walk.wanted.insert(crashed);
  if (dwfl_getthreads(dwfl.get(), on_wanted_thread, &walk) != 0) {
    report.warnings.push_back("threads: " + dwfl_error());
  }
  others.insert(others.begin(), crashed);
  for (const auto tid : others) {
    auto it = walk.done.find(tid);
    if (it == walk.done.end()) {  // not met on the second walk: keep it, with the reason
      analysis::Thread t;
      t.tid = tid;
      t.error = "thread not found again in the core";
      report.threads.push_back(std::move(t));
    } else {
      report.threads.push_back(std::move(it->second));
    }
  }
  report.threads.front().crashed = true;

  ModuleScan scan = scan_modules(dwfl.get());
  report.modules = std::move(scan.modules);
  report.modules_omitted = scan.omitted;
  report.warnings.insert(report.warnings.end(), scan.warnings.begin(), scan.warnings.end());
  report.debuginfod_used = options.debuginfod && scan.missing_files;
  return report;
}

}  // namespace coredumpd::analyzer
