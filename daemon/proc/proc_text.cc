// The /proc text parsers of daemon/proc/collect.h: pure functions of the text a crashing (so
// untrusted) process's /proc files hold; fuzzed by tests/fuzz/fuzz_proc_text.cc.
#include <algorithm>
#include <cstdlib>
#include <limits>
#include <sstream>

#include "daemon/proc/collect.h"

namespace coredumpd {

std::vector<std::string> split_cmdline(const std::string& raw) {
  std::vector<std::string> argv;
  if (raw.empty()) return argv;
  std::string_view rest(raw);
  if (rest.back() == '\0') rest.remove_suffix(1);
  while (true) {
    const auto nul = rest.find('\0');
    argv.emplace_back(rest.substr(0, nul));
    if (nul == std::string_view::npos) break;
    rest.remove_prefix(nul + 1);
  }
  return argv;
}

std::optional<ThreadIds> parse_nspid(const std::string& status) {
  const auto pos = status.find("\nNSpid:");
  if (pos == std::string::npos) return std::nullopt;
  std::istringstream line(status.substr(pos + 7, status.find('\n', pos + 1) - pos - 7));
  std::int64_t id = 0;
  ThreadIds ids;
  bool any = false;
  while (line >> id) {
    if (!any) ids.host_tid = id;
    ids.ns_tid = id;
    any = true;
  }
  if (!any) return std::nullopt;
  return ids;
}

std::optional<std::uint64_t> parse_rlimit_core(const std::string& limits) {
  const auto pos = limits.find("Max core file size");
  if (pos == std::string::npos) return std::nullopt;
  std::istringstream line(limits.substr(pos + 18, limits.find('\n', pos) - pos - 18));
  std::string soft;
  if (!(line >> soft)) return std::nullopt;
  if (soft == "unlimited") return std::numeric_limits<std::uint64_t>::max();
  try {
    return std::stoull(soft);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::vector<std::string> locks_of_pid(const std::string& proc_locks, std::int64_t pid) {
  // "1: POSIX  ADVISORY  WRITE 1234 08:01:5678 0 EOF"; a blocked waiter has "->" after the number.
  std::vector<std::string> out;
  std::istringstream in(proc_locks);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream tok(line);
    std::string id, type, mode, access, owner;
    tok >> id >> type;
    if (type == "->") tok >> type;
    tok >> mode >> access >> owner;
    if (!owner.empty() && owner == std::to_string(pid)) out.push_back(line);
  }
  return out;
}

std::uint64_t estimate_core_bytes(const std::string& maps) {
  // "start-end perms offset dev inode path": anonymous mappings are dumped whole by the default
  // filter (0x33); file mappings contribute at most their first page (ELF headers).
  std::uint64_t total = 0;
  std::istringstream in(maps);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream tok(line);
    std::string range, perms, offset, dev, path;
    std::uint64_t inode = 0;
    tok >> range >> perms >> offset >> dev >> inode;
    std::getline(tok >> std::ws, path);
    const auto dash = range.find('-');
    if (dash == std::string::npos) continue;
    const auto start = std::strtoull(range.c_str(), nullptr, 16);
    const auto end = std::strtoull(range.c_str() + dash + 1, nullptr, 16);
    if (end <= start || path == "[vsyscall]") continue;
    total += inode == 0 ? end - start : std::min<std::uint64_t>(end - start, 4096);
  }
  return total;
}

}  // namespace coredumpd
