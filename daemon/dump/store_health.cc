#include "daemon/dump/store_health.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include <cerrno>
#include <cstring>

#include "util/unique_fd.h"

namespace coredumpd {

std::optional<std::string> store_problem(int store_dirfd) {
  struct stat st{};
  if (::fstat(store_dirfd, &st) < 0) return std::string("store directory: ") + std::strerror(errno);
  // Not a directory: the placeholder the server holds while the store's path is missing.
  if (!S_ISDIR(st.st_mode)) return std::string("store directory is missing (its filesystem not mounted yet?)");
  if (st.st_nlink == 0) return std::string("store directory was removed");
  struct statvfs vfs{};
  if (::fstatvfs(store_dirfd, &vfs) < 0) return std::string("store filesystem: ") + std::strerror(errno);
  if (vfs.f_flag & ST_RDONLY) return std::string("store filesystem is read-only");
  const unsigned long long avail = static_cast<unsigned long long>(vfs.f_bavail) * vfs.f_frsize;
  if (avail < kStoreMinFreeBytes) return "store filesystem is full (" + std::to_string(avail) + " bytes free)";
  // A filesystem can refuse writes while statvfs still says rw: ext4 after an error with
  // errors=remount-ro (or `mount -o remount,abort`) reports EROFS/EIO only when written to. An
  // unnamed O_TMPFILE inode (gone on close, never visible in the store) asks the filesystem itself.
  UniqueFd probe(::openat(store_dirfd, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600));
  if (!probe && errno != EOPNOTSUPP && errno != EISDIR) {
    if (errno == EROFS) return std::string("store filesystem is read-only (refuses writes)");
    return std::string("store cannot create files: ") + std::strerror(errno);
  }
  return std::nullopt;
}

}  // namespace coredumpd
