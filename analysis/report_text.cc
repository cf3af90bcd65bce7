#include "analysis/report_text.h"

#include <cinttypes>
#include <cstdio>
#include <exception>
#include <string_view>

#include "store/dump_record.h"
#include "util/text.h"

namespace coredumpd::analysis {

namespace {

std::string hex_u64(std::uint64_t v, int width) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "%0*" PRIx64, width, v);
  return buf;
}

/// The file name part of a module path (what libdwfl names a module in frames, "libc.so.6").
std::string basename_of(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// systemd's build_package_reference(): "<type or package> <name>[-<version>][.<arch>]".
std::string module_line(const Module& m) {
  std::string line = "Module " + escape_for_display(basename_of(m.path));
  const std::string name = package_string(m.package, "name");
  const std::string version = package_string(m.package, "version");
  if (!name.empty()) {
    const std::string type = package_string(m.package, "type");
    const std::string arch = package_string(m.package, "architecture");
    line += " from " + escape_for_display(type.empty() ? "package" : type) + " " + escape_for_display(name);
    if (!version.empty()) line += "-" + escape_for_display(version);
    if (!arch.empty()) line += "." + escape_for_display(arch);
  }
  if (m.build_id.empty()) {
    if (name.empty()) line += " without build-id.";
  } else if (name.empty() || version.empty()) {
    line += ", build-id=" + escape_for_display(m.build_id);
  }
  return line;
}

std::string frame_line(std::size_t n, const Frame& f) {
  std::string num = "#" + std::to_string(n);
  if (num.size() < 3) num.append(3 - num.size(), ' ');  // systemd's "#%-2u"
  std::string line = num + " 0x" + hex_u64(f.pc, 16) + " " +
                     (f.function.empty() ? std::string("n/a") : escape_for_display(f.function)) + " (" +
                     (f.module.empty() ? std::string("n/a") : escape_for_display(f.module)) + " + 0x" +
                     hex_u64(f.module_offset, 0) + ")";
  if (!f.file.empty()) {
    line += " at " + escape_for_display(f.file);
    if (f.line != 0) line += ":" + std::to_string(f.line);
  }
  return line;
}

std::string without_deleted(std::string path) {
  constexpr std::string_view kDeleted = " (deleted)";
  if (path.size() > kDeleted.size() && path.ends_with(kDeleted)) path.resize(path.size() - kDeleted.size());
  return path;
}

}  // namespace

std::string package_string(const nlohmann::json& package, const char* key) {
  if (!package.is_object()) return "";
  const auto it = package.find(key);
  if (it == package.end()) return "";
  const auto bytes = bytes_from_json(*it);
  return bytes && it->is_string() ? *bytes : "";
}

const Module* executable_module(const CrashReport& report, const std::string& exe_path) {
  const std::string exe = without_deleted(exe_path);
  if (exe.empty()) return nullptr;
  for (const auto& m : report.modules)
    if (without_deleted(m.path) == exe) return &m;
  return nullptr;
}

std::string stack_trace_text(const CrashReport& report) {
  std::string out;
  const auto line = [&](const std::string& l) {
    if (!out.empty()) out.push_back('\n');
    out += l;
  };
  for (const auto& m : report.modules) line(module_line(m));
  if (report.modules_omitted != 0) line("... " + std::to_string(report.modules_omitted) + " more modules not shown");
  bool first = true;
  for (const auto& t : report.threads) {
    if (!first) out.push_back('\n');  // a blank line between threads, as systemd has it
    first = false;
    std::string head = "Stack trace of thread " + std::to_string(t.tid);
    if (!t.name.empty()) head += " (" + escape_for_display(t.name) + ")";
    line(head + ":");
    for (std::size_t i = 0; i < t.frames.size(); ++i) line(frame_line(i, t.frames[i]));
    if (t.frames_omitted != 0) line("... " + std::to_string(t.frames_omitted) + " more frames");
    if (!t.error.empty()) line("(unwinding stopped: " + escape_for_display(t.error) + ")");
  }
  if (report.threads_omitted != 0) {
    out.push_back('\n');
    line("... " + std::to_string(report.threads_omitted) + " more threads not shown" +
         (report.text_truncated ? " (the report was cut to fit its size limit)" : ""));
  }
  return out;
}

std::optional<CrashReport> stored_report(const DumpRecord& r) {
  if (r.analysis.is_null()) return std::nullopt;
  try {
    return report_from_json(r.analysis);
  } catch (const std::exception& e) {  // the index holds what an analyzer of hostile input wrote
    return unavailable(std::string("the stored report is not valid: ") + e.what());
  }
}

std::string crash_message(const DumpRecord& r, const std::optional<CrashReport>& report, bool core_stored,
                          bool with_trace) {
  std::string m = "Process " + std::to_string(r.pid) + " (" + escape_for_display(r.comm) + ") of user " +
                  std::to_string(r.uid) +
                  (core_stored ? " dumped core." : " terminated abnormally without generating a coredump.");
  if (!core_stored) {
    m += "\n\ncoredumpd: " + std::string(state_name(r.state));
    if (!r.reason.empty()) m += ": " + escape_for_display(r.reason);
    return m;
  }
  if (!with_trace || !report) return m;
  if (report->state != "ok") return m + "\n\nStack trace: unavailable (" + escape_for_display(report->reason) + ")";
  const std::string trace = stack_trace_text(*report);
  return trace.empty() ? m : m + "\n\n" + trace;
}

}  // namespace coredumpd::analysis
