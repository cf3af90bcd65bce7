#include "analysis/crash_report.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "store/dump_record.h"
#include "util/text.h"

namespace coredumpd::analysis {

namespace {

using nlohmann::json;

// Bounds of report_from_json(). Strings from the core (paths, symbols, names) get one cap; the
// readable signature holds kSignatureFrames such strings.
constexpr std::size_t kMaxStringBytes = 4096;
constexpr std::size_t kMaxSignatureTextBytes = 8 * kMaxStringBytes;
constexpr std::size_t kMaxBuildIdHex = 256;
constexpr std::size_t kMaxThreads = kDefaultMaxThreads * 16;
constexpr std::size_t kMaxFramesPerThread = 4096;
constexpr std::size_t kMaxWarnings = 256;
// A count read back (threads_total, frames_omitted...): far above any real core, small enough to
// print and add without overflow.
constexpr std::uint64_t kMaxCount = std::uint64_t{1} << 40;
// .note.package is a flat object in systemd's format; nesting is allowed a little, bounded so that
// dump() (recursive) can never run deep.
constexpr int kMaxPackageDepth = 4;
constexpr std::size_t kMaxPackageItems = 256;

std::string cut_utf8(std::string s, std::size_t max) {
  if (s.size() <= max) return s;
  std::size_t n = max;
  // Do not end inside a UTF-8 sequence: back off continuation bytes (10xxxxxx).
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  s.resize(n);
  return s;
}

json frame_json(const Frame& f) {
  return json{{"pc", f.pc},
              {"module", bytes_to_json(f.module)},
              {"module_offset", f.module_offset},
              {"function", bytes_to_json(f.function)},
              {"function_offset", f.function_offset},
              {"file", bytes_to_json(f.file)},
              {"line", f.line}};
}

json thread_json(const Thread& t) {
  auto frames = json::array();
  for (const auto& f : t.frames) frames.push_back(frame_json(f));
  return json{{"tid", t.tid},
              {"name", bytes_to_json(t.name)},
              {"crashed", t.crashed},
              {"frames_omitted", t.frames_omitted},
              {"error", bytes_to_json(t.error)},
              {"frames", std::move(frames)}};
}

json module_json(const Module& m) {
  return json{{"path", bytes_to_json(m.path)},     {"build_id", bytes_to_json(m.build_id)},
              {"start", m.start},                  {"end", m.end},
              {"elf", bytes_to_json(m.elf)},       {"debug", bytes_to_json(m.debug)},
              {"package", m.package.is_object() ? m.package : json(nullptr)}};
}

// dump() that cannot throw: a package object built in C++ (not parsed) might hold invalid UTF-8.
std::size_t dumped_size(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace).size();
}

// --- report_from_json() ---------------------------------------------------------------------

[[noreturn]] void refuse(const std::string& field, const std::string& why) {
  throw ReportError("crash report: " + field + ": " + why);
}

const json& member(const json& obj, const std::string& where, const char* key) {
  const auto it = obj.find(key);
  if (it == obj.end()) refuse(where + key, "missing");
  return *it;
}

const json& object_at(const json& j, const std::string& field) {
  if (!j.is_object()) refuse(field, "not an object");
  return j;
}

std::uint64_t read_u64(const json& obj, const std::string& where, const char* key,
                       std::uint64_t max = std::numeric_limits<std::uint64_t>::max()) {
  const json& v = member(obj, where, key);
  std::uint64_t n = 0;
  if (v.is_number_unsigned()) {
    n = v.get<std::uint64_t>();
  } else if (v.is_number_integer()) {
    if (v.get<std::int64_t>() < 0) refuse(where + key, "negative");
    n = static_cast<std::uint64_t>(v.get<std::int64_t>());
  } else {
    refuse(where + key, "not an integer");
  }
  if (n > max) refuse(where + key, "larger than " + std::to_string(max));
  return n;
}

bool read_bool(const json& obj, const std::string& where, const char* key) {
  const json& v = member(obj, where, key);
  if (!v.is_boolean()) refuse(where + key, "not a boolean");
  return v.get<bool>();
}

std::string bytes_value(const json& v, const std::string& field, std::size_t max) {
  // Check the length before bytes_from_json() copies an array of any size.
  if ((v.is_string() && v.get_ref<const std::string&>().size() > max) || (v.is_array() && v.size() > max)) {
    refuse(field, "longer than " + std::to_string(max) + " bytes");
  }
  auto bytes = bytes_from_json(v);
  if (!bytes) refuse(field, "not a byte string");
  return std::move(*bytes);
}

std::string read_bytes(const json& obj, const std::string& where, const char* key,
                       std::size_t max = kMaxStringBytes) {
  return bytes_value(member(obj, where, key), where + key, max);
}

const json& read_array(const json& obj, const std::string& where, const char* key, std::size_t max) {
  const json& v = member(obj, where, key);
  if (!v.is_array()) refuse(where + key, "not an array");
  if (v.size() > max) refuse(where + key, "more than " + std::to_string(max) + " entries");
  return v;
}

bool all_lower_hex(const std::string& s) {
  for (const char c : s) {
    if (!is_lower_hex(c)) return false;
  }
  return true;
}

void check_package(const json& j, const std::string& field, int depth, std::size_t& items) {
  if (++items > kMaxPackageItems) refuse(field, "more than " + std::to_string(kMaxPackageItems) + " values");
  if (j.is_string()) {
    if (j.get_ref<const std::string&>().size() > kMaxStringBytes) refuse(field, "string too long");
    if (!is_valid_utf8(j.get_ref<const std::string&>())) refuse(field, "not UTF-8");
    return;
  }
  if (!j.is_structured()) return;  // number, boolean, null
  if (depth >= kMaxPackageDepth) refuse(field, "nested deeper than " + std::to_string(kMaxPackageDepth));
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (j.is_object() && it.key().size() > kMaxStringBytes) refuse(field, "key too long");
    check_package(*it, field, depth + 1, items);
  }
}

