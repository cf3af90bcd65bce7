#include "tests/support/test_support.h"

#include "tests/support/core_pattern_state.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <string_view>
#include <thread>

namespace coredumpd::test {

namespace fs = std::filesystem;

TempDir::TempDir() {
  char tmpl[] = "/tmp/cdt-XXXXXX";
  if (!::mkdtemp(tmpl)) throw std::runtime_error("mkdtemp failed");
  path_ = tmpl;
}

TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

bool ExitStatus::signaled() const { return exited && WIFSIGNALED(raw); }
int ExitStatus::term_signal() const { return signaled() ? WTERMSIG(raw) : 0; }
bool ExitStatus::core_dumped() const { return signaled() && WCOREDUMP(raw); }
int ExitStatus::exit_code() const { return exited && WIFEXITED(raw) ? WEXITSTATUS(raw) : -1; }

pid_t spawn(const std::vector<std::string>& argv, const std::string& log_file) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    if (!log_file.empty()) {
      const int fd = ::open(log_file.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      if (fd >= 0) {
        ::dup2(fd, STDOUT_FILENO);
        ::dup2(fd, STDERR_FILENO);
        ::close(fd);
      }
    }
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  return pid;
}

namespace {

// Reap times by pid (reaped_at_us()); a pid the kernel reuses gets its latest.
std::mutex reaped_mutex;
std::map<pid_t, std::int64_t> reaped_us;

void note_reaped(pid_t pid, bool seen_running) {
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  const std::lock_guard lock(reaped_mutex);
  if (seen_running) reaped_us[pid] = std::chrono::duration_cast<std::chrono::microseconds>(now).count();
  else reaped_us.erase(pid);
}

}  // namespace

std::optional<std::int64_t> reaped_at_us(pid_t pid) {
  const std::lock_guard lock(reaped_mutex);
  const auto it = reaped_us.find(pid);
  if (it == reaped_us.end()) return std::nullopt;
  return it->second;
}

ExitStatus wait_for(pid_t pid, std::chrono::milliseconds timeout) {
  const auto until = std::chrono::steady_clock::now() + timeout;
  ExitStatus st;
  bool seen_running = false;  // then the reap time bounds the exit time (reaped_at_us())
  while (std::chrono::steady_clock::now() < until) {
    const pid_t r = ::waitpid(pid, &st.raw, WNOHANG);
    if (r == pid) {
      note_reaped(pid, seen_running);
      st.exited = true;
      return st;
    }
    if (r < 0 && errno != EINTR) return st;
    seen_running = seen_running || r == 0;
    std::this_thread::sleep_for(5ms);
  }
  ::kill(pid, SIGKILL);
  int ignored = 0;
  ::waitpid(pid, &ignored, 0);
  return st;
}

std::pair<ExitStatus, std::string> run_capture(const std::vector<std::string>& argv,
                                               std::chrono::milliseconds timeout) {
  char tmpl[] = "/tmp/cdt-out-XXXXXX";
  const int fd = ::mkstemp(tmpl);
  if (fd < 0) throw std::runtime_error("mkstemp failed");
  ::close(fd);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int out = ::open(tmpl, O_WRONLY | O_TRUNC);
    ::dup2(out, STDOUT_FILENO);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  const auto st = wait_for(pid, timeout);
  auto text = read_file(tmpl).value_or("");
  ::unlink(tmpl);
  return {st, text};
}

bool wait_until(const std::function<bool()>& cond, std::chrono::milliseconds timeout) {
  const auto until = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < until) {
    if (cond()) return true;
    std::this_thread::sleep_for(20ms);
  }
  return cond();
}

std::optional<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

namespace {

// True if /proc/net/unix lists a listening (__SO_ACCEPTCON, flags 00010000) socket bound to `path`.
bool is_listening(const std::string& path) {
  std::istringstream in(read_file("/proc/net/unix").value_or(""));
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string num, refs, proto, flags, type, st, inode, bound;
    if ((fields >> num >> refs >> proto >> flags >> type >> st >> inode >> bound) && bound == path && flags == "00010000")
      return true;
  }
  return false;
}

}  // namespace

