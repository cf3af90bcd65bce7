#include "cli/stack_trace.h"

#include <cinttypes>
#include <cstdio>

#include "util/text.h"

namespace coredumpd::cli {

namespace {

using analysis::CrashReport;

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

/// A string member of a .note.package object, or "" (absent, or not a string: hostile JSON).
std::string package_string(const nlohmann::json& package, const char* key) {
  if (!package.is_object()) return "";
  const auto it = package.find(key);
  if (it == package.end()) return "";
  const auto bytes = bytes_from_json(*it);
  return bytes && it->is_string() ? *bytes : "";
}

// systemd's build_package_reference(): "<type or package> <name>[-<version>][.<arch>]".
std::string module_line(const analysis::Module& m) {
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

std::string frame_line(std::size_t n, const analysis::Frame& f) {
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

/// The module whose file is the record's executable, or nullptr.
const analysis::Module* executable_module(const CrashReport& report, const DumpRecord& r) {
  std::string exe = r.exe;
  constexpr std::string_view kDeleted = " (deleted)";
  if (exe.size() > kDeleted.size() && exe.ends_with(kDeleted)) exe.resize(exe.size() - kDeleted.size());
  if (exe.empty()) return nullptr;
  for (const auto& m : report.modules) {
    std::string path = m.path;
    if (path.size() > kDeleted.size() && path.ends_with(kDeleted)) path.resize(path.size() - kDeleted.size());
    if (path == exe) return &m;
  }
  return nullptr;
}

}  // namespace

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

std::vector<InfoField> analysis_fields(const DumpRecord& r, bool has_core) {
  std::vector<InfoField> fields;
  if (r.analysis.is_null() && !has_core) return fields;  // nothing was, or could be, analysed
  if (!r.signature.empty()) {
    fields.push_back({"Signature", escape_for_display(r.signature) + " (" + escape_for_display(r.signature_text) + ")"});
  }
  std::string message = "Process " + std::to_string(r.pid) + " (" + escape_for_display(r.comm) + ") of user " +
                         std::to_string(r.uid) + " dumped core.\n\n";
  if (r.analysis.is_null()) {
    fields.push_back({"Message", message + "Stack trace: not analysed yet"});
    return fields;
  }
  CrashReport report;
  try {
    report = analysis::report_from_json(r.analysis);
  } catch (const std::exception& e) {  // the index holds what an analyzer of hostile input wrote
    report = analysis::unavailable(std::string("the stored report is not valid: ") + e.what());
  }
  if (report.state != "ok") {
    fields.push_back({"Message", message + "Stack trace: unavailable (" + escape_for_display(report.reason) + ")"});
  } else {
    if (const auto* exe = executable_module(report, r)) {
      if (!exe->build_id.empty()) fields.push_back({"Build ID", escape_for_display(exe->build_id)});
      const std::string name = package_string(exe->package, "name");
      const std::string version = package_string(exe->package, "version");
      if (!name.empty() && !version.empty())
        fields.push_back({"Package", escape_for_display(name) + "/" + escape_for_display(version)});
    }
    fields.push_back({"Message", message + stack_trace_text(report)});
  }
  std::string notes;
  for (const auto& w : report.warnings) notes += (notes.empty() ? "" : "\n") + escape_for_display(w);
  if (report.debuginfod_used) notes += std::string(notes.empty() ? "" : "\n") + "debuginfod was asked for missing files";
  if (!notes.empty()) fields.push_back({"Analysis", notes});
  return fields;
}

}  // namespace coredumpd::cli
