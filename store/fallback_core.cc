#include "store/fallback_core.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>
#include <vector>

#include "store/core_accounting.h"
#include "store/record_extras.h"
#include "util/unique_fd.h"

namespace coredumpd {

namespace {

[[noreturn]] void fail(const std::string& what, int err) {
  throw std::system_error(err, std::generic_category(), what);
}

// Copies [from, to) of `in` to the same offsets of `out`.
void copy_range(int in, int out, off_t from, off_t to, std::vector<char>& buf, const std::string& name) {
  while (from < to) {
    const auto want = static_cast<std::size_t>(std::min<off_t>(to - from, static_cast<off_t>(buf.size())));
    const ssize_t n = ::pread(in, buf.data(), want, from);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("reading " + name, errno);
    }
    if (n == 0) fail("reading " + name + ": file shrank", EIO);
    for (ssize_t done = 0; done < n;) {
      const ssize_t w = ::pwrite(out, buf.data() + done, static_cast<std::size_t>(n - done), from + done);
      if (w < 0) {
        if (errno == EINTR) continue;
        fail("writing " + name + " into the store", errno);
      }
      done += w;
    }
    from += n;
  }
}

}  // namespace

bool core_in_fallback(const DumpRecord& r) {
  const auto it = r.extra.find(extras::kFallback);
  return it != r.extra.end() && it->is_object() && !it->contains("moved_us") && holds_core(r);
}

std::optional<std::string> fallback_dir_of(const DumpRecord& r) {
  if (!core_in_fallback(r)) return std::nullopt;
  const auto& f = r.extra.at(extras::kFallback);
  if (!f.contains("dir") || !f["dir"].is_string()) return std::nullopt;
  return f["dir"].get<std::string>();
}

std::uint64_t move_core_file(int from_dirfd, int to_dirfd, const std::string& name) {
  const UniqueFd in(::openat(from_dirfd, name.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!in) fail("opening " + name + " in the fallback", errno);
  struct stat st{};
  if (::fstat(in.get(), &st) < 0) fail("stat " + name, errno);
  struct stat there{};
  if (::fstatat(to_dirfd, name.c_str(), &there, AT_SYMLINK_NOFOLLOW) == 0) {
    // A stop between the link and the removal of the source: the store's copy is the one.
    if (!S_ISREG(there.st_mode) || there.st_size != st.st_size)
      fail(name + " exists in the store with another size", EEXIST);
    ::unlinkat(from_dirfd, name.c_str(), 0);
    return static_cast<std::uint64_t>(st.st_size);
  }
  const UniqueFd out(::openat(to_dirfd, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0640));
  if (!out) fail("creating a file in the store", errno);
  if (::ftruncate(out.get(), st.st_size) < 0) fail("sizing " + name + " in the store", errno);
  std::vector<char> buf(1 << 20);
  // Only the data: a raw core's holes (untouched memory) stay holes in the store.
  for (off_t pos = 0; pos < st.st_size;) {
    const off_t data = ::lseek(in.get(), pos, SEEK_DATA);
    if (data < 0) {
      if (errno == ENXIO) break;  // only a hole up to the end
      fail("SEEK_DATA " + name, errno);
    }
    off_t hole = ::lseek(in.get(), data, SEEK_HOLE);
    if (hole < 0) hole = st.st_size;
    copy_range(in.get(), out.get(), data, hole, buf, name);
    pos = hole;
  }
  if (::fsync(out.get()) < 0) fail("fsync " + name + " in the store", errno);
  const std::string self = "/proc/self/fd/" + std::to_string(out.get());
  if (::linkat(AT_FDCWD, self.c_str(), to_dirfd, name.c_str(), AT_SYMLINK_FOLLOW) < 0)
    fail("linking " + name + " into the store", errno);
  if (::fsync(to_dirfd) < 0) {
    const int err = errno;
    ::unlinkat(to_dirfd, name.c_str(), 0);
    fail("fsync the store directory", err);
  }
  if (::unlinkat(from_dirfd, name.c_str(), 0) < 0 && errno != ENOENT) fail("removing " + name + " from the fallback", errno);
  return static_cast<std::uint64_t>(st.st_size);
}

}  // namespace coredumpd
