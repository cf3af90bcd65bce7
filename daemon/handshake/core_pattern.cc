#include "daemon/handshake/core_pattern.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <system_error>

#include <spdlog/spdlog.h>

#include "util/unique_fd.h"

namespace coredumpd {

namespace {
constexpr const char* kCorePattern = "/proc/sys/kernel/core_pattern";
// The kernel's own default, put back when nothing was saved (a store wiped by a reboot, or an
// upgrade from a version that set the pattern through sysctl.d and saved nothing).
constexpr const char* kKernelDefaultPattern = "core";

KernelFacts& facts_storage() {
  static KernelFacts facts;
  return facts;
}
}  // namespace

void set_default_kernel_facts(KernelFacts facts) { facts_storage() = std::move(facts); }
const KernelFacts& default_kernel_facts() { return facts_storage(); }

std::optional<std::string> socket_path_problem(const std::string& path) {
  if (path.empty() || path.front() != '/') return "the kernel needs an absolute path after \"@@\"";
  if (path.size() > kMaxSocketPathBytes)
    return std::to_string(path.size()) + " bytes, over the " + std::to_string(kMaxSocketPathBytes) +
           " bytes sockaddr_un's sun_path holds";
  // The whole pattern's limit follows from sun_path's: "@@" + 107 bytes fits core_pattern.
  static_assert(2 + kMaxSocketPathBytes <= kMaxCorePatternBytes);
  if (const auto ws = path.find_first_of(" \t\n"); ws != std::string::npos)
    return "it has a " + std::string(path[ws] == ' ' ? "space" : "blank") + " at byte " + std::to_string(ws) +
           ", where the kernel ends the pattern";
  // Each existing prefix, from the root down: the kernel resolves the path with no symlink anywhere.
  for (std::size_t end = 1; end <= path.size();) {
    std::size_t next = path.find('/', end);
    if (next == std::string::npos) next = path.size();
    const std::string component = path.substr(end, next - end);
    if (component == "..") return "it has a \"..\" component, which the kernel refuses";
    const std::string prefix = path.substr(0, next);
    struct stat st{};
    if (!component.empty() && component != ".") {
      if (::lstat(prefix.c_str(), &st) < 0) break;  // not there yet: created at start, not a symlink
      if (S_ISLNK(st.st_mode)) {
        char target[4096];
        const ssize_t n = ::readlink(prefix.c_str(), target, sizeof(target) - 1);
        return prefix + " is a symlink" + (n > 0 ? " (to " + std::string(target, static_cast<std::size_t>(n)) + ")" : "") +
               ", and the kernel follows no symlink in the socket path";
      }
    }
    end = next + 1;
  }
  return std::nullopt;
}

void require_usable_socket_path(const std::string& socket_path) {
  if (const auto why = socket_path_problem(socket_path))
    throw std::invalid_argument("socket path " + socket_path + " cannot be used by the kernel: " + *why);
}

std::string read_core_pattern() {
  UniqueFd fd(::open(kCorePattern, O_RDONLY | O_CLOEXEC));
  if (!fd) throw std::system_error(errno, std::generic_category(), kCorePattern);
  char buf[512];
  const ssize_t n = ::read(fd.get(), buf, sizeof(buf));
  if (n < 0) throw std::system_error(errno, std::generic_category(), kCorePattern);
  std::string s(buf, static_cast<std::size_t>(n));
  while (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

void write_core_pattern(const std::string& pattern) {
  UniqueFd fd(::open(kCorePattern, O_WRONLY | O_CLOEXEC));
  if (!fd) throw std::system_error(errno, std::generic_category(), kCorePattern);
  // An empty write changes nothing; a lone newline is how an empty pattern is written (sysctl does so).
  const std::string text = pattern.empty() ? "\n" : pattern;
  if (::write(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size()))
    throw std::system_error(errno, std::generic_category(), std::string("writing \"") + pattern + "\" to " + kCorePattern);
}

namespace {

std::optional<std::string> read_saved(const std::string& saved_file) {
  std::ifstream in(saved_file);
  if (!in) return std::nullopt;
  std::string value;
  std::getline(in, value);
  return value;
}

// Written whole or not at all (a crash mid-write must not leave half a pattern to restore).
void write_saved(const std::string& saved_file, const std::string& value) {
  const std::string tmp = saved_file + ".tmp";
  {
    UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (!fd) throw std::system_error(errno, std::generic_category(), "creating " + tmp);
    const std::string line = value + "\n";
    if (::write(fd.get(), line.data(), line.size()) != static_cast<ssize_t>(line.size()) || ::fsync(fd.get()) != 0)
      throw std::system_error(errno, std::generic_category(), "writing " + tmp);
  }
  if (::rename(tmp.c_str(), saved_file.c_str()) != 0)
    throw std::system_error(errno, std::generic_category(), "renaming " + tmp + " to " + saved_file);
}

}  // namespace

PatternOutcome install_core_pattern(const std::string& socket_path, const std::string& saved_file,
                                    const KernelFacts& facts) {
  require_usable_socket_path(socket_path);
  const std::string ours = "@@" + socket_path;
  if (const auto why = socket_mode_unsupported(facts)) return {false, "core_pattern left unchanged: " + *why};
  struct stat st{};
  if (::stat(socket_path.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode))
    return {false, "core_pattern left unchanged: no socket at " + socket_path + " (is coredumpd.socket listening?)"};
  std::string previous;
  try {
    previous = read_core_pattern();
  } catch (const std::exception& e) {
    return {false, std::string("core_pattern left unchanged: ") + e.what()};
  }
  if (previous == ours) return {false, "core_pattern is already " + ours};
  try {
    write_saved(saved_file, previous);
  } catch (const std::exception& e) {
    // Without the saved value a later restore could only guess; better not to take the pattern.
    return {false, std::string("core_pattern left unchanged: cannot save the current one: ") + e.what()};
  }
  try {
    write_core_pattern(ours);
  } catch (const std::exception& e) {
    ::unlink(saved_file.c_str());
    return {false, std::string("core_pattern left unchanged: the kernel refused it: ") + e.what()};
  }
  return {true, "core_pattern set to " + ours + " (was \"" + previous + "\", saved in " + saved_file + ")"};
}

PatternOutcome restore_core_pattern(const std::string& socket_path, const std::string& saved_file) {
  const std::string ours = "@@" + socket_path;
  try {
    const std::string current = read_core_pattern();
    const auto saved = read_saved(saved_file);
    if (current != ours) {
      ::unlink(saved_file.c_str());  // stale: whoever replaced ours owns the pattern now
      return {false, "core_pattern left alone: it is \"" + current + "\", not ours (" + ours + ")"};
    }
    const std::string previous = saved ? *saved : kKernelDefaultPattern;
    write_core_pattern(previous);
    ::unlink(saved_file.c_str());
    return {true, "core_pattern restored to \"" + previous + "\"" +
                      (saved ? "" : std::string(" (the kernel's default: nothing saved in ") + saved_file + ")")};
  } catch (const std::exception& e) {
    return {false, std::string("core_pattern not restored: ") + e.what()};
  }
}

CorePatternGuard::CorePatternGuard(const std::string& socket_path)
    : ours_("@@" + socket_path) {
  require_usable_socket_path(socket_path);
  if (const auto why = socket_mode_unsupported()) {
    spdlog::warn("--install-pattern: core_pattern left unchanged: {}", *why);
    return;
  }
  previous_ = read_core_pattern();
  write_core_pattern(ours_);
  active_ = true;
  spdlog::info("core_pattern set to {} (was {})", ours_, previous_);
}

CorePatternGuard::~CorePatternGuard() { restore(); }

void CorePatternGuard::restore() {
  if (!active_) return;
  active_ = false;
  try {
    if (read_core_pattern() != ours_) {
      spdlog::warn("core_pattern was changed by someone else; not restoring {}", previous_);
      return;
    }
    write_core_pattern(previous_);
    spdlog::info("core_pattern restored to {}", previous_);
  } catch (const std::exception& e) {
    spdlog::error("restoring core_pattern failed: {}", e.what());
  }
}

}  // namespace coredumpd