Daemon::Daemon(const std::string& binary, const std::string& socket, const std::string& store,
               const std::string& log, const std::vector<std::string>& extra_args,
               const std::vector<std::string>& launcher)
    : log_(log) {
  std::vector<std::string> argv = launcher;
  argv.insert(argv.end(), {binary, "--socket", socket, "--store", store, "--log-level", "debug"});
  // The query service only where a test asks for it: a default daemon would otherwise serve the
  // host's /run/coredumpd-query.socket, and parallel tests would contend for it.
  if (std::find(extra_args.begin(), extra_args.end(), "--query-socket") == extra_args.end())
    argv.insert(argv.end(), {"--query-socket", ""});
  argv.insert(argv.end(), extra_args.begin(), extra_args.end());
  pid_ = spawn(argv, log);
  const bool up = wait_until(
      [&] {
        struct stat st{};
        int status = 0;
        if (::waitpid(pid_, &status, WNOHANG) == pid_) {
          pid_ = -1;
          return true;  // died: reported below
        }
        // bind() creates the file before listen(): wait for the listening state, or a quick
        // client gets ECONNREFUSED.
        return ::stat(socket.c_str(), &st) == 0 && S_ISSOCK(st.st_mode) && is_listening(socket);
      },
      10s);
  if (pid_ < 0 || !up) {
    if (pid_ > 0) wait_for(pid_, 0ms);
    pid_ = -1;
    throw std::runtime_error("coredumpd did not come up; its log:\n" + this->log());
  }
}

Daemon::~Daemon() {
  if (pid_ > 0) stop(10s);
}

ExitStatus Daemon::stop(std::chrono::milliseconds timeout) {
  if (pid_ <= 0) return {};
  ::kill(pid_, SIGTERM);
  const auto st = wait_for(pid_, timeout);
  pid_ = -1;
  return st;
}

ExitStatus Daemon::kill_hard() {
  if (pid_ <= 0) return {};
  ::kill(pid_, SIGKILL);
  const auto st = wait_for(pid_, 10s);
  pid_ = -1;
  return st;
}

std::string Daemon::log() const { return read_file(log_).value_or(""); }

// ---- core_pattern lock ----

namespace {

constexpr const char* kLockPath = "/run/lock/coredumpd-core_pattern.lock";
constexpr const char* kPatternPath = "/proc/sys/kernel/core_pattern";
// Inside one ctest run RESOURCE_LOCK core_pattern serialises the tests; the flock guards against
// other processes (another build tree's ctest, quickstart.sh), whose longest legitimate hold is one
// real-kernel test: wait as long as the longest real-kernel TIMEOUT (nspawn_forward_test's).
constexpr auto kLockWait = std::chrono::minutes(20);

// The value to put back if the test process dies by a signal, kept in static storage for the
// async-signal-safe handler.
char g_saved_pattern[256];
std::size_t g_saved_len = 0;
struct sigaction g_old_actions[32];
constexpr int kRestoreSignals[] = {SIGINT, SIGTERM, SIGABRT, SIGSEGV, SIGBUS};

void restore_pattern_raw() {
  const int fd = ::open(kPatternPath, O_WRONLY);
  if (fd < 0) return;
  (void)!::write(fd, g_saved_pattern, g_saved_len);
  ::close(fd);
}

void on_fatal_signal(int signo) {
  restore_pattern_raw();
  clear_core_pattern_state();
  ::sigaction(signo, &g_old_actions[signo], nullptr);
  ::raise(signo);
}

void write_pattern(const std::string& pattern) {
  const int fd = ::open(kPatternPath, O_WRONLY);
  if (fd < 0) throw std::runtime_error(std::string("open core_pattern: ") + std::strerror(errno));
  const auto n = ::write(fd, pattern.data(), pattern.size());
  const int err = errno;
  ::close(fd);
  if (n != static_cast<ssize_t>(pattern.size()))
    throw std::runtime_error("write core_pattern \"" + pattern + "\": " + std::strerror(err));
}

}  // namespace

