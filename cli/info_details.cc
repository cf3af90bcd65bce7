#include "cli/info_details.h"

#include <sys/wait.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <sstream>

#include "cli/format.h"
#include "store/dump_record.h"
#include "store/record_extras.h"
#include "util/text.h"

namespace coredumpd::cli {

namespace {

using json = nlohmann::json;

/// The string at extra[key] (bytes_to_json encoding), escaped; "" if absent or not a string.
std::string text_of(const json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end()) return "";
  const auto bytes = bytes_from_json(*it);
  return bytes ? escape_for_display(*bytes) : "";
}

std::uint64_t number_of(const json& j, const char* key, std::uint64_t fallback = 0) {
  const auto it = j.find(key);
  return it != j.end() && it->is_number_unsigned() ? it->get<std::uint64_t>()
       : it != j.end() && it->is_number_integer() && it->get<std::int64_t>() >= 0
           ? static_cast<std::uint64_t>(it->get<std::int64_t>())
           : fallback;
}

std::string ms(std::uint64_t us) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f ms", static_cast<double>(us) / 1000.0);
  return buf;
}

std::string hex(std::uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "%#" PRIx64, v);
  return buf;
}

/// A wait status (extras::kTaskExitStatus) in words: "task killed by SIGKILL", "task exited with 3".
std::string task_exit_text(int status) {
  if (WIFEXITED(status)) return "task exited with status " + std::to_string(WEXITSTATUS(status));
  return "task killed by " + signal_name(WTERMSIG(status)) + (WCOREDUMP(status) ? " (core dumped)" : "");
}

void negotiation(const json& extra, std::vector<InfoField>& out) {
  const auto it = extra.find(extras::kNegotiation);
  if (it == extra.end() || !it->is_object()) return;
  const json& n = *it;
  std::string v = "offered " + hex(number_of(n, "offered")) + ", acked " + hex(number_of(n, "acked")) +
                  ", mode " + text_of(n, "mode");
  for (const char* flag : {"wait", "close_files", "records", "sparse", "memory_types"})
    v += std::string("\n") + flag + ": " + text_of(n, flag);
  out.push_back({"Negotiation", v});
}

void timing(const json& extra, std::vector<InfoField>& out) {
  std::string v;
  if (extra.contains(extras::kHandshakeUs)) v = "handshake " + ms(number_of(extra, extras::kHandshakeUs)) + " (accept to ack)";
  std::string after;
  if (extra.contains(extras::kDrainStartUs)) after += "first read " + ms(number_of(extra, extras::kDrainStartUs));
  if (extra.contains(extras::kStreamUs))
    after += std::string(after.empty() ? "" : ", ") + "stream ended " + ms(number_of(extra, extras::kStreamUs));
  if (extra.contains(extras::kReleasedUs))
    after += std::string(after.empty() ? "" : ", ") + "task released " + ms(number_of(extra, extras::kReleasedUs));
  if (extra.contains(extras::kStoredUs))
    after += std::string(after.empty() ? "" : ", ") + "stored " + ms(number_of(extra, extras::kStoredUs));
  if (!after.empty()) v += std::string(v.empty() ? "" : "\n") + after + " after the ack";
  if (!v.empty()) out.push_back({"Timing", v});
}

void open_files(const json& proc, std::size_t max_fds, std::vector<InfoField>& out) {
  const auto it = proc.find("fds");
  if (it == proc.end() || !it->is_array() || it->empty()) return;
  std::string v;
  std::size_t shown = 0;
  for (const json& fd : *it) {
    if (!fd.is_object()) continue;
    if (shown == max_fds) {
      v += "\n... " + std::to_string(it->size() - shown) + " more (dumpctl info --json lists all)";
      break;
    }
    if (shown++) v += '\n';
    v += std::to_string(number_of(fd, "fd")) + ": " + text_of(fd, "target");
    const std::string flags = text_of(fd, "flags");
    v += " (pos " + std::to_string(number_of(fd, "pos")) + (flags.empty() ? "" : ", flags " + flags) + ")";
    const auto locks = fd.find("locks");
    if (locks != fd.end() && locks->is_array())
      for (const json& l : *locks)
        if (l.is_string()) v += "\n    lock " + escape_for_display(l.get<std::string>());
  }
  out.push_back({"Open Files", v});
}

