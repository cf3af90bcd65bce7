// An owned file descriptor, closed exactly once. The fake kernel never closes a descriptor by hand.
#pragma once

#include <unistd.h>

#include <utility>

namespace coredumpd::fake_kernel {

/// Owns one file descriptor (or none, -1) and closes it on destruction. Move-only.
class ScopedFd {
 public:
  /// Takes ownership of `fd` (-1: owns nothing).
  explicit ScopedFd(int fd = -1) noexcept : fd_(fd) {}
  /// Closes the descriptor, if any.
  ~ScopedFd() { reset(); }
  /// Takes over `other`'s descriptor; `other` is left owning nothing.
  ScopedFd(ScopedFd&& other) noexcept : fd_(other.release()) {}
  /// Closes ours, then takes over `other`'s descriptor.
  ScopedFd& operator=(ScopedFd&& other) noexcept {
    if (this != &other) reset(other.release());
    return *this;
  }
  ScopedFd(const ScopedFd&) = delete;
  ScopedFd& operator=(const ScopedFd&) = delete;

  /// The descriptor, still owned (-1 if none).
  [[nodiscard]] int get() const noexcept { return fd_; }
  /// True if a descriptor is owned.
  [[nodiscard]] bool valid() const noexcept { return fd_ >= 0; }
  /// Gives up ownership without closing; returns the descriptor.
  int release() noexcept { return std::exchange(fd_, -1); }
  /// Closes the owned descriptor (if any) and takes ownership of `fd`.
  void reset(int fd = -1) noexcept {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_;
};

}  // namespace coredumpd::fake_kernel
