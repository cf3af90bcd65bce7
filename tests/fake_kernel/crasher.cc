#include "tests/fake_kernel/crasher.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <poll.h>
#include <signal.h>
#include <sys/file.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <new>
#include <vector>

#include "tests/fake_kernel/crasher_shared.h"

extern char** environ;

namespace coredumpd::fake_kernel {

namespace abi = crasher_abi;
using Clock = std::chrono::steady_clock;

namespace {

int ms_left(Clock::time_point until) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now()).count();
  return left < 0 ? 0 : static_cast<int>(left);
}

bool readable_within(int fd, Clock::time_point until) {
  pollfd p{fd, POLLIN, 0};
  int r;
  while ((r = ::poll(&p, 1, ms_left(until))) < 0 && errno == EINTR) {
  }
  return r > 0;
}

int pidfd_open(pid_t pid) { return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)); }

std::string errno_text(const std::string& what) { return what + ": " + std::strerror(errno); }

}  // namespace

const char* lock_kind_name(LockKind kind) {
  switch (kind) {
    case LockKind::Posix: return "posix";
    case LockKind::Ofd: return "ofd";
    case LockKind::Flock: return "flock";
  }
  return "?";
}

const char* lock_share_name(LockShare share) {
  switch (share) {
    case LockShare::None: return "none";
    case LockShare::Dup: return "dup";
    case LockShare::Fork: return "fork";
    case LockShare::Files: return "files";
  }
  return "?";
}

std::optional<Crasher> Crasher::start(const CrasherSpec& spec, std::string& error, std::chrono::milliseconds timeout) {
  const auto until = Clock::now() + timeout;
  Crasher c;
  c.threads_ = spec.threads;
  ScopedFd memfd(::memfd_create("fake-crasher", MFD_CLOEXEC));
  if (!memfd.valid() || ::ftruncate(memfd.get(), 4096) != 0) {
    error = errno_text("memfd");
    return std::nullopt;
  }
  void* mem = ::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, memfd.get(), 0);
  if (mem == MAP_FAILED) {
    error = errno_text("mmap");
    return std::nullopt;
  }
  c.page_ = new (mem) abi::SharedPage();

  int control[2], release[2], result[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, control) != 0) {
    error = errno_text("socketpair");
    return std::nullopt;
  }
  c.control_.reset(control[0]);
  ScopedFd child_control(control[1]);
  if (::pipe2(release, O_CLOEXEC) != 0 || ::pipe2(result, O_CLOEXEC) != 0) {
    error = errno_text("pipe2");
    return std::nullopt;
  }
  ScopedFd release_read(release[0]), result_write(result[1]);
  c.release_write_.reset(release[1]);
  c.result_read_.reset(result[0]);

  // Sources above the targets, so that no dup2 overwrites a source still to be copied.
  std::vector<ScopedFd> high;
  const int sources[] = {child_control.get(), memfd.get(), release_read.get(), result_write.get()};
  const int targets[] = {abi::kControlFd, abi::kSharedFd, abi::kReleaseFd, abi::kResultFd};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  for (std::size_t i = 0; i < 4; ++i) {
    high.emplace_back(::fcntl(sources[i], F_DUPFD_CLOEXEC, 16));
    posix_spawn_file_actions_adddup2(&actions, high.back().get(), targets[i]);
  }
  std::vector<std::string> args{spec.program, "--lock", spec.lock_path, "--kind", lock_kind_name(spec.kind),
                                "--share", lock_share_name(spec.share), "--threads", std::to_string(spec.threads)};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const int rc = ::posix_spawn(&c.pid_, spec.program.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    c.pid_ = -1;
    error = "posix_spawn " + spec.program + ": " + std::strerror(rc);
    return std::nullopt;
  }
  c.pidfd_.reset(pidfd_open(c.pid_));
  high.clear();
  child_control.reset();
  release_read.reset();
  result_write.reset();

  char ready = 0;
  if (!readable_within(c.control_.get(), until) || ::recv(c.control_.get(), &ready, 1, 0) != 1 || ready != 'r') {
    error = "fake-crasher did not lock " + spec.lock_path + " (" + lock_kind_name(spec.kind) + ", share " +
            lock_share_name(spec.share) + "): see its message above";
    return std::nullopt;  // the destructor kills and reaps it
  }
  if (const pid_t s = c.page_->sharer_pid.load(); s > 0) c.sharer_pidfd_.reset(pidfd_open(s));
  return std::optional<Crasher>(std::move(c));
}

