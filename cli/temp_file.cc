#include "cli/temp_file.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

#include "cli/dumpctl.h"
#include "cli/format.h"
#include "util/text.h"

namespace coredumpd::cli {

TempFile::TempFile(const std::string& dir, const std::string& prefix) {
  std::string name = dir;
  if (name.empty()) name = ".";
  if (name.back() != '/') name.push_back('/');
  name += prefix + "XXXXXX";
  std::vector<char> buf(name.begin(), name.end());
  buf.push_back('\0');
  fd_.reset(::mkostemp(buf.data(), O_CLOEXEC));
  if (!fd_) {
    throw DumpctlError("cannot create a temporary file in " + escape_for_display(dir) + ": " +
                       std::strerror(errno));
  }
  path_ = buf.data();
}

TempFile::~TempFile() {
  fd_.reset();
  if (owned_) ::unlink(path_.c_str());
}

void TempFile::close() {
  if (fd_.close() != 0) {
    throw DumpctlError("cannot write " + escape_for_display(path_) + ": " + std::strerror(errno));
  }
}

void TempFile::rename_to(const std::string& target) {
  close();
  if (std::rename(path_.c_str(), target.c_str()) != 0) {
    throw DumpctlError("cannot rename " + escape_for_display(path_) + " to " +
                       escape_for_display(target) + ": " + std::strerror(errno));
  }
  owned_ = false;
}

}  // namespace coredumpd::cli