Frame read_frame(const json& j, const std::string& where) {
  object_at(j, where);
  const std::string at = where + ".";
  Frame f;
  f.pc = read_u64(j, at, "pc");
  f.module = read_bytes(j, at, "module");
  f.module_offset = read_u64(j, at, "module_offset");
  f.function = read_bytes(j, at, "function");
  f.function_offset = read_u64(j, at, "function_offset");
  f.file = read_bytes(j, at, "file");
  f.line = static_cast<std::uint32_t>(read_u64(j, at, "line", std::numeric_limits<std::uint32_t>::max()));
  return f;
}

Thread read_thread(const json& j, const std::string& where) {
  object_at(j, where);
  const std::string at = where + ".";
  Thread t;
  t.tid = static_cast<std::int64_t>(read_u64(j, at, "tid", std::numeric_limits<std::int32_t>::max()));
  t.name = read_bytes(j, at, "name");
  t.crashed = read_bool(j, at, "crashed");
  t.frames_omitted = static_cast<std::size_t>(read_u64(j, at, "frames_omitted", kMaxCount));
  t.error = read_bytes(j, at, "error");
  const json& frames = read_array(j, at, "frames", kMaxFramesPerThread);
  t.frames.reserve(frames.size());
  for (std::size_t i = 0; i < frames.size(); ++i) {
    t.frames.push_back(read_frame(frames[i], at + "frames[" + std::to_string(i) + "]"));
  }
  return t;
}

Module read_module(const json& j, const std::string& where) {
  object_at(j, where);
  const std::string at = where + ".";
  Module m;
  m.path = read_bytes(j, at, "path");
  m.build_id = read_bytes(j, at, "build_id", kMaxBuildIdHex);
  if (!all_lower_hex(m.build_id) || m.build_id.size() % 2 != 0) refuse(at + "build_id", "not lower-case hex bytes");
  m.start = read_u64(j, at, "start");
  m.end = read_u64(j, at, "end");
  if (m.end < m.start) refuse(at + "end", "below start");
  m.elf = read_bytes(j, at, "elf");
  m.debug = read_bytes(j, at, "debug");
  const json& package = member(j, at, "package");
  if (!package.is_null()) {
    if (!package.is_object()) refuse(at + "package", "neither an object nor null");
    std::size_t items = 0;
    check_package(package, at + "package", 0, items);
    m.package = package;
  }
  return m;
}

}  // namespace

CrashReport unavailable(std::string reason) {
  CrashReport r;
  r.state = "unavailable";
  r.reason = cut_utf8(std::move(reason), kMaxStringBytes);
  return r;
}