// proc.lock_release (daemon/proc/lock_release.h): one line per lock with what CLOSE_FILES does to
// it, "POSIX WRITE /path — released by CLOSE_FILES" or "— kept: <why>"; then, unless the
// negotiation granted CLOSE_FILES, that the locks were held until the task exited.
std::string lock_release_text(const json& release, const json& extra) {
  std::string v;
  for (const json& l : release) {
    if (!l.is_object()) continue;
    const std::string verdict = text_of(l, "close_files"), why = text_of(l, "why");
    v += std::string(v.empty() ? "" : "\n") + text_of(l, "type") + " " + text_of(l, "access") + " " + text_of(l, "target") +
         " \u2014 " + (verdict == "released" ? "released by CLOSE_FILES" : verdict + (why.empty() ? "" : ": " + why));
  }
  const auto n = extra.find(extras::kNegotiation);
  const std::string granted = n != extra.end() && n->is_object() ? text_of(*n, "close_files") : "";
  if (!v.empty() && granted != "granted")
    v += "\n(CLOSE_FILES " + (granted.empty() ? std::string("not negotiated") : granted) +
         ": every lock was held until the task exited)";
  return v;
}

void locks(const json& proc, const json& extra, std::vector<InfoField>& out) {
  if (const auto r = proc.find("lock_release"); r != proc.end() && r->is_array() && !r->empty()) {
    out.push_back({"Locks", lock_release_text(*r, extra)});
    return;
  }
  const auto it = proc.find("locks");
  if (it == proc.end() || !it->is_array()) return;
  std::string v;
  for (const json& l : *it)
    if (l.is_string()) v += (v.empty() ? "" : "\n") + escape_for_display(l.get<std::string>());
  out.push_back({"Locks", v.empty() ? "none held" : v});
}

// The post-dump smaps_rollup: the few lines that say how big the process was.
void memory(const json& proc, std::vector<InfoField>& out) {
  const auto it = proc.find("smaps_rollup");
  if (it == proc.end() || !it->is_string()) return;
  std::istringstream in(it->get<std::string>());
  std::string line, v;
  while (std::getline(in, line))
    for (const char* k : {"Rss:", "Pss:", "Anonymous:", "Swap:"})
      if (line.rfind(k, 0) == 0) {
        std::string value = line.substr(std::string(k).size());
        value.erase(0, value.find_first_not_of(' '));
        v += std::string(v.empty() ? "" : ", ") + std::string(k, std::string(k).size() - 1) + " " + escape_for_display(value);
      }
  if (!v.empty()) out.push_back({"Memory", v});
}

void errors(const json& extra, const char* key, const char* label, std::vector<InfoField>& out) {
  const auto it = extra.find(key);
  if (it == extra.end() || !it->is_object() || it->empty()) return;
  std::string v;
  for (const auto& [name, why] : it->items())
    v += (v.empty() ? "" : "\n") + escape_for_display(name) + ": " +
         (why.is_string() ? escape_for_display(why.get<std::string>()) : escape_for_display(why.dump()));
  out.push_back({label, v});
}

