// fake-crasher: the crashing task of the fake kernel (tests/fake_kernel/crasher.h starts it). It
// write-locks a file the way it is told (POSIX, OFD or flock), shares that lock the way it is told
// (a dup in its own table, a forked process, a CLONE_FILES process), starts idle threads, then
// serves its controller: it connect()s to the coredump socket (so the server's SO_PEERCRED and
// SO_PEERPIDFD name this process, as they name the crashing task) and, on request, closes its fd
// table the way the CLOSE_FILES RFC kernel does: every thread switches to an empty table and drops
// the old one (close_range(0, ~0U, CLOSE_RANGE_UNSHARE) in each thread), so the old table's files are
// closed only when no one else (a CLONE_FILES process) still uses it. It never crashes for real: the
// controller SIGKILLs it once the dump is over, as the kernel ends the task.
//
// Started with descriptors 3..6 as in crasher_shared.h. Exit status 1 (with a message) on a setup
// failure before "ready".
#include <fcntl.h>
#include <linux/close_range.h>
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>

#include "tests/fake_kernel/crasher_shared.h"

namespace abi = coredumpd::fake_kernel::crasher_abi;

namespace {

abi::SharedPage* page = nullptr;

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "fake-crasher: %s: %s\n", what.c_str(), std::strerror(errno));
  std::_Exit(1);
}

void futex_wait(std::atomic<std::uint32_t>& word, std::uint32_t while_value) {
  ::syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), FUTEX_WAIT, while_value, nullptr, nullptr, 0);
}

void futex_wake(std::atomic<std::uint32_t>& word) {
  ::syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

// This thread switches to an empty fd table and drops its reference to the old one (fs/file.c
// __close_range: with CLOSE_RANGE_UNSHARE and the whole range, nothing is copied). Then it counts.
void close_my_table() {
  ::syscall(SYS_close_range, 0U, ~0U, CLOSE_RANGE_UNSHARE);
  page->closed.fetch_add(1);
  futex_wake(page->closed);
}

void idle_thread() {
  page->threads_ready.fetch_add(1);
  while (page->go_close.load() == 0) futex_wait(page->go_close, 0);
  close_my_table();
  for (;;) ::pause();
}

int take_lock(int fd, const std::string& kind) {
  struct flock fl{};
  fl.l_type = F_WRLCK;
  fl.l_whence = SEEK_SET;
  if (kind == "posix") return ::fcntl(fd, F_SETLK, &fl);
  if (kind == "ofd") return ::fcntl(fd, F_OFD_SETLK, &fl);
  return ::flock(fd, LOCK_EX | LOCK_NB);
}

// The sharing process: keeps every inherited descriptor until the controller hangs up the release
// pipe, then says whether the lock's descriptor is still open ('O') or was closed under it ('C').
[[noreturn]] void hold_until_released(int lock_fd) {
  char c = 0;
  while (::read(abi::kReleaseFd, &c, 1) < 0 && errno == EINTR) {
  }
  c = ::fcntl(lock_fd, F_GETFD) < 0 ? 'C' : 'O';
  (void)!::write(abi::kResultFd, &c, 1);
  std::_Exit(0);
}

int lock_fd_for_clone = -1;
int clone_child(void*) { hold_until_released(lock_fd_for_clone); }

// "c<path>": connect a non-blocking stream socket (as the kernel does) and hand it over.
void serve_connect(const std::string& path) {
  int err = 0;
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (fd < 0) {
    err = errno;
  } else if (path.size() >= sizeof(addr.sun_path)) {
    err = ENAMETOOLONG;
  } else {
    std::memcpy(addr.sun_path, path.data(), path.size());
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0 && errno != EINPROGRESS) err = errno;
  }
  iovec iov{&err, sizeof(err)};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  if (err == 0) {
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &fd, sizeof(int));
  }
  (void)::sendmsg(abi::kControlFd, &msg, MSG_NOSIGNAL);
  if (fd >= 0) ::close(fd);  // the kernel's socket is in no fd table of the task
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"fake-crasher: the crashing task of the fake kernel (tests/fake_kernel/crasher.h)"};
  std::string lock_path, kind = "posix", share = "none";
  int threads = 0;
  app.add_option("--lock", lock_path, "file to write-lock")->required();
  app.add_option("--kind", kind, "posix, ofd or flock")->check(CLI::IsMember({"posix", "ofd", "flock"}));
  app.add_option("--share", share, "none, dup, fork or files")->check(CLI::IsMember({"none", "dup", "fork", "files"}));
  app.add_option("--threads", threads, "extra idle threads")->check(CLI::Range(0, 64));
  CLI11_PARSE(app, argc, argv);

  void* mem = ::mmap(nullptr, sizeof(abi::SharedPage), PROT_READ | PROT_WRITE, MAP_SHARED, abi::kSharedFd, 0);
  if (mem == MAP_FAILED) die("mmap of the shared page");
  page = static_cast<abi::SharedPage*>(mem);

  const int fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT, 0600);
  if (fd < 0) die("open " + lock_path);
  if (take_lock(fd, kind) != 0) die(kind + " lock on " + lock_path);

  if (share == "dup" && ::dup(fd) < 0) die("dup");
  if (share == "fork") {
    const pid_t pid = ::fork();  // single-threaded here: no threads are started yet
    if (pid < 0) die("fork");
    if (pid == 0) {
      ::close(abi::kControlFd);
      hold_until_released(fd);
    }
    page->sharer_pid = pid;
  }
  if (share == "files") {
    static std::vector<char> stack(256 * 1024);
    lock_fd_for_clone = fd;
    const pid_t pid = ::clone(clone_child, stack.data() + stack.size(), CLONE_FILES | SIGCHLD, nullptr);
    if (pid < 0) die("clone(CLONE_FILES)");
    page->sharer_pid = pid;
  }
  for (int i = 0; i < threads; ++i) std::thread(idle_thread).detach();
  while (page->threads_ready.load() < threads) std::this_thread::yield();

  const char ready = 'r';
  if (::send(abi::kControlFd, &ready, 1, MSG_NOSIGNAL) != 1) die("ready");
  for (;;) {
    char buf[512];
    const ssize_t n = ::recv(abi::kControlFd, buf, sizeof(buf), 0);
    if (n <= 0) return 0;  // the controller is gone
    if (buf[0] == abi::kCmdConnect) serve_connect(std::string(buf + 1, static_cast<std::size_t>(n - 1)));
    if (buf[0] == abi::kCmdClose) {
      page->go_close = 1;
      futex_wake(page->go_close);
      close_my_table();
      for (;;) ::pause();  // the task stays until the kernel (here: the controller) ends it
    }
  }
}
