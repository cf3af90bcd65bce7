// Scoped ownership of a file descriptor: nothing in coredumpd closes a descriptor by hand.
#pragma once

#include <unistd.h>

#include <utility>

namespace coredumpd {

/// Owns one file descriptor (or none, -1) and closes it on destruction. Move-only.
class UniqueFd {
 public:
  UniqueFd() = default;
  /// Takes ownership of `fd` (may be -1).
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    reset(other.release());
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { reset(); }

  int get() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }
  /// Gives up ownership and returns the descriptor.
  int release() { return std::exchange(fd_, -1); }
  /// Closes the owned descriptor (if any) and takes `fd`.
  void reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }
  /// Closes the owned descriptor now and returns close(2)'s result (0, or -1 with errno set), for
  /// callers that must see a deferred write error. Owns nothing afterwards, even on failure.
  int close() {
    const int fd = release();
    return fd >= 0 ? ::close(fd) : 0;
  }

 private:
  int fd_ = -1;
};

}  // namespace coredumpd