Crasher::Crasher(Crasher&& o) noexcept
    : pid_(std::exchange(o.pid_, -1)),
      pidfd_(std::move(o.pidfd_)),
      control_(std::move(o.control_)),
      release_write_(std::move(o.release_write_)),
      result_read_(std::move(o.result_read_)),
      sharer_pidfd_(std::move(o.sharer_pidfd_)),
      page_(std::exchange(o.page_, nullptr)),
      threads_(o.threads_) {}

Crasher::~Crasher() {
  end();
  if (sharer_pidfd_.valid()) ::syscall(SYS_pidfd_send_signal, sharer_pidfd_.get(), SIGKILL, nullptr, 0);
  if (page_) ::munmap(page_, 4096);
}

pid_t Crasher::sharer_pid() const { return page_ ? page_->sharer_pid.load() : 0; }

ScopedFd Crasher::connect(const std::string& path, int& err, std::chrono::milliseconds timeout) {
  const auto until = Clock::now() + timeout;
  const std::string cmd = abi::kCmdConnect + path;
  if (::send(control_.get(), cmd.data(), cmd.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(cmd.size())) {
    err = errno;
    return ScopedFd();
  }
  if (!readable_within(control_.get(), until)) {
    err = ETIMEDOUT;
    return ScopedFd();
  }
  int their_err = 0;
  iovec iov{&their_err, sizeof(their_err)};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  if (::recvmsg(control_.get(), &msg, MSG_CMSG_CLOEXEC) != static_cast<ssize_t>(sizeof(their_err))) {
    err = errno ? errno : EPROTO;
    return ScopedFd();
  }
  const cmsghdr* c = CMSG_FIRSTHDR(&msg);
  if (their_err != 0 || !c || c->cmsg_type != SCM_RIGHTS) {
    err = their_err ? their_err : EPROTO;
    return ScopedFd();
  }
  int fd = -1;
  std::memcpy(&fd, CMSG_DATA(c), sizeof(int));
  err = 0;
  return ScopedFd(fd);
}

bool Crasher::close_files(std::chrono::milliseconds timeout) {
  const auto until = Clock::now() + timeout;
  if (::send(control_.get(), &abi::kCmdClose, 1, MSG_NOSIGNAL) != 1) return false;
  const auto want = static_cast<std::uint32_t>(threads_ + 1);
  for (std::uint32_t seen; (seen = page_->closed.load()) < want;) {
    const auto left = until - Clock::now();
    if (left <= Clock::duration::zero()) return false;
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(left).count();
    timespec ts{static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
    ::syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&page_->closed), FUTEX_WAIT, seen, &ts, nullptr, 0);
  }
  return true;
}

void Crasher::end() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
  pidfd_.reset();
  control_.reset();
}

std::optional<char> Crasher::sharer_verdict(std::chrono::milliseconds timeout) {
  if (sharer_pid() <= 0 || !result_read_.valid()) return std::nullopt;
  release_write_.reset();  // EOF on the release pipe: the sharer reports and exits
  char c = 0;
  if (!readable_within(result_read_.get(), Clock::now() + timeout) || ::read(result_read_.get(), &c, 1) != 1)
    return std::nullopt;
  return c;
}

bool lock_held(int fd, LockKind kind) {
  if (kind == LockKind::Flock) {
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0) {
      ::flock(fd, LOCK_UN);
      return false;
    }
    return true;
  }
  struct flock fl{};
  fl.l_type = F_WRLCK;
  fl.l_whence = SEEK_SET;
  if (::fcntl(fd, F_GETLK, &fl) != 0) return true;
  return fl.l_type != F_UNLCK;
}

}  // namespace coredumpd::fake_kernel
