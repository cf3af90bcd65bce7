// start_pager() / plan_pager(): systemd 252's pager_open() and pager_close() (src/shared/pager.c,
// 252.39 as Debian 12 ships it) for dumpctl.
#include <fcntl.h>
#include <langinfo.h>
#include <locale.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <systemd/sd-login.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <sstream>

#include "cli/terminal.h"
#include "cli/terminal_state.h"

namespace coredumpd::cli {

namespace {

/// systemd's parse_boolean(): 1 true, 0 false, -1 not a boolean.
int parse_boolean(const char* v) {
  for (const char* t : {"1", "yes", "y", "true", "t", "on"})
    if (strcasecmp(v, t) == 0) return 1;
  for (const char* f : {"0", "no", "n", "false", "f", "off"})
    if (strcasecmp(v, f) == 0) return 0;
  return -1;
}

bool running_with_escalated_privileges() {
  if (std::getenv("SUDO_UID") != nullptr) return true;
  uid_t uid = 0;
  // No logind session (a service, a container): unknown owner, so systemd assumes escalation.
  if (sd_pid_get_owner_uid(0, &uid) < 0) return true;
  return uid != geteuid();
}

std::vector<std::string> split_whitespace(const char* s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

/// systemd's is_locale_utf8(): the C/POSIX locale with no locale variables set counts as UTF-8.
bool locale_is_utf8() {
  const locale_t loc = newlocale(LC_CTYPE_MASK, "", static_cast<locale_t>(nullptr));
  if (loc == static_cast<locale_t>(nullptr)) return true;
  const std::string codeset = nl_langinfo_l(CODESET, loc);
  freelocale(loc);
  if (codeset == "UTF-8") return true;
  return std::getenv("LC_ALL") == nullptr && std::getenv("LC_CTYPE") == nullptr && std::getenv("LANG") == nullptr;
}

bool write_name(int fd, const std::string& name) {
  const std::string line = name + "\n";
  return write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
}

/// The child: never returns. `names` receives each pager's name before it is tried; it is
/// close-on-exec, so the parent reads the name of the one that ran, then end of file.
[[noreturn]] void run_pager(const PagerPlan& plan, const int (&data)[2], const int (&name_pipe)[2]) {
  const int read_end = data[0];
  const int names = name_pipe[1];
  close(data[1]);  // else the built-in pager would never see end of file
  close(name_pipe[0]);
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) (void)sigaction(sig, &dfl, nullptr);
  sigset_t none;
  sigemptyset(&none);
  (void)sigprocmask(SIG_SETMASK, &none, nullptr);
  // As systemd's FORK_DEATHSIG_SIGINT: SIGINT matches the 'K' in $LESS.
  (void)prctl(PR_SET_PDEATHSIG, SIGINT);
  if (dup2(read_end, STDIN_FILENO) < 0) _exit(EXIT_FAILURE);
  if (read_end != STDIN_FILENO) close(read_end);

  if (setenv("LESS", plan.less.c_str(), 1) < 0) _exit(EXIT_FAILURE);
  const char* charset = std::getenv("SYSTEMD_LESSCHARSET");
  if (charset == nullptr && locale_is_utf8()) charset = "utf-8";
  if (charset != nullptr && setenv("LESSCHARSET", charset, 1) < 0) _exit(EXIT_FAILURE);
  if (plan.secure ? setenv("LESSSECURE", "1", 1) < 0 : unsetenv("LESSSECURE") < 0) _exit(EXIT_FAILURE);

  if (!plan.user_pager.empty()) {
    std::vector<char*> argv;
    for (const auto& a : plan.user_pager) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    if (!write_name(names, plan.user_pager[0])) _exit(EXIT_FAILURE);
    execvp(argv[0], argv.data());
  }
  for (const auto& p : plan.fallbacks) {
    if (!write_name(names, p)) _exit(EXIT_FAILURE);
    execlp(p.c_str(), p.c_str(), static_cast<char*>(nullptr));
  }
  // The built-in pager: copy to the terminal.
  if (!write_name(names, "(built-in)")) _exit(EXIT_FAILURE);
  close(names);
  char buf[65536];
  for (;;) {
    const ssize_t n = read(STDIN_FILENO, buf, sizeof buf);
    if (n == 0) _exit(EXIT_SUCCESS);
    if (n < 0) {
      if (errno == EINTR) continue;
      _exit(EXIT_FAILURE);
    }
    for (ssize_t off = 0; off < n;) {
      const ssize_t w = write(STDOUT_FILENO, buf + off, static_cast<std::size_t>(n - off));
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) _exit(EXIT_FAILURE);
      off += w;
    }
  }
}

/// The last name the child wrote before exec or the built-in pager took over.
std::string read_pager_name(int fd) {
  std::string all;
  char buf[256];
  for (;;) {
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    all.append(buf, static_cast<std::size_t>(n));
  }
  if (!all.empty() && all.back() == '\n') all.pop_back();
  const auto nl = all.rfind('\n');
  return nl == std::string::npos ? all : all.substr(nl + 1);
}

class RunningPager final : public Pager {
 public:
  RunningPager(pid_t pid, int saved_stdout, int saved_stderr, bool ignoring_sigint, struct sigaction old_sigint)
      : pid_(pid), saved_stdout_(saved_stdout), saved_stderr_(saved_stderr),
        ignoring_sigint_(ignoring_sigint), old_sigint_(old_sigint) {}
  RunningPager(const RunningPager&) = delete;
  RunningPager& operator=(const RunningPager&) = delete;

