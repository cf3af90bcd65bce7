// `dumpctl debug`: run a debugger on the core: a decompressed copy of a zstd core, or a raw core
// (compression "none") in place, since that file already is the ELF core the debugger reads.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>

#include "cli/core_file.h"
#include "cli/dump_source.h"
#include "cli/dumpctl.h"
#include "cli/format.h"
#include "cli/commands_info.h"
#include "cli/options.h"
#include "cli/short_id.h"
#include "cli/signal_cleanup.h"
#include "cli/temp_file.h"
#include "store/record_extras.h"
#include "util/text.h"
#include "util/unique_fd.h"

namespace coredumpd::cli {

namespace {

constexpr const char* kDeletedSuffix = " (deleted)";

/// The executable to hand to the debugger, or "" if it is gone, replaced or not a safe argument.
std::string usable_exe(const std::string& exe) {
  if (exe.empty() || exe[0] != '/') return "";  // never pass something that looks like an option
  if (exe.ends_with(kDeletedSuffix)) return "";
  struct stat sb {};
  if (::stat(exe.c_str(), &sb) != 0 || !S_ISREG(sb.st_mode)) return "";
  return exe;
}

/// Restores SIGINT and SIGQUIT on scope exit after ignoring them, as system() does: Ctrl-C belongs
/// to the debugger, and dumpctl must survive it to remove the temporary core.
class IgnoreInteractiveSignals {
 public:
  IgnoreInteractiveSignals() {
    struct sigaction ign {};
    ign.sa_handler = SIG_IGN;
    sigemptyset(&ign.sa_mask);
    sigaction(SIGINT, &ign, &old_int_);
    sigaction(SIGQUIT, &ign, &old_quit_);
  }
  ~IgnoreInteractiveSignals() { restore(); }
  IgnoreInteractiveSignals(const IgnoreInteractiveSignals&) = delete;
  IgnoreInteractiveSignals& operator=(const IgnoreInteractiveSignals&) = delete;
  /// Puts the previous dispositions back (also called in the child before exec).
  void restore() const {
    sigaction(SIGINT, &old_int_, nullptr);
    sigaction(SIGQUIT, &old_quit_, nullptr);
  }

 private:
  struct sigaction old_int_ {};
  struct sigaction old_quit_ {};
};

/// Runs argv[0] (PATH search) with `argv` and waits. Returns its exit status, 1 if it was killed.
/// Throws DumpctlError if it could not be started.
int run_and_wait(const std::vector<std::string>& argv) {
  std::vector<char*> cargv;
  cargv.reserve(argv.size() + 1);
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);

  // A close-on-exec pipe tells the parent whether execvp failed, and with which errno.
  int pipefd[2];
  if (::pipe2(pipefd, O_CLOEXEC) != 0)
    throw DumpctlError(std::string("pipe: ") + std::strerror(errno));
  UniqueFd exec_status(pipefd[0]);
  UniqueFd exec_report(pipefd[1]);
  const IgnoreInteractiveSignals guard;
  // The child must not run the parent's cleanup handler (and remove the core the debugger is about
  // to read) if a signal reaches it before execvp: blocked across fork, disarmed in the child.
  std::optional<BlockCleanupSignals> blocked(std::in_place);
  const pid_t pid = ::fork();
  if (pid == 0) {
    guard.restore();  // first: it puts the cleanup handler back on SIGINT
    disarm_signal_cleanup();
    blocked.reset();
    exec_status.reset();
    ::execvp(cargv[0], cargv.data());
    const int e = errno;
    [[maybe_unused]] const ssize_t w = ::write(exec_report.get(), &e, sizeof e);
    ::_exit(127);
  }
  blocked.reset();
  if (pid < 0) throw DumpctlError(std::string("fork: ") + std::strerror(errno));
  exec_report.reset();  // so that the read below sees EOF once execvp succeeds
  int exec_errno = 0;
  ssize_t got = 0;
  do {
    got = ::read(exec_status.get(), &exec_errno, sizeof exec_errno);
  } while (got < 0 && errno == EINTR);
  exec_status.reset();

  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) throw DumpctlError(std::string("waitpid: ") + std::strerror(errno));
  }
  if (got == static_cast<ssize_t>(sizeof exec_errno)) {
    throw DumpctlError("cannot run " + escape_for_display(argv[0]) + ": " +
                       std::strerror(exec_errno));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

/// Decompresses the core of `r` into a new sparse file in temp_dir(), closed and ready to read; the
/// file is removed when the returned object is destroyed, or when SIGINT, SIGTERM or SIGHUP kill
/// dumpctl (while the debugger runs, SIGINT and SIGQUIT are the debugger's and are ignored here).
std::unique_ptr<TempFile> decompress_to_temp(OpenCore& core, const DumpRecord& r) {
  auto copy = std::make_unique<TempFile>(temp_dir(), "dumpctl-core-");
  write_core_sparse(core, r, *copy);  // holes for zero runs: untouched memory costs no disk
  return copy;
}

}  // namespace

int cmd_debug(const GlobalOptions& g, const DebugOptions& o, const Io& io) {
  const std::string debugger = debugger_of(o.debugger);
  if (debugger.empty()) throw DumpctlError("--debugger must not be empty");
  std::vector<std::string> argv{debugger};
  for (auto& a : split_debugger_arguments(o.debugger_arguments)) argv.push_back(std::move(a));
  argv.insert(argv.end(), o.args.begin(), o.args.end());

  std::unique_ptr<DumpSource> source = open_source(g, io.err);
  bool more = false;  // coredumpctl's debug does not say so
  const DumpRecord r = newest_selected(*source, o.select, more);
  if (!o.select.quiet) {  // coredumpctl 252's run_debug(): the info, then a blank line
    const std::optional<DumpRecord> full = source->get(r.id);
    print_info_record(*source, full ? *full : r, ShortIds(std::vector<std::string>{}), InfoOptions{}, io);
    io.out << '\n';
  }
  source->require_core(r);
  if (const auto s = short_core_from_extra(r.extra); s && r.state == DumpState::Truncated) {
    io.err << "dumpctl: warning: the core of coredump " << escape_for_display(r.id) << " is short: " << s->received
           << " of " << s->expected << " bytes arrived (" << escape_for_display(r.reason)
           << "); the debugger will see missing memory and segments extending past the end of the file\n";
  } else if (r.state == DumpState::Truncated) {
    io.err << "dumpctl: warning: the core of coredump " << escape_for_display(r.id)
           << " is truncated; the debugger will see missing memory\n";
  }

  // A raw core in the store is read in place; a zstd one, or any core the query service passed as
  // a descriptor, through a private temporary copy (0600, this user's), removed when this returns.
  std::unique_ptr<TempFile> copy;
  std::string core_path;
  if (source->kind() == SourceKind::Store && r.compression == kCompressionNone) {
    core_path = require_raw_core(g.store, r);
  } else {
    OpenCore core = source->open_core(r);
    copy = decompress_to_temp(core, r);
    core_path = copy->path();
  }
  source.reset();  // no connection to the daemon (nor the index) stays open while the debugger runs

  if (const std::string exe = usable_exe(r.exe); !exe.empty()) {
    argv.push_back(exe);
  } else {
    io.err << "dumpctl: warning: executable " << escape_for_display(r.exe)
           << " is gone; running the debugger on the core alone\n";
  }
  argv.push_back("-c");
  argv.push_back(core_path);

  io.out.flush();
  io.err.flush();
  return run_and_wait(argv);
}

}  // namespace coredumpd::cli
