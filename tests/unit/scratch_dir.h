// A fresh directory under /var/tmp (a disk filesystem where /tmp may be tmpfs: the spool's O_DIRECT
// and holes are tested where they matter), opened as a directory fd; removed with its contents.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>

namespace coredumpd::test {

class ScratchDir {
 public:
  /// Creates /var/tmp/<prefix>.XXXXXX and opens it. Throws std::runtime_error if it cannot.
  explicit ScratchDir(const std::string& prefix) {
    std::string tmpl = "/var/tmp/" + prefix + ".XXXXXX";
    if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp " + tmpl);
    path_ = tmpl;
    fd_ = ::open(path_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd_ < 0) throw std::runtime_error("open " + path_);
  }
  ~ScratchDir() {
    ::close(fd_);
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::string& path() const { return path_; }
  int fd() const { return fd_; }

 private:
  std::string path_;
  int fd_ = -1;
};

}  // namespace coredumpd::test
