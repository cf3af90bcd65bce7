#include "analyzer/sandbox.h"

#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <system_error>

#include <nlohmann/json.hpp>

namespace coredumpd::analyzer {
namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAsan = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kAsan = true;
#else
constexpr bool kAsan = false;
#endif
#else
constexpr bool kAsan = false;
#endif

[[noreturn]] void fail(const char* step, int err = errno) {
  throw std::system_error(err, std::generic_category(), std::string("sandbox: ") + step);
}

void set_limit(int resource, rlim_t value, const char* step) {
  const rlimit limit{value, value};
  if (::setrlimit(resource, &limit) != 0) fail(step);
}

// What glibc, libstdc++, libelf/libdw (reading ELF files and the core, mmap of modules), libzstd
// and the report's output need. Names unknown on the build's architecture are skipped.
constexpr const char* kAllowed[] = {
    "read", "pread64", "readv", "preadv", "write", "pwrite64", "writev", "lseek", "close",
    "fstat", "newfstatat", "statx", "stat", "lstat", "readlink", "readlinkat", "getdents64",
    "access", "faccessat", "faccessat2", "getcwd", "fcntl", "dup", "ftruncate",
    "mmap", "munmap", "mremap", "mprotect", "madvise", "brk",
    "exit", "exit_group", "rt_sigreturn", "rt_sigprocmask", "rt_sigaction", "sigaltstack",
    "getpid", "gettid", "getuid", "geteuid", "getgid", "getegid", "getrusage", "getrlimit",
    "prlimit64", "sched_getaffinity", "sched_yield", "clock_gettime", "clock_getres", "gettimeofday",
    "nanosleep", "clock_nanosleep", "futex", "set_robust_list", "get_robust_list", "rseq",
    "set_tid_address", "getrandom", "uname", "sysinfo", "arch_prctl", "ioctl",
    "sched_getscheduler", "sched_getparam",
};
// Debuginfod (libcurl): sockets, its resolver thread, and writes to its cache.
constexpr const char* kNetwork[] = {
    "socket", "connect", "sendto", "recvfrom", "sendmsg", "recvmsg", "sendmmsg", "recvmmsg",
    "getsockopt", "setsockopt", "getsockname", "getpeername", "bind", "shutdown", "socketpair",
    "poll", "ppoll", "select", "pselect6", "epoll_create1", "epoll_ctl", "epoll_wait", "epoll_pwait",
    "pipe", "pipe2", "eventfd2", "clone", "clone3", "mkdir", "mkdirat", "rename", "renameat",
    "renameat2", "unlink", "unlinkat", "utimensat", "fsync", "fdatasync", "fchmod", "flock",
    "fallocate", "open", "openat", "dup2", "dup3", "sched_setaffinity", "membarrier",
};

void add(scmp_filter_ctx ctx, const char* name, unsigned count = 0, const scmp_arg_cmp* args = nullptr) {
  const int nr = ::seccomp_syscall_resolve_name(name);
  if (nr == __NR_SCMP_ERROR) return;
  const int rc = ::seccomp_rule_add_array(ctx, SCMP_ACT_ALLOW, nr, count, args);
  if (rc < 0) fail(("seccomp rule for " + std::string(name)).c_str(), -rc);
}

void apply_seccomp(bool network) {
  scmp_filter_ctx ctx = ::seccomp_init(SCMP_ACT_ERRNO(EPERM));
  if (ctx == nullptr) fail("seccomp_init", ENOMEM);
  struct Release {
    scmp_filter_ctx ctx;
    ~Release() { ::seccomp_release(ctx); }
  } release{ctx};
  for (const char* name : kAllowed) add(ctx, name);
  // Signals to itself only (abort(), raise()); never to another process.
  const auto self = static_cast<scmp_datum_t>(::getpid());
  const scmp_arg_cmp to_self = SCMP_A0(SCMP_CMP_EQ, self);
  add(ctx, "kill", 1, &to_self);
  add(ctx, "tgkill", 1, &to_self);
  add(ctx, "tkill", 1, &to_self);  // tkill's argument is a TID: the main thread's is the PID
  if (network) {
    for (const char* name : kNetwork) add(ctx, name);
  } else {
    // Reading files only: the temp file is already open.
    const scmp_datum_t writes = O_WRONLY | O_RDWR | O_CREAT | O_TRUNC | O_APPEND;
    const scmp_arg_cmp open_ro = SCMP_A1(SCMP_CMP_MASKED_EQ, writes, 0);
    const scmp_arg_cmp openat_ro = SCMP_A2(SCMP_CMP_MASKED_EQ, writes, 0);
    add(ctx, "open", 1, &open_ro);
    add(ctx, "openat", 1, &openat_ro);
  }
  if (kAsan) {
    // UBSan's vptr check tests whether memory is readable by writing it to a pipe (else: "invalid
    // vptr"); prctl and sched_setaffinity for the runtime. LeakSanitizer is off in the analyzer
    // (main.cc): its exit check would ptrace the analyzer's threads.
    for (const char* name : {"pipe", "pipe2", "prctl", "sched_setaffinity"}) add(ctx, name);
  }
  if (const int rc = ::seccomp_load(ctx); rc < 0) fail("seccomp_load", -rc);
}

// The address space in use now (/proc/self/statm's size), 0 if unknown.
std::uint64_t address_space_bytes() {
  std::ifstream statm("/proc/self/statm");
  std::uint64_t pages = 0;
  statm >> pages;
  return pages * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
}

}  // namespace

