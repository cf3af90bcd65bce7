// util/fd_passing.h: descriptors across a socketpair, extra descriptors closed, truncation.
#include "util/fd_passing.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

namespace coredumpd {
namespace {

struct Pair {
  UniqueFd a, b;
  Pair() {
    int sv[2];
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    a.reset(sv[0]);
    b.reset(sv[1]);
  }
};

UniqueFd memfd_with(const std::string& text) {
  UniqueFd fd(::memfd_create("fd_passing_test", MFD_CLOEXEC));
  EXPECT_TRUE(fd);
  EXPECT_EQ(::write(fd.get(), text.data(), text.size()), static_cast<ssize_t>(text.size()));
  return fd;
}

// Descriptors this process has open.
std::size_t open_fds() {
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) ++n;
  return n;
}

TEST(FdPassing, DescriptorTravelsWithTheFirstByte) {
  Pair p;
  UniqueFd file = memfd_with("core bytes");
  ASSERT_EQ(send_with_fd(p.a.get(), "hello\n", file.get()), 6);
  char buf[64];
  UniqueFd got;
  const ssize_t n = recv_with_fd(p.b.get(), buf, sizeof(buf), &got);
  ASSERT_EQ(n, 6);
  EXPECT_EQ(std::string(buf, 6), "hello\n");
  ASSERT_TRUE(got);
  EXPECT_NE(got.get(), file.get());
  EXPECT_EQ(::fcntl(got.get(), F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
  char content[32] = {};
  EXPECT_EQ(::pread(got.get(), content, sizeof(content), 0), 10);
  EXPECT_STREQ(content, "core bytes");
}

TEST(FdPassing, WithoutDescriptor) {
  Pair p;
  ASSERT_EQ(send_with_fd(p.a.get(), "abc", -1), 3);
  char buf[8];
  UniqueFd got;
  EXPECT_EQ(recv_with_fd(p.b.get(), buf, sizeof(buf), &got), 3);
  EXPECT_FALSE(got);
  p.a.reset();
  EXPECT_EQ(recv_with_fd(p.b.get(), buf, sizeof(buf), &got), 0);  // end of stream
}

// Sends one byte with all of `fds` in one SCM_RIGHTS message, as a peer other than
// send_with_fd() may. Returns sendmsg()'s result.
ssize_t send_raw_fds(int sock, const std::vector<int>& fds) {
  char byte = 'x';
  iovec iov{&byte, 1};
  std::vector<char> control(CMSG_SPACE(fds.size() * sizeof(int)));
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control.data();
  msg.msg_controllen = control.size();
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(fds.size() * sizeof(int));
  std::memcpy(CMSG_DATA(c), fds.data(), fds.size() * sizeof(int));
  return ::sendmsg(sock, &msg, 0);
}

// A peer that attaches several descriptors: the first is kept, the others closed.
TEST(FdPassing, ExtraDescriptorsAreClosed) {
  Pair p;
  UniqueFd f1 = memfd_with("1"), f2 = memfd_with("2"), f3 = memfd_with("3");
  ASSERT_EQ(send_raw_fds(p.a.get(), {f1.get(), f2.get(), f3.get()}), 1);

  const std::size_t before = open_fds();
  char buf[4];
  UniqueFd got;
  ASSERT_EQ(recv_with_fd(p.b.get(), buf, sizeof(buf), &got), 1);
  ASSERT_TRUE(got);
  char first = 0;
  EXPECT_EQ(::pread(got.get(), &first, 1, 0), 1);
  EXPECT_EQ(first, '1');
  EXPECT_EQ(open_fds(), before + 1);  // only `got`
}

// More descriptors than recv_with_fd has room for: MSG_CTRUNC, EBADMSG, nothing leaked.
TEST(FdPassing, TruncatedControlIsEbadmsg) {
  Pair p;
  constexpr int kCount = 64;
  UniqueFd file = memfd_with("x");
  ASSERT_EQ(send_raw_fds(p.a.get(), std::vector<int>(kCount, file.get())), 1);

  const std::size_t before = open_fds();
  char buf[4];
  UniqueFd got;
  errno = 0;
  EXPECT_EQ(recv_with_fd(p.b.get(), buf, sizeof(buf), &got), -1);
  EXPECT_EQ(errno, EBADMSG);
  EXPECT_FALSE(got);
  EXPECT_EQ(open_fds(), before);
}

TEST(FdPassing, PeerGoneIsEpipeWithoutSignal) {
  Pair p;
  p.b.reset();
  errno = 0;
  EXPECT_EQ(send_with_fd(p.a.get(), "x", -1), -1);  // SIGPIPE would kill the test
  EXPECT_EQ(errno, EPIPE);
}

TEST(FdPassing, NonBlockingPartialSend) {
  Pair p;
  const int size = 4096;
  ASSERT_EQ(::setsockopt(p.a.get(), SOL_SOCKET, SO_SNDBUF, &size, sizeof(size)), 0);
  ASSERT_EQ(::fcntl(p.a.get(), F_SETFL, O_NONBLOCK), 0);
  UniqueFd file = memfd_with("x");
  const std::string big(4 << 20, 'z');
  const ssize_t n = send_with_fd(p.a.get(), big, file.get());
  ASSERT_GT(n, 0);
  EXPECT_LT(n, static_cast<ssize_t>(big.size()));
  // Full now: nothing more goes, and that is EAGAIN.
  errno = 0;
  EXPECT_EQ(send_with_fd(p.a.get(), big, -1), -1);
  EXPECT_TRUE(errno == EAGAIN || errno == EWOULDBLOCK);
  char buf[256];
  UniqueFd got;
  ASSERT_GT(recv_with_fd(p.b.get(), buf, sizeof(buf), &got), 0);
  EXPECT_TRUE(got);
}

}  // namespace
}  // namespace coredumpd
