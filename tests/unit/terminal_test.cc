// cli/terminal.h: the pager as systemd 252's pager_open() chooses and runs it, and colour as its
// get_color_mode() decides. Pager decisions and runs happen in a child whose standard streams are
// a pseudo-terminal (forkpty), because the pager only starts on a terminal.
#include "cli/terminal.h"

#include <fcntl.h>
#include <pty.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "tests/unit/scoped_env.h"

namespace coredumpd::cli {
namespace {

namespace fs = std::filesystem;

struct PtyRun {
  std::string terminal;  ///< what the child wrote to the terminal ("\r\n" turned into "\n")
  std::string result;    ///< what the child reported through the result pipe
  int status = -1;
};

/// Runs `body` in a child whose stdin, stdout and stderr are a new pseudo-terminal, with the
/// variables that steer the pager cleared and TERM=xterm; body writes its findings to the fd it gets.
PtyRun run_in_pty(const std::function<void(int result_fd)>& body) {
  int pipe_fds[2];
  if (pipe(pipe_fds) != 0) return {};
  std::cout.flush();
  (void)std::fflush(stdout);  // else the child would write the parent's buffered output again
  int master = -1;
  const pid_t pid = forkpty(&master, nullptr, nullptr, nullptr);
  if (pid == 0) {
    close(pipe_fds[0]);
    for (const char* v : {"SYSTEMD_PAGER", "PAGER", "SYSTEMD_LESS", "SYSTEMD_PAGERSECURE", "SUDO_UID", "NO_COLOR",
                          "SYSTEMD_COLORS", "LESS", "LESSSECURE", "SYSTEMD_LESSCHARSET"})
      unsetenv(v);
    setenv("TERM", "xterm", 1);
    body(pipe_fds[1]);
    std::cout.flush();
    _exit(0);
  }
  close(pipe_fds[1]);
  PtyRun run;
  if (pid < 0) return run;
  char buf[4096];
  for (;;) {  // the terminal until the child's side closes (EIO)
    const ssize_t n = read(master, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    run.terminal.append(buf, static_cast<std::size_t>(n));
  }
  for (;;) {
    const ssize_t n = read(pipe_fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    run.result.append(buf, static_cast<std::size_t>(n));
  }
  close(pipe_fds[0]);
  close(master);
  waitpid(pid, &run.status, 0);
  std::string clean;
  for (const char c : run.terminal)
    if (c != '\r') clean.push_back(c);
  run.terminal = clean;
  return run;
}

void report(int fd, const std::string& s) { (void)!write(fd, s.data(), s.size()); }

std::string describe(const std::optional<PagerPlan>& plan) {
  if (!plan) return "none";
  std::string s = "user=";
  for (const auto& a : plan->user_pager) s += a + ",";
  s += " fallbacks=";
  for (const auto& a : plan->fallbacks) s += a + ",";
  s += " less=" + plan->less + " secure=" + (plan->secure ? "1" : "0");
  return s;
}

/// plan_pager(no_pager) in a pty child after `setup` changed its environment.
std::string plan_in_pty(const std::function<void()>& setup, bool no_pager = false) {
  const PtyRun run = run_in_pty([&](int fd) {
    setup();
    report(fd, describe(plan_pager(no_pager)));
  });
  return run.result;
}

TEST(PagerPlan, DefaultsToPagerLessMoreWithFRSXMK) {
  EXPECT_EQ(plan_in_pty([] { setenv("SYSTEMD_PAGERSECURE", "0", 1); }),
            "user= fallbacks=pager,less,more, less=FRSXMK secure=0");
}

TEST(PagerPlan, SystemdPagerBeforePagerSplitOnWhitespace) {
  EXPECT_EQ(plan_in_pty([] {
              setenv("SYSTEMD_PAGERSECURE", "no", 1);
              setenv("PAGER", "most", 1);
            }),
            "user=most, fallbacks=pager,less,more, less=FRSXMK secure=0");
  EXPECT_EQ(plan_in_pty([] {
              setenv("SYSTEMD_PAGERSECURE", "0", 1);
              setenv("PAGER", "most", 1);
              setenv("SYSTEMD_PAGER", "  less  -R\t-X ", 1);
            }),
            "user=less,-R,-X, fallbacks=pager,less,more, less=FRSXMK secure=0");
}

TEST(PagerPlan, EmptyBlankOrCatDisable) {
  EXPECT_EQ(plan_in_pty([] { setenv("PAGER", "", 1); }), "none");
  EXPECT_EQ(plan_in_pty([] { setenv("PAGER", " \t ", 1); }), "none");
  EXPECT_EQ(plan_in_pty([] { setenv("PAGER", "cat", 1); }), "none");
  EXPECT_EQ(plan_in_pty([] { setenv("PAGER", " cat ", 1); }), "none");
  // $SYSTEMD_PAGER decides even when $PAGER names a pager.
  EXPECT_EQ(plan_in_pty([] {
              setenv("PAGER", "less", 1);
              setenv("SYSTEMD_PAGER", "cat", 1);
            }),
            "none");
  EXPECT_EQ(plan_in_pty([] {
              setenv("PAGER", "less", 1);
              setenv("SYSTEMD_PAGER", "", 1);
            }),
            "none");
  // "cat -v" is not "cat": it runs.
  EXPECT_EQ(plan_in_pty([] {
              setenv("SYSTEMD_PAGERSECURE", "0", 1);
              setenv("PAGER", "cat -v", 1);
            }),
            "user=cat,-v, fallbacks=pager,less,more, less=FRSXMK secure=0");
}

TEST(PagerPlan, NoPagerDumbTerminalOrNoTerminal) {
  EXPECT_EQ(plan_in_pty([] {}, /*no_pager=*/true), "none");
  EXPECT_EQ(plan_in_pty([] { setenv("TERM", "dumb", 1); }), "none");
  EXPECT_EQ(plan_in_pty([] { unsetenv("TERM"); }), "none");
  const auto to_null = [](int target) {
    const int fd = open("/dev/null", O_WRONLY);
    dup2(fd, target);
    close(fd);
  };
  EXPECT_EQ(plan_in_pty([&] { to_null(STDOUT_FILENO); }), "none");
  EXPECT_EQ(plan_in_pty([&] { to_null(STDERR_FILENO); }), "none");
  // The same process on the terminal does get one (the runs above are not "none" by accident).
  EXPECT_NE(plan_in_pty([] {}), "none");
  // And the test process itself (ctest's pipes) gets none.
  if (isatty(STDOUT_FILENO) != 1) {
    EXPECT_FALSE(plan_pager(false).has_value());
  }
}

TEST(PagerPlan, SystemdLessReplacesTheOptions) {
  EXPECT_EQ(plan_in_pty([] {
              setenv("SYSTEMD_PAGERSECURE", "0", 1);
              setenv("SYSTEMD_LESS", "XR", 1);
            }),
            "user= fallbacks=pager,less,more, less=XR secure=0");
}

TEST(PagerPlan, SecureModeUnderSudoIgnoresTheConfiguredPager) {
  // $SUDO_UID means escalated privileges: only less, LESSSECURE=1, $PAGER not trusted.
  EXPECT_EQ(plan_in_pty([] {
              setenv("SUDO_UID", "1000", 1);
              setenv("PAGER", "most", 1);
            }),
            "user= fallbacks=less, less=FRSXMK secure=1");
  // $SYSTEMD_PAGERSECURE set explicitly: the configured pager is trusted, secure mode as it says.
  EXPECT_EQ(plan_in_pty([] {
              setenv("SUDO_UID", "1000", 1);
              setenv("PAGER", "most", 1);
              setenv("SYSTEMD_PAGERSECURE", "1", 1);
            }),
            "user=most, fallbacks=less, less=FRSXMK secure=1");
  // Not a boolean: secure, and the configured pager is not trusted.
  EXPECT_EQ(plan_in_pty([] {
              setenv("PAGER", "most", 1);
              setenv("SYSTEMD_PAGERSECURE", "maybe", 1);
            }),
            "user= fallbacks=less, less=FRSXMK secure=1");
}

/// A temporary directory with a stand-in pager script named `name` that records its arguments,
/// environment and standard input into `dir/record`.
class StandInPager {
 public:
  explicit StandInPager(const std::string& name) {
    char tmpl[] = "/tmp/terminal_test.XXXXXX";
    dir_ = mkdtemp(tmpl);
    std::ofstream(dir_ / name) << "#!/bin/sh\n"
                               << "{ echo \"argv0=${0##*/}\"; echo \"args=$*\"; echo \"LESS=$LESS\";"
                               << " echo \"LESSSECURE=${LESSSECURE-unset}\";"
                               << " if [ -t 0 ]; then echo stdin=tty; else echo stdin=pipe; fi; echo ---;"
                               << " /bin/cat; } > '" << (dir_ / "record").string() << "'\n";
    fs::permissions(dir_ / name, fs::perms::owner_all);
    program_ = (dir_ / name).string();
  }
  ~StandInPager() { fs::remove_all(dir_); }
  StandInPager(const StandInPager&) = delete;
  StandInPager& operator=(const StandInPager&) = delete;
  const std::string& program() const { return program_; }
  std::string dir() const { return dir_.string(); }
  std::string record() const {
    std::ifstream in(dir_ / "record");
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }

 private:
  fs::path dir_;
  std::string program_;
};

TEST(PagerRun, ConfiguredPagerGetsOurOutputThroughAPipe) {
  const StandInPager pager("stand-in");
  const PtyRun run = run_in_pty([&](int fd) {
    setenv("SYSTEMD_PAGERSECURE", "0", 1);
    setenv("PAGER", (pager.program() + " -x 1").c_str(), 1);
    {
      auto p = start_pager(false);
      report(fd, p ? "started\n" : "none\n");
      struct stat st {};
      fstat(STDOUT_FILENO, &st);
      report(fd, S_ISFIFO(st.st_mode) ? "stdout=pipe\n" : "stdout=other\n");
      report(fd, colour_wanted(STDOUT_FILENO) ? "colour=yes\n" : "colour=no\n");
      report(fd, start_pager(false) ? "second=started\n" : "second=none\n");
      std::cout << "line one\n" << std::flush;
      std::cerr << "an error\n";
      std::cout << "line two\n";
    }
    // The destructor waited for the pager: its record is complete, and fd 1 is the terminal again.
    report(fd, "after=" + pager.record());
    report(fd, isatty(STDOUT_FILENO) == 1 ? "stdout=tty\n" : "stdout=not-tty\n");
    std::cout << "back on the terminal\n";
  });
  EXPECT_EQ(run.result,
            "started\nstdout=pipe\ncolour=yes\nsecond=none\n"
            "after=argv0=stand-in\nargs=-x 1\nLESS=FRSXMK\nLESSSECURE=unset\nstdin=pipe\n---\n"
            "line one\nan error\nline two\nstdout=tty\n");
  EXPECT_EQ(run.terminal, "back on the terminal\n");
}

TEST(PagerRun, SecureModeRunsLessFromPathWithLessSecure) {
  const StandInPager less("less");
  const StandInPager configured("configured");
  const PtyRun run = run_in_pty([&](int fd) {
    setenv("SUDO_UID", "1000", 1);
    setenv("PAGER", configured.program().c_str(), 1);
    setenv("PATH", less.dir().c_str(), 1);
    setenv("SYSTEMD_LESS", "RSX", 1);
    {
      auto p = start_pager(false);
      report(fd, p ? "started\n" : "none\n");
      std::cout << "secret\n";
    }
  });
  EXPECT_EQ(run.result, "started\n");
  EXPECT_EQ(less.record(), "argv0=less\nargs=\nLESS=RSX\nLESSSECURE=1\nstdin=pipe\n---\nsecret\n");
  EXPECT_EQ(configured.record(), "");  // never ran
}

TEST(PagerRun, BuiltInPagerCopiesToTheTerminalWhenNoneIsInstalled) {
  char tmpl[] = "/tmp/terminal_test_empty.XXXXXX";
  const std::string empty = mkdtemp(tmpl);
  const PtyRun run = run_in_pty([&](int fd) {
    setenv("SYSTEMD_PAGERSECURE", "0", 1);
    setenv("PATH", empty.c_str(), 1);
    {
      auto p = start_pager(false);
      report(fd, p ? "started\n" : "none\n");
      std::cout << "through the built-in pager\n";
    }
    std::cout << "after\n";
  });
  fs::remove_all(empty);
  EXPECT_EQ(run.result, "started\n");
  EXPECT_EQ(run.terminal, "through the built-in pager\nafter\n");
}

/// SIGINT's disposition in dumpctl while `less` (a stand-in) runs with $SYSTEMD_LESS = `less_opts`,
/// and after the pager is gone.
std::string sigint_while_less(const std::string& less_opts) {
  const StandInPager less("less");
  const PtyRun run = run_in_pty([&](int fd) {
    setenv("SYSTEMD_PAGERSECURE", "0", 1);
    setenv("PATH", less.dir().c_str(), 1);
    setenv("SYSTEMD_LESS", less_opts.c_str(), 1);
    const auto disposition = [] {
      struct sigaction sa {};
      sigaction(SIGINT, nullptr, &sa);
      return sa.sa_handler == SIG_IGN ? std::string("ignored") : std::string("default");
    };
    std::string out;
    {
      auto p = start_pager(false);
      out = (p ? "during=" : "none=") + disposition();
    }
    report(fd, out + " after=" + disposition());
  });
  return run.result;
}

TEST(PagerRun, SigintIgnoredOnlyWhileLessRunsWithoutK) {
  EXPECT_EQ(sigint_while_less("FRSXM"), "during=ignored after=default");
  EXPECT_EQ(sigint_while_less("FRSXMK"), "during=default after=default");
}

TEST(Colour, FollowsSystemdColorsNoColorTermAndTty) {
  int master = -1;
  int slave = -1;
  ASSERT_EQ(openpty(&master, &slave, nullptr, nullptr, nullptr), 0);
  int pipe_fds[2];
  ASSERT_EQ(pipe(pipe_fds), 0);
  test::ScopedEnv env;
  env.set("SYSTEMD_COLORS", std::nullopt).set("NO_COLOR", std::nullopt).set("TERM", "xterm-256color");
  EXPECT_TRUE(colour_wanted(slave));
  EXPECT_FALSE(colour_wanted(pipe_fds[1]));
  env.set("TERM", "dumb");
  EXPECT_FALSE(colour_wanted(slave));
  env.set("TERM", std::nullopt);
  EXPECT_FALSE(colour_wanted(slave));
  env.set("TERM", "xterm");
  env.set("NO_COLOR", "");  // presence is enough
  EXPECT_FALSE(colour_wanted(slave));
  for (const char* yes : {"1", "yes", "true", "on", "16", "256", "24bit"}) {
    env.set("SYSTEMD_COLORS", yes);
    EXPECT_TRUE(colour_wanted(pipe_fds[1])) << yes;  // even on a pipe, even with NO_COLOR
  }
  for (const char* no : {"0", "no", "false", "off"}) {
    env.set("SYSTEMD_COLORS", no);
    env.set("NO_COLOR", std::nullopt);
    EXPECT_FALSE(colour_wanted(slave)) << no;
  }
  env.set("SYSTEMD_COLORS", "sometimes");  // not understood: the other rules decide
  EXPECT_TRUE(colour_wanted(slave));
  EXPECT_FALSE(colour_wanted(pipe_fds[1]));
  for (const int fd : {master, slave, pipe_fds[0], pipe_fds[1]}) close(fd);
}

TEST(Colour, AnsiSequencesOnlyWhenWanted) {
  EXPECT_STREQ(ansi_highlight_red(true), "\x1B[0;1;31m");
  EXPECT_STREQ(ansi_highlight(true), "\x1B[0;1;39m");
  EXPECT_STREQ(ansi_grey(true), "\x1B[0;38;5;245m");
  EXPECT_STREQ(ansi_normal(true), "\x1B[0m");
  for (const char* s : {ansi_highlight_red(false), ansi_highlight(false), ansi_grey(false), ansi_normal(false)})
    EXPECT_STREQ(s, "");
}

}  // namespace
}  // namespace coredumpd::cli
