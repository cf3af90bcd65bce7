// A uniquely named file that is removed unless kept: partial outputs never survive an error.
#pragma once

#include <string>

#include "util/unique_fd.h"

namespace coredumpd::cli {

/// A new, empty file created with mkostemp (mode 0600, O_CLOEXEC) from `dir` and a name prefix.
/// The destructor closes the descriptor and unlinks the file unless release() was called.
class TempFile {
 public:
  /// Creates `<dir>/<prefix>XXXXXX`. Throws DumpctlError if it cannot be created.
  TempFile(const std::string& dir, const std::string& prefix);
  ~TempFile();
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;

  /// The open descriptor (read-write), or -1 after close().
  int fd() const { return fd_.get(); }
  /// The file's path.
  const std::string& path() const { return path_; }
  /// Closes the descriptor, reporting deferred write errors. Throws DumpctlError.
  void close();
  /// Renames the (closed) file to `target` and stops owning it. Throws DumpctlError.
  void rename_to(const std::string& target);

 private:
  std::string path_;
  UniqueFd fd_;
  bool owned_ = true;
};

}  // namespace coredumpd::cli
