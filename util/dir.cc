#include "util/dir.h"

#include <dirent.h>
#include <fcntl.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "util/unique_fd.h"

namespace coredumpd {

namespace {

struct DirCloser {
  void operator()(DIR* d) const { ::closedir(d); }
};

}  // namespace

std::optional<DirError> for_each_dir_entry(int dirfd, const char* path,
                                           const std::function<bool(std::string_view name)>& fn) {
  UniqueFd fd(::openat(dirfd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd) return DirError{DirError::Step::Open, errno};
  const std::unique_ptr<DIR, DirCloser> dir(::fdopendir(fd.get()));
  if (!dir) return DirError{DirError::Step::Open, errno};
  fd.release();  // closedir closes it now
  while (true) {
    errno = 0;
    const dirent* e = ::readdir(dir.get());
    if (e == nullptr) break;
    if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
    if (!fn(e->d_name)) return std::nullopt;
  }
  if (errno != 0) return DirError{DirError::Step::Read, errno};
  return std::nullopt;
}

}  // namespace coredumpd