nlohmann::json to_json(const CrashReport& report) {
  auto modules = json::array();
  for (const auto& m : report.modules) modules.push_back(module_json(m));
  auto threads = json::array();
  for (const auto& t : report.threads) threads.push_back(thread_json(t));
  auto warnings = json::array();
  for (const auto& w : report.warnings) warnings.push_back(bytes_to_json(w));
  return json{{"version", kReportVersion},
              {"state", bytes_to_json(report.state)},
              {"reason", bytes_to_json(report.reason)},
              {"signature", bytes_to_json(report.signature)},
              {"signature_text", bytes_to_json(report.signature_text)},
              {"threads_total", report.threads_total},
              {"threads_omitted", report.threads_omitted},
              {"modules_omitted", report.modules_omitted},
              {"text_truncated", report.text_truncated},
              {"warnings", std::move(warnings)},
              {"elapsed_us", report.elapsed_us},
              {"maxrss_kib", report.maxrss_kib},
              {"debuginfod_used", report.debuginfod_used},
              {"modules", std::move(modules)},
              {"threads", std::move(threads)}};
}

CrashReport report_from_json(const nlohmann::json& j) {
  object_at(j, "report");
  const std::string at;  // top-level fields are named bare
  const json& version = member(j, at, "version");
  if (!version.is_number_integer() || version.get<std::int64_t>() != kReportVersion) {
    refuse("version", "not " + std::to_string(kReportVersion));
  }
  CrashReport r;
  r.state = read_bytes(j, at, "state", 16);
  if (r.state != "ok" && r.state != "unavailable") refuse("state", "neither \"ok\" nor \"unavailable\"");
  r.reason = read_bytes(j, at, "reason");
  if (r.state == "unavailable" && r.reason.empty()) refuse("reason", "empty for an unavailable report");
  if (r.state == "ok" && !r.reason.empty()) refuse("reason", "set for an ok report");
  r.signature = read_bytes(j, at, "signature", 32);
  if (!r.signature.empty() && (r.signature.size() != 32 || !all_lower_hex(r.signature))) {
    refuse("signature", "neither 32 lower-case hex characters nor empty");
  }
  r.signature_text = read_bytes(j, at, "signature_text", kMaxSignatureTextBytes);
  if (r.signature.empty() != r.signature_text.empty()) refuse("signature_text", "does not match signature");
  r.threads_total = static_cast<std::size_t>(read_u64(j, at, "threads_total", kMaxCount));
  r.threads_omitted = static_cast<std::size_t>(read_u64(j, at, "threads_omitted", kMaxCount));
  r.modules_omitted = static_cast<std::size_t>(read_u64(j, at, "modules_omitted", kMaxCount));
  r.text_truncated = read_bool(j, at, "text_truncated");
  const json& warnings = read_array(j, at, "warnings", kMaxWarnings);
  for (std::size_t i = 0; i < warnings.size(); ++i) {
    r.warnings.push_back(bytes_value(warnings[i], "warnings[" + std::to_string(i) + "]", kMaxStringBytes));
  }
  r.elapsed_us = static_cast<std::int64_t>(read_u64(j, at, "elapsed_us", kMaxCount));
  r.maxrss_kib = static_cast<std::int64_t>(read_u64(j, at, "maxrss_kib", kMaxCount));
  r.debuginfod_used = read_bool(j, at, "debuginfod_used");
  const json& modules = read_array(j, at, "modules", kMaxModules);
  r.modules.reserve(modules.size());
  for (std::size_t i = 0; i < modules.size(); ++i) {
    r.modules.push_back(read_module(modules[i], "modules[" + std::to_string(i) + "]"));
  }
  const json& threads = read_array(j, at, "threads", kMaxThreads);
  r.threads.reserve(threads.size());
  for (std::size_t i = 0; i < threads.size(); ++i) {
    r.threads.push_back(read_thread(threads[i], "threads[" + std::to_string(i) + "]"));
    if (r.threads.back().crashed && i != 0) refuse("threads[" + std::to_string(i) + "].crashed", "not the first thread");
  }
  if (r.state == "ok" && r.threads.empty()) refuse("threads", "empty for an ok report");
  if (r.state == "unavailable" && !r.threads.empty()) refuse("threads", "set for an unavailable report");
  if (r.threads.size() + r.threads_omitted > r.threads_total) {
    refuse("threads_total", "fewer than the threads shown and omitted");
  }
  return r;
}