  ~RunningPager() override {
    // Tell the pager we are done: flush, then close our write ends (fd 1 and 2) by putting the
    // terminal back, so that the pager sees end of file.
    std::cout.flush();
    std::cerr.flush();
    (void)std::fflush(stdout);
    (void)std::fflush(stderr);
    if (saved_stdout_ < 0 || dup2(saved_stdout_, STDOUT_FILENO) < 0) (void)close(STDOUT_FILENO);
    if (saved_stderr_ < 0 || dup2(saved_stderr_, STDERR_FILENO) < 0) (void)close(STDERR_FILENO);
    if (saved_stdout_ >= 0) (void)close(saved_stdout_);
    if (saved_stderr_ >= 0) (void)close(saved_stderr_);
    terminal_state::pager_running = false;
    (void)kill(pid_, SIGCONT);
    int status = 0;
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    if (ignoring_sigint_) (void)sigaction(SIGINT, &old_sigint_, nullptr);
  }

 private:
  pid_t pid_;
  int saved_stdout_;
  int saved_stderr_;
  bool ignoring_sigint_;
  struct sigaction old_sigint_;
};

}  // namespace

std::optional<PagerPlan> plan_pager(bool no_pager) {
  if (no_pager || terminal_state::pager_running) return std::nullopt;
  // systemd's terminal_is_dumb(): on_tty() (stdout and stderr) and $TERM set and not "dumb".
  if (isatty(STDOUT_FILENO) != 1 || isatty(STDERR_FILENO) != 1) return std::nullopt;
  const char* term = std::getenv("TERM");
  if (term == nullptr || std::strcmp(term, "dumb") == 0) return std::nullopt;

  PagerPlan plan;
  const char* pager = std::getenv("SYSTEMD_PAGER");
  if (pager == nullptr) pager = std::getenv("PAGER");
  std::vector<std::string> args;
  if (pager != nullptr) {
    args = split_whitespace(pager);
    if (args.empty() || (args.size() == 1 && args[0] == "cat")) return std::nullopt;
  }
  const char* less = std::getenv("SYSTEMD_LESS");
  plan.less = less != nullptr ? less : "FRSXMK";

  // secure_getenv(), as systemd's getenv_bool_secure(): ignored in a setuid program.
  const char* secure = secure_getenv("SYSTEMD_PAGERSECURE");
  const int parsed = secure != nullptr ? parse_boolean(secure) : -1;
  const bool trust_pager = parsed >= 0;
  if (secure == nullptr) {
    plan.secure = running_with_escalated_privileges();
  } else {
    plan.secure = parsed != 0;  // unparsable: secure, as systemd assumes true
  }
  // The configured pager may be set globally, not chosen for secure mode: run it only when
  // $SYSTEMD_PAGERSECURE was set explicitly.
  if (trust_pager) plan.user_pager = std::move(args);
  // Only less (and the built-in copy) implement secure mode.
  plan.fallbacks = plan.secure ? std::vector<std::string>{"less"} : std::vector<std::string>{"pager", "less", "more"};
  return plan;
}

std::unique_ptr<Pager> start_pager(bool no_pager) {
  const auto plan = plan_pager(no_pager);
  if (!plan) return nullptr;
  int data[2];
  if (pipe2(data, O_CLOEXEC) < 0) return nullptr;
  int names[2];
  if (pipe2(names, O_CLOEXEC) < 0) {
    close(data[0]);
    close(data[1]);
    return nullptr;
  }
  std::cout.flush();
  (void)std::fflush(stdout);
  const pid_t pid = fork();
  if (pid < 0) {
    for (const int fd : {data[0], data[1], names[0], names[1]}) close(fd);
    return nullptr;
  }
  if (pid == 0) run_pager(*plan, data, names);

  close(data[0]);
  close(names[1]);
  const int saved_stdout = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
  const int saved_stderr = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
  const bool redirected = dup2(data[1], STDOUT_FILENO) >= 0 && dup2(data[1], STDERR_FILENO) >= 0;
  close(data[1]);
  terminal_state::pager_running = true;
  const std::string ran = read_pager_name(names[0]);
  close(names[0]);
  // As systemd: dumpctl ignores SIGINT only when less runs without 'K' (then less stays on Ctrl-C).
  struct sigaction old_sigint {};
  const bool ignore_sigint = ran == "less" && plan->less.find('K') == std::string::npos;
  if (ignore_sigint) {
    struct sigaction ign {};
    ign.sa_handler = SIG_IGN;
    (void)sigaction(SIGINT, &ign, &old_sigint);
  }
  auto running = std::make_unique<RunningPager>(pid, saved_stdout, saved_stderr, ignore_sigint, old_sigint);
  if (!redirected) return nullptr;  // the destructor restores the terminal and reaps the pager
  return running;
}

}  // namespace coredumpd::cli
