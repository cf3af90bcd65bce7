#include "daemon/dump/core_fill.h"

#include <algorithm>
#include <cstddef>

#include "store/record_extras.h"

namespace coredumpd {

namespace {

constexpr std::size_t kMappedFilesMax = 4096;  // NT_FILE may list ~65k mappings; the record stays small

std::string base_name(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

bool has_maps(const DumpRecord& r) {
  const auto proc = r.extra.find(extras::kProc);
  return proc != r.extra.end() && proc->is_object() && proc->contains("maps");
}

}  // namespace

std::optional<std::string> exe_from_core(const protocol::CoreFacts& core) {
  if (core.entry) {
    for (const auto& f : core.files)
      if (f.start <= *core.entry && *core.entry < f.end) return f.path;
  }
  if (core.fname.empty()) return std::nullopt;
  for (const auto& f : core.files)
    if (f.page_offset == 0 && base_name(f.path).starts_with(core.fname)) return f.path;
  return std::nullopt;
}

std::vector<std::string> argv_from_psargs(const std::string& psargs) {
  std::vector<std::string> argv;
  std::size_t start = 0;
  while (start < psargs.size()) {
    const auto space = std::min(psargs.find(' ', start), psargs.size());
    if (space > start) argv.push_back(psargs.substr(start, space - start));
    start = space + 1;
  }
  return argv;
}

std::vector<std::string> fill_from_core(const protocol::CoreFacts& core, DumpRecord& r) {
  std::vector<std::string> filled;
  if (r.comm.empty() && !core.fname.empty()) {
    r.comm = core.fname;
    filled.emplace_back("comm");
  }
  if (r.argv.empty() && !core.psargs.empty()) {
    r.argv = argv_from_psargs(core.psargs);
    if (!r.argv.empty()) filled.emplace_back("argv");
  }
  if (r.exe.empty()) {
    if (auto exe = exe_from_core(core)) {
      r.exe = std::move(*exe);
      filled.emplace_back("exe");
    }
  }
  if (!has_maps(r) && !core.files.empty()) {
    auto files = nlohmann::json::array();
    for (const auto& f : core.files) {
      if (files.size() >= kMappedFilesMax) break;
      files.push_back({{"start", f.start}, {"end", f.end}, {"offset", f.page_offset * core.page_size},
                       {"path", bytes_to_json(f.path)}});
    }
    r.extra[extras::kCoreMappedFiles] = std::move(files);
    filled.emplace_back("maps");
  }
  if (!r.signal && core.signal) {
    r.signal = *core.signal;
    filled.emplace_back("signal");
  }
  if (!filled.empty()) r.extra[extras::kFromCore] = filled;
  return filled;
}

}  // namespace coredumpd
