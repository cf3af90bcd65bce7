#include "daemon/store_health.h"

#include <sys/stat.h>
#include <sys/statvfs.h>

#include <cerrno>
#include <cstring>

namespace coredumpd {

std::optional<std::string> store_problem(int store_dirfd) {
  struct stat st{};
  if (::fstat(store_dirfd, &st) < 0) return std::string("store directory: ") + std::strerror(errno);
  if (st.st_nlink == 0) return std::string("store directory was removed");
  struct statvfs vfs{};
  if (::fstatvfs(store_dirfd, &vfs) < 0) return std::string("store filesystem: ") + std::strerror(errno);
  if (vfs.f_flag & ST_RDONLY) return std::string("store filesystem is read-only");
  const unsigned long long avail = static_cast<unsigned long long>(vfs.f_bavail) * vfs.f_frsize;
  if (avail < kStoreMinFreeBytes) return "store filesystem is full (" + std::to_string(avail) + " bytes free)";
  return std::nullopt;
}

}  // namespace coredumpd