CorePatternLock::CorePatternLock(const std::string& pattern) {
  ::mkdir("/run/lock", 01777);
  lock_fd_ = ::open(kLockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock_fd_ < 0) throw std::runtime_error(std::string("open ") + kLockPath + ": " + std::strerror(errno));
  const auto deadline = std::chrono::steady_clock::now() + kLockWait;
  const auto try_lock = [&] { return ::flock(lock_fd_, LOCK_EX | LOCK_NB) == 0; };
  bool locked = try_lock();
  std::string holder;
  while (!locked && std::chrono::steady_clock::now() < deadline) {
    holder = flock_holder(lock_fd_);
    if (holder.find("pid " + std::to_string(::getpid()) + " (") != std::string::npos) {
      holder += ": this process (a second CorePatternLock in scope?)";
      break;
    }
    std::fprintf(stderr, "CorePatternLock: waiting (up to 20 minutes) for %s, held by %s\n", kLockPath,
                 holder.empty() ? "an unknown process" : holder.c_str());
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    locked = wait_until(try_lock, std::min<std::chrono::milliseconds>(60s, left));
  }
  if (!locked) {
    ::close(lock_fd_);
    throw std::runtime_error(std::string("could not lock ") + kLockPath + "; held by " +
                             (holder.empty() ? "an unknown process" : holder));
  }
  recover_stale_core_pattern();
  previous_ = read_file(kPatternPath).value_or("core\n");
  while (!previous_.empty() && previous_.back() == '\n') previous_.pop_back();
  g_saved_len = std::min(previous_.size(), sizeof(g_saved_pattern));
  std::memcpy(g_saved_pattern, previous_.data(), g_saved_len);
  for (int s : kRestoreSignals) {
    struct sigaction sa{};
    sa.sa_handler = on_fatal_signal;
    ::sigaction(s, &sa, &g_old_actions[s]);
  }
  try {
    record_core_pattern_state(pattern, previous_);  // for the next holder, should we die by SIGKILL
    write_pattern(pattern);
  } catch (...) {
    clear_core_pattern_state();
    for (int s : kRestoreSignals) ::sigaction(s, &g_old_actions[s], nullptr);
    ::close(lock_fd_);
    throw;
  }
}

CorePatternLock::~CorePatternLock() {
  try {
    write_pattern(previous_);
  } catch (const std::exception&) {
    restore_pattern_raw();
  }
  clear_core_pattern_state();
  for (int s : kRestoreSignals) ::sigaction(s, &g_old_actions[s], nullptr);
  ::close(lock_fd_);
}

ScopedCoreLimit::ScopedCoreLimit(unsigned long long soft) {
  rlimit r{};
  ::getrlimit(RLIMIT_CORE, &r);
  saved_cur_ = r.rlim_cur;
  saved_max_ = r.rlim_max;
  r.rlim_cur = soft;
  if (r.rlim_max != RLIM_INFINITY && soft > r.rlim_max) r.rlim_max = soft;
  ::setrlimit(RLIMIT_CORE, &r);
}

ScopedCoreLimit::~ScopedCoreLimit() {
  rlimit r{saved_cur_, saved_max_};
  ::setrlimit(RLIMIT_CORE, &r);
}

std::vector<std::string> proc_stat_fields(const std::string& path) {
  const auto stat = read_file(path);
  if (!stat) return {};
  const auto open = stat->find('('), close = stat->rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open) return {};
  std::vector<std::string> fields{stat->substr(0, open == 0 ? 0 : open - 1), stat->substr(open + 1, close - open - 1)};
  std::istringstream rest(stat->substr(close + 1));
  for (std::string word; rest >> word;) fields.push_back(word);
  return fields;
}

std::optional<std::string> real_kernel_unavailable() {
  if (::geteuid() != 0) return "needs root (writes kernel.core_pattern)";
  const auto modes = read_file("/proc/sys/kernel/core_modes");
  if (!modes || modes->find("socket") == std::string::npos)
    return "kernel lacks socket core_pattern support (no 'socket' in /proc/sys/kernel/core_modes; needs Linux 6.17+)";
  utsname u{};
  ::uname(&u);
  int major = 0, minor = 0;
  std::sscanf(u.release, "%d.%d", &major, &minor);
  if (major < 6 || (major == 6 && minor < 17))
    return std::string("kernel ") + u.release + " predates the @@ protocol (needs Linux 6.17+)";
  return std::nullopt;
}

bool real_kernel_required() {
  const char* v = std::getenv("COREDUMPD_REQUIRE_REAL_KERNEL");
  return v && std::string_view(v) == "1";
}

std::uint64_t largest_spool_of(pid_t pid, const std::string& dir) {
  namespace fs = std::filesystem;
  std::uint64_t largest = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec)) {
    std::error_code lec;
    const std::string target = fs::read_symlink(e.path(), lec).string();
    if (lec || target.rfind(dir + "/#", 0) != 0) continue;
    struct stat sb {};
    if (::stat(e.path().c_str(), &sb) == 0) largest = std::max(largest, static_cast<std::uint64_t>(sb.st_size));
  }
  return largest;
}

}  // namespace coredumpd::test
