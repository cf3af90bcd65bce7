#include "analysis/analyzer_run.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <filesystem>
#include <system_error>
#include <utility>

#include "store/dump_record.h"
#include "util/poll.h"
#include "util/unique_fd.h"

extern char** environ;

namespace coredumpd::analysis {

namespace {

using Clock = std::chrono::steady_clock;

/// Bytes of output accepted past max_report_bytes (a trailing newline, pretty-printing's end).
constexpr std::size_t kOutputSlack = 64;
/// The end of the analyzer's stderr kept for the reason of a failure.
constexpr std::size_t kStderrKept = 4096;
/// The part of it quoted in a reason.
constexpr std::size_t kStderrQuoted = 512;
/// Descriptors handed to the child are first moved at or above this, so that none of them sits
/// on 0..3 where another one is dup2()ed (a caller that runs with fd 0 closed).
constexpr int kHighFd = 10;
/// A wait status no waitpid() returns: the child was reaped by someone else.
constexpr int kStatusLost = -1;

[[noreturn]] void fail(const std::string& what, int err = errno) {
  throw std::system_error(err, std::generic_category(), "run analyzer: " + what);
}

UniqueFd high_dup(int fd) {
  UniqueFd copy(::fcntl(fd, F_DUPFD_CLOEXEC, kHighFd));
  if (!copy) fail("dup");
  return copy;
}

struct Pipe {
  UniqueFd read, write;
};

/// A pipe whose end `nonblocking_end` (0: read, 1: write) is the caller's, made O_NONBLOCK; the
/// child's end stays blocking (O_NONBLOCK belongs to the open file, which the child shares).
Pipe make_pipe(int nonblocking_end) {
  std::array<int, 2> fds{};
  if (::pipe2(fds.data(), O_CLOEXEC) != 0) fail("pipe");
  Pipe p{UniqueFd(fds[0]), UniqueFd(fds[1])};
  const int mine = fds[nonblocking_end];
  if (::fcntl(mine, F_SETFL, ::fcntl(mine, F_GETFL) | O_NONBLOCK) != 0) fail("fcntl O_NONBLOCK");
  return p;
}

/// The request's bytes, already in the pipe the child reads as fd 0: written before the child
/// exists, so a child that exits early cannot raise SIGPIPE in the caller. The pipe is grown to
/// fit (fs.pipe-max-size, 1 MiB by default); a request still too large goes without thread names.
UniqueFd request_pipe(nlohmann::json request) {
  Pipe p = make_pipe(1);
  for (int attempt = 0; attempt < 2; ++attempt) {
    const std::string text = request.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
    const int capacity = ::fcntl(p.write.get(), F_SETPIPE_SZ, static_cast<int>(std::min<std::size_t>(text.size(), INT_MAX)));
    if (capacity >= 0 && static_cast<std::size_t>(capacity) >= text.size()) {
      const ssize_t n = ::write(p.write.get(), text.data(), text.size());
      if (n < 0) fail("write request");
      if (static_cast<std::size_t>(n) != text.size()) fail("write request", EMSGSIZE);
      return std::move(p.read);  // the write end closes here: the child sees EOF after the request
    }
    request["thread_names"] = nullptr;
  }
  fail("request larger than a pipe holds", EMSGSIZE);
}

/// The child, killed (its process group) and reaped on every path out of run_analyzer() that did
/// not reap it: an exception, or the caller's thread unwinding.
class Child {
 public:
  explicit Child(pid_t pid) : pid_(pid) {}
  ~Child() {
    if (pid_ > 0) kill_and_reap();
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  /// SIGKILL (cannot be ignored) to the child's group, then a blocking waitpid(): bounded.
  int kill_and_reap() {
    ::kill(-pid_, SIGKILL);
    ::kill(pid_, SIGKILL);
    return reap();
  }
  /// waitpid() for the child; returns its wait status.
  int reap() {
    int status = 0;
    pid_t r = 0;
    while ((r = ::waitpid(pid_, &status, 0)) < 0 && errno == EINTR) {
    }
    pid_ = -1;
    return r < 0 ? kStatusLost : status;
  }
  /// True once the child has exited (reaped now, `status` set; kStatusLost when someone else
  /// reaped it: SIGCHLD ignored); false while it runs.
  bool try_reap(int& status) {
    const pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == 0 || (r < 0 && errno == EINTR)) return false;
    if (r < 0) status = kStatusLost;
    pid_ = -1;
    return true;
  }
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_;
};

/// posix_spawn() of `path` with fd 0 the request, 1 and 2 the pipes' write ends, 3 the core; every
/// other descriptor closed; default signal dispositions, an empty mask and a process group of its
/// own (so a timeout kills whatever it started too).
pid_t spawn(const std::string& path, int request_fd, int out_fd, int err_fd, int core_fd) {
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  if (int e = posix_spawn_file_actions_init(&actions); e != 0) fail("posix_spawn_file_actions_init", e);
  if (int e = posix_spawnattr_init(&attr); e != 0) {
    posix_spawn_file_actions_destroy(&actions);
    fail("posix_spawnattr_init", e);
  }
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  int e = posix_spawn_file_actions_adddup2(&actions, request_fd, 0);
  if (e == 0) e = posix_spawn_file_actions_adddup2(&actions, out_fd, 1);
  if (e == 0) e = posix_spawn_file_actions_adddup2(&actions, err_fd, 2);
  if (e == 0) e = posix_spawn_file_actions_adddup2(&actions, core_fd, 3);
  if (e == 0) e = posix_spawn_file_actions_addclosefrom_np(&actions, 4);
  if (e == 0) e = posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);
  if (e == 0) e = posix_spawnattr_setsigmask(&attr, &none);
  if (e == 0) e = posix_spawnattr_setsigdefault(&attr, &all);
  if (e == 0) e = posix_spawnattr_setpgroup(&attr, 0);
  std::string arg0 = path, a1 = "--request-fd", a2 = "0", a3 = "--core-fd", a4 = "3";
  std::array<char*, 6> argv{arg0.data(), a1.data(), a2.data(), a3.data(), a4.data(), nullptr};
  pid_t pid = -1;
  if (e == 0) e = posix_spawn(&pid, path.c_str(), &actions, &attr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (e != 0) fail("cannot start " + path, e);
  return pid;
}

/// The last line of `text` that is not blank, at most kStderrQuoted bytes of it.
std::string last_line(const std::string& text) {
  std::size_t end = text.find_last_not_of(" \t\r\n");
  if (end == std::string::npos) return "";
  const std::size_t begin = text.rfind('\n', end);
  std::string line = text.substr(begin == std::string::npos ? 0 : begin + 1, end + 1 - (begin == std::string::npos ? 0 : begin + 1));
  if (line.size() > kStderrQuoted) line.erase(0, line.size() - kStderrQuoted);
  return line;
}

std::string with_stderr(std::string reason, const std::string& err) {
  const std::string line = last_line(err);
  return line.empty() ? reason : reason + ": " + line;
}

/// Reads what is there from a non-blocking pipe into `into`; closes `fd` at EOF or error.
void drain(UniqueFd& fd, std::string& into) {
  std::array<char, 65536> buf{};
  for (;;) {
    const ssize_t n = ::read(fd.get(), buf.data(), buf.size());
    if (n > 0) {
      into.append(buf.data(), static_cast<std::size_t>(n));
      if (n < static_cast<ssize_t>(buf.size())) return;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return;
    fd.reset();  // EOF, or an error that will not go away
    return;
  }
}

}  // namespace

nlohmann::json request_json(const AnalyzerInput& input, const AnalyzerOptions& options) {
  nlohmann::json debuginfod = nullptr;
  if (!options.debuginfod_urls.empty()) {
    debuginfod = {{"urls", options.debuginfod_urls},
                  {"budget_s", options.debuginfod_budget.count()},
                  {"cache_dir", options.debuginfod_cache_dir}};
  }
  return {{"compression", input.compression},
          {"signal", input.signal ? nlohmann::json(*input.signal) : nlohmann::json(nullptr)},
          {"crashing_tid", input.crashing_tid ? nlohmann::json(*input.crashing_tid) : nlohmann::json(nullptr)},
          {"thread_names", input.thread_names.is_object() ? input.thread_names : nlohmann::json(nullptr)},
          {"max_threads", options.max_threads},
          {"max_frames", options.max_frames},
          {"max_report_bytes", options.max_report_bytes},
          {"cpu_seconds", options.cpu_seconds},
          {"memory_bytes", options.memory_bytes},
          {"idle", options.idle},
          {"temp_dir", options.temp_dir},
          {"run_as_uid", options.run_as_uid},
          {"run_as_gid", options.run_as_gid},
          {"debuginfod", std::move(debuginfod)}};
}

CrashReport run_analyzer(const AnalyzerInput& input, const AnalyzerOptions& options) {
  const std::string path = options.analyzer_path.empty() ? default_analyzer_path() : options.analyzer_path;
  if (input.core_fd < 0) fail("no core descriptor", EBADF);

  UniqueFd request = high_dup(request_pipe(request_json(input, options)).get());
  UniqueFd core = high_dup(input.core_fd);
  Pipe out = make_pipe(0), err = make_pipe(0);
  UniqueFd out_w = high_dup(out.write.get()), err_w = high_dup(err.write.get());
  out.write.reset();
  err.write.reset();

  const auto deadline = Clock::now() + options.wall_timeout;
  Child child(spawn(path, request.get(), out_w.get(), err_w.get(), core.get()));
  // The child has its copies: close ours, so that its exit is our EOF.
  request.reset();
  core.reset();
  out_w.reset();
  err_w.reset();
  const pid_t group = child.pid();
  UniqueFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, group, 0)));
  if (!pidfd) fail("pidfd_open");

  const std::size_t max_output = options.max_report_bytes + kOutputSlack;
  std::string output, diagnostics;
  int status = 0;
  bool exited = false;
  while (out.read || err.read || !exited) {
    std::array<pollfd, 3> fds{{{out.read.get(), POLLIN, 0}, {err.read.get(), POLLIN, 0}, {exited ? -1 : pidfd.get(), POLLIN, 0}}};
    const PollResult r = poll_many_until(fds, deadline);
    if (r.status == PollStatus::Timeout) {
      child.kill_and_reap();
      return unavailable(with_stderr("analyzer timed out after " + std::to_string(options.wall_timeout.count()) + " ms", diagnostics));
    }
    if (r.status == PollStatus::Failed) fail("poll", r.error);
    if (fds[0].revents != 0) drain(out.read, output);
    if (fds[1].revents != 0) {
      drain(err.read, diagnostics);
      if (diagnostics.size() > 2 * kStderrKept) diagnostics.erase(0, diagnostics.size() - kStderrKept);
    }
    if (output.size() > max_output) {
      child.kill_and_reap();
      return unavailable("analyzer output exceeds " + std::to_string(options.max_report_bytes) + " bytes");
    }
    if (fds[2].revents != 0 && child.try_reap(status)) {
      exited = true;
      // Whatever it started and left in its group must not hold the pipes open until the deadline.
      ::kill(-group, SIGKILL);
    }
  }

  if (status == kStatusLost) return unavailable("analyzer's exit status lost (SIGCHLD ignored?)");
  if (WIFSIGNALED(status)) {
    return unavailable(with_stderr("analyzer killed by " + signal_name(WTERMSIG(status)), diagnostics));
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return unavailable(with_stderr("analyzer exited with status " + std::to_string(WEXITSTATUS(status)), diagnostics));
  }
  const auto j = nlohmann::json::parse(output, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return unavailable("analyzer report refused: not JSON");
  try {
    return report_from_json(j);
  } catch (const ReportError& e) {
    return unavailable(std::string("analyzer report refused: ") + e.what());
  }
}

std::string default_analyzer_path() {
  if (const char* env = std::getenv("COREDUMPD_ANALYZER"); env != nullptr && *env != '\0') return env;
  const std::string build_dir = COREDUMPD_BINARY_DIR;
  std::error_code ec;
  const std::string self = std::filesystem::read_symlink("/proc/self/exe", ec).string();
  if (!ec && !build_dir.empty() && self.starts_with(build_dir + "/")) return build_dir + "/analyzer/coredumpd-analyze";
  return std::string(COREDUMPD_LIBEXECDIR) + "/coredumpd/coredumpd-analyze";
}

}  // namespace coredumpd::analysis
