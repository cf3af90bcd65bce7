#include "store/delete_dump.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "store/core_names.h"

namespace coredumpd {

namespace {

std::string errno_line(int err) { return std::strerror(err); }

}  // namespace

const char* delete_status_name(DeleteStatus s) {
  switch (s) {
    case DeleteStatus::Deleted: return "deleted";
    case DeleteStatus::NotFound: return "not_found";
    case DeleteStatus::InProgress: return "in_progress";
    case DeleteStatus::Failed: return "failed";
  }
  return "failed";
}

DeleteOutcome delete_dump(Index& index, int store_dirfd, const std::string& id,
                          const std::function<bool(const DumpRecord&)>& may_delete, bool dry_run) {
  DeleteOutcome out;
  std::optional<DumpRecord> row = index.get(id);
  if (!row || (may_delete && !may_delete(*row))) return out;  // NotFound
  out.record = *row;
  if (row->state == DumpState::InProgress) {
    out.status = DeleteStatus::InProgress;
    return out;
  }
  out.path = row->path;
  if (!out.path.empty()) {
    out.stored_size = row->stored_size;
    if (!is_core_file_of(id, out.path)) {
      out.status = DeleteStatus::Failed;
      out.error = "dump " + id + ": core path is not \"<id>.zst\" or \"<id>.core\"; nothing deleted";
      return out;
    }
    struct stat sb {};
    if (::fstatat(store_dirfd, out.path.c_str(), &sb, AT_SYMLINK_NOFOLLOW) == 0) {
      out.not_regular = !S_ISREG(sb.st_mode);
    } else if (errno == ENOENT) {
      out.file_missing = true;
    } else {
      out.status = DeleteStatus::Failed;
      out.error = "dump " + id + ": cannot stat " + out.path + ": " + errno_line(errno);
      return out;
    }
    // unlinkat() removes the directory entry itself: a symlink goes, its target stays.
    if (!dry_run && !out.file_missing && ::unlinkat(store_dirfd, out.path.c_str(), 0) != 0) {
      if (errno != ENOENT) {
        out.status = DeleteStatus::Failed;
        out.error = "dump " + id + ": cannot delete " + out.path + ": " + errno_line(errno);
        return out;
      }
      out.file_missing = true;  // another remover (vacuum) was faster
    }
  }
  if (!dry_run) {
    try {
      index.remove(id);  // false: a concurrent vacuum (max_age) removed it meanwhile: gone either way
    } catch (const std::exception& e) {
      out.status = DeleteStatus::Failed;
      out.error = "dump " + id + (out.path.empty() ? "" : ": core deleted") + ", but the row was not: " + e.what();
      return out;
    }
  }
  out.status = DeleteStatus::Deleted;
  return out;
}

}  // namespace coredumpd