std::vector<std::string> apply_sandbox(const SandboxPolicy& policy) {
  std::vector<std::string> warnings;
  // Below what the analyzer already maps, every later allocation (and stack growth) would fail.
  if (const auto in_use = address_space_bytes(); policy.memory_bytes > 0 && !kAsan &&
                                                 policy.memory_bytes < in_use + kMinHeadroomBytes) {
    throw std::runtime_error("sandbox: memory_bytes " + std::to_string(policy.memory_bytes) +
                             " is below what the analyzer needs to start (" + std::to_string(in_use) +
                             " bytes mapped, plus " + std::to_string(kMinHeadroomBytes) + ")");
  }
  const bool root = ::geteuid() == 0;
  if (!policy.network) {
    if (root) {
      if (::unshare(CLONE_NEWNET) != 0) fail("unshare(CLONE_NEWNET)");
    } else if (::unshare(CLONE_NEWUSER | CLONE_NEWNET) != 0) {
      // Unprivileged user namespaces may be off; the seccomp filter still refuses sockets.
      warnings.push_back(std::string("sandbox: no network namespace (") + std::strerror(errno) +
                         "); sockets are refused by seccomp");
    }
  }
  if (root) {
    if (policy.run_as_gid && *policy.run_as_gid != ::getegid()) {
      if (::setgroups(0, nullptr) != 0) fail("setgroups");
      if (::setresgid(*policy.run_as_gid, *policy.run_as_gid, *policy.run_as_gid) != 0) fail("setresgid");
    }
    if (policy.run_as_uid && *policy.run_as_uid != ::geteuid()) {
      if (::setresuid(*policy.run_as_uid, *policy.run_as_uid, *policy.run_as_uid) != 0) fail("setresuid");
    }
  }
  if (policy.cpu_seconds > 0) set_limit(RLIMIT_CPU, policy.cpu_seconds, "RLIMIT_CPU");
  // ASan reserves terabytes of address space at start: an RLIMIT_AS would fail every later mmap.
  if (policy.memory_bytes > 0 && !kAsan) set_limit(RLIMIT_AS, policy.memory_bytes, "RLIMIT_AS");
  if (policy.memory_bytes > 0 && kAsan) warnings.push_back("sandbox: no RLIMIT_AS under ASan");
  // Writes past the bound fail with EFBIG rather than killing the analyzer with SIGXFSZ.
  std::signal(SIGXFSZ, SIG_IGN);
  set_limit(RLIMIT_FSIZE, policy.file_bytes, "RLIMIT_FSIZE");
  set_limit(RLIMIT_CORE, 0, "RLIMIT_CORE");
  set_limit(RLIMIT_NOFILE, 64, "RLIMIT_NOFILE");
  if (policy.idle) {
    const sched_param param{};
    if (::sched_setscheduler(0, SCHED_IDLE, &param) != 0) fail("SCHED_IDLE");
    constexpr int kWhoProcess = 1, kClassIdle = 3, kClassShift = 13;  // <linux/ioprio.h>
    if (::syscall(SYS_ioprio_set, kWhoProcess, 0, kClassIdle << kClassShift) != 0) {
      warnings.push_back(std::string("sandbox: idle I/O class not set: ") + std::strerror(errno));
    }
  }
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) fail("PR_SET_NO_NEW_PRIVS");
  if (::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) fail("PR_SET_DUMPABLE");
  apply_seccomp(policy.network);
  return warnings;
}

std::string sandbox_self_check() {
  auto err = [](long rc) { return rc < 0 ? std::string(std::strerror(errno)) : std::string("allowed"); };
  nlohmann::json j;
  j["socket_inet"] = err(::socket(AF_INET, SOCK_STREAM, 0));
  j["socket_unix"] = err(::socket(AF_UNIX, SOCK_STREAM, 0));
  char* const argv[] = {const_cast<char*>("/bin/true"), nullptr};
  j["execve"] = err(::execve("/bin/true", argv, environ));
  j["ptrace"] = err(::ptrace(PTRACE_TRACEME, 0, nullptr, nullptr));
  j["kill_init"] = err(::kill(1, 0));
  j["open_write"] = err(::open("/tmp/coredumpd-analyze-self-check", O_WRONLY | O_CREAT, 0600));
  j["open_read"] = err(::open("/proc/self/status", O_RDONLY));
  j["uid"] = ::getuid();
  j["gid"] = ::getgid();
  // prctl itself is refused: the kernel's own account of the process.
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.starts_with("NoNewPrivs:")) j["no_new_privs"] = std::stoi(line.substr(11));
    if (line.starts_with("Seccomp:")) j["seccomp_mode"] = std::stoi(line.substr(8));
  }
  j["sched_idle"] = ::sched_getscheduler(0) == SCHED_IDLE;
  rlimit as{}, cpu{}, core{};
  ::getrlimit(RLIMIT_AS, &as);
  ::getrlimit(RLIMIT_CPU, &cpu);
  ::getrlimit(RLIMIT_CORE, &core);
  j["rlimit_as"] = as.rlim_cur == RLIM_INFINITY ? -1 : static_cast<std::int64_t>(as.rlim_cur);
  j["rlimit_cpu"] = cpu.rlim_cur == RLIM_INFINITY ? -1 : static_cast<std::int64_t>(cpu.rlim_cur);
  j["rlimit_core"] = static_cast<std::int64_t>(core.rlim_cur);
  j["asan"] = kAsan;
  return j.dump();
}

}  // namespace coredumpd::analyzer