// Which metadata the handshake missed (extra.metadata_incomplete) and which fields were taken from
// the core's notes instead (extra.from_core): an operator must know that comm or the command line
// came from a 15- or 79-byte note, not from /proc.
void provenance(const json& extra, std::vector<InfoField>& out) {
  const auto names = [](const json& list) {
    std::string v;
    if (list.is_array())
      for (const auto& n : list)
        if (n.is_string()) v += (v.empty() ? "" : ", ") + escape_for_display(n.get<std::string>());
    return v;
  };
  const auto inc = extra.find(extras::kMetadataIncomplete);
  if (inc != extra.end() && inc->is_object())
    out.push_back({"Metadata", "incomplete (" + text_of(*inc, "reason") + "); missed: " + names(inc->value("missed", json()))});
  const auto core = extra.find(extras::kFromCore);
  if (core != extra.end() && core->is_array() && !core->empty()) {
    std::string v = names(*core) + " (from the core's notes";
    if (std::find(core->begin(), core->end(), "argv") != core->end())
      v += "; the command line is NT_PRPSINFO's first 79 bytes, split at spaces";
    const auto maps = extra.find(extras::kCoreMappedFiles);
    if (maps != extra.end() && maps->is_array())
      v += "; " + std::to_string(maps->size()) + " NT_FILE mappings, dumpctl info --json shows them";
    out.push_back({"From Core", v + ")"});
  }
}

}  // namespace

void print_info_field(std::ostream& out, const std::string& label, const std::string& value,
                      std::size_t label_width) {
  std::string line(label_width > label.size() ? label_width - label.size() : 0, ' ');
  line += label + ": ";
  std::size_t start = 0;
  for (;;) {
    const std::size_t nl = value.find('\n', start);
    line.append(value, start, nl == std::string::npos ? std::string::npos : nl - start);
    out << line << '\n';
    if (nl == std::string::npos) break;
    start = nl + 1;
    line.assign(label_width + 2, ' ');
  }
}

std::vector<InfoField> info_details(const json& extra, std::size_t max_fds) {
  std::vector<InfoField> out;
  if (!extra.is_object()) return out;
  negotiation(extra, out);
  timing(extra, out);
  if (extra.contains(extras::kThreads)) out.push_back({"Threads", std::to_string(number_of(extra, extras::kThreads))});
  if (extra.contains(extras::kSiCode) || extra.contains(extras::kFaultAddress) || extra.contains(extras::kSiCodeUnavailable)) {
    const auto code = extra.find(extras::kSiCode);
    const auto why = extra.find(extras::kSiCodeUnavailable);
    std::string v = code != extra.end() && code->is_number_integer() ? "si_code " + std::to_string(code->get<std::int64_t>())
                    : why != extra.end() && why->is_string() ? "si_code not known: " + escape_for_display(why->get<std::string>())
                                                             : "";
    if (extra.contains(extras::kFaultAddress))
      v += std::string(v.empty() ? "" : ", ") + "fault address " + hex(number_of(extra, extras::kFaultAddress));
    if (!v.empty()) out.push_back({"Signal Info", v});
  }
  if (const auto s = short_core_from_extra(extra)) {
    std::string v = std::to_string(s->received) + " of " + std::to_string(s->expected) +
                    " bytes arrived (the end the program headers promise)";
    const auto st = extra.find(extras::kTaskExitStatus);
    if (st != extra.end() && st->is_number_integer()) v += "\n" + task_exit_text(st->get<int>());
    out.push_back({"Short Core", v});
  }
  const auto proc = extra.find(extras::kProc);
  if (proc != extra.end() && proc->is_object()) {
    open_files(*proc, max_fds, out);
    locks(*proc, extra, out);
    memory(*proc, out);
  }
  provenance(extra, out);
  errors(extra, extras::kCollectErrors, "Collector Errors", out);
  errors(extra, extras::kPostDumpErrors, "Post-dump Errors", out);
  const auto env = extra.find(extras::kEnviron);
  if (env != extra.end() && env->is_array())
    out.push_back({"Environment", std::to_string(env->size()) + " variables (dumpctl info --json shows them)"});
  const auto vac = extra.find(extras::kVacuumed);
  if (vac != extra.end() && vac->is_object())
    out.push_back({"Vacuumed", text_of(*vac, "reason") + " (core " + text_of(*vac, "path") + " deleted)"});
  return out;
}

}  // namespace coredumpd::cli