std::size_t fit_report(CrashReport& report, std::size_t max_bytes) {
  // The compact dump of an array is its elements' dumps joined by commas, so the size is summed
  // per element, each frame measured once: dumping the whole report after each drop would be
  // quadratic for 2000 threads x 64 frames. A dump of what is left checks the result, and another
  // round covers counters that grew a digit (kSlack).
  constexpr std::size_t kSlack = 64;
  const auto joined = [](std::size_t n) { return n > 0 ? n - 1 : 0; };  // commas between n elements
  for (;;) {
    std::vector<std::vector<std::size_t>> frame_sizes(report.threads.size());
    std::size_t size = 0;
    {
      CrashReport shell;
      shell.state = report.state, shell.reason = report.reason;
      shell.signature = report.signature, shell.signature_text = report.signature_text;
      shell.threads_total = report.threads_total, shell.threads_omitted = report.threads_omitted;
      shell.modules_omitted = report.modules_omitted, shell.text_truncated = report.text_truncated;
      shell.elapsed_us = report.elapsed_us, shell.maxrss_kib = report.maxrss_kib;
      shell.debuginfod_used = report.debuginfod_used;
      size = dumped_size(to_json(shell));
    }
    for (const auto& w : report.warnings) size += dumped_size(bytes_to_json(w));
    for (const auto& m : report.modules) size += dumped_size(module_json(m));
    size += joined(report.warnings.size()) + joined(report.modules.size()) + joined(report.threads.size());
    for (std::size_t i = 0; i < report.threads.size(); ++i) {
      const Thread& t = report.threads[i];
      Thread bare;
      bare.tid = t.tid, bare.name = t.name, bare.crashed = t.crashed;
      bare.frames_omitted = t.frames_omitted, bare.error = t.error;
      size += dumped_size(thread_json(bare)) + joined(t.frames.size());
      for (const auto& f : t.frames) size += frame_sizes[i].emplace_back(dumped_size(frame_json(f)));
    }
    if (size <= max_bytes) return dumped_size(to_json(report));

    std::size_t excess = size - max_bytes + kSlack;
    const auto shed = [&excess](std::size_t bytes) { excess -= std::min(excess, bytes + 1); };
    std::size_t keep = 0;  // the crashing thread, or the first one when none is marked
    for (std::size_t i = 0; i < report.threads.size(); ++i) {
      if (report.threads[i].crashed) {
        keep = i;
        break;
      }
    }
    bool dropped = false;
    const auto drop_frames = [&](std::size_t i) {
      auto& t = report.threads[i];
      while (excess > 0 && !t.frames.empty()) {
        shed(frame_sizes[i][t.frames.size() - 1]);
        t.frames.pop_back();
        ++t.frames_omitted;
        dropped = true;
      }
    };
    // 1. Frames of the other threads, outermost first, from the last thread backwards.
    for (std::size_t i = report.threads.size(); i-- > 0 && excess > 0;) {
      if (i != keep) drop_frames(i);
    }
    // 2. The other threads themselves, from the last (frame_sizes is not used after this).
    for (std::size_t i = report.threads.size(); i-- > 0 && excess > 0;) {
      if (i == keep) continue;
      shed(dumped_size(thread_json(report.threads[i])));
      report.threads.erase(report.threads.begin() + static_cast<std::ptrdiff_t>(i));
      frame_sizes.erase(frame_sizes.begin() + static_cast<std::ptrdiff_t>(i));
      if (i < keep) --keep;
      ++report.threads_omitted;
      dropped = true;
    }
    // 3. The crashing thread's outermost frames, then modules, then warnings.
    if (keep < report.threads.size()) drop_frames(keep);
    while (excess > 0 && !report.modules.empty()) {
      shed(dumped_size(module_json(report.modules.back())));
      report.modules.pop_back();
      ++report.modules_omitted;
      dropped = true;
    }
    while (excess > 0 && !report.warnings.empty()) {
      shed(dumped_size(bytes_to_json(report.warnings.back())));
      report.warnings.pop_back();
      dropped = true;
    }
    if (!dropped) return size;  // nothing left to drop: max_bytes is below an empty report
    report.text_truncated = true;
  }
}

}  // namespace coredumpd::analysis
