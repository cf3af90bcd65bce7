#include "store/verify.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>

#include "protocol/core_notes.h"
#include "store/core_accounting.h"
#include "store/core_names.h"
#include "store/core_stream.h"
#include "store/record_extras.h"
#include "util/unique_fd.h"
#include "util/dir.h"

namespace coredumpd {

namespace {

std::string file_type_name(mode_t mode) {
  if (S_ISLNK(mode)) return "a symlink";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device node";
  return "not a regular file";
}

bool is_ignored_name(const std::string& name) {
  return name.empty() || name[0] == '.' || name.rfind("index.sqlite", 0) == 0;
}

/// Outcome of reading one core through.
struct DeepResult {
  std::optional<VerifyProblem> problem;
  std::string detail;
  std::uint64_t bytes = 0;  // core bytes: decompressed (zstd) or read as is (raw)
  std::uint64_t promised = 0;  // what the core's headers promise (CoreFacts::promised_size); 0 if unknown
};

/// A DeepResult that reports problem `p`.
DeepResult deep_failure(VerifyProblem p, std::string detail) {
  DeepResult res;
  res.problem = p;
  res.detail = std::move(detail);
  return res;
}

/// Reads the core on `fd` through as `compression` says it is stored (stream_core()), counting
/// its bytes: zstd's checksums prove a compressed core intact; a raw core has none, so reading it
/// only proves every byte can be read.
DeepResult read_through(int fd, const std::string& compression) {
  DeepResult res;
  const bool raw = compression == kCompressionNone;
  // The scanner keeps only the headers and notes, and once done only counts: no cost per byte.
  protocol::CoreNoteScanner scanner;
  try {
    res.bytes = stream_core(fd, compression, [&](const char* p, std::size_t n) {
      if (!scanner.done()) scanner.feed(std::as_bytes(std::span(p, n)));
    });
    scanner.finish();
    res.promised = scanner.facts().promised_size;
  } catch (const CoreStreamError& e) {
    res.bytes = e.bytes;
    const std::string after = " after " + std::to_string(e.bytes) + (raw ? " bytes" : " decompressed bytes");
    switch (e.kind) {
      case CoreStreamError::Kind::Unreadable: return deep_failure(VerifyProblem::Unreadable, e.what() + after);
      case CoreStreamError::Kind::Corrupt: return deep_failure(VerifyProblem::Corrupt, "zstd: " + std::string(e.what()) + after);
      case CoreStreamError::Kind::Truncated: return deep_failure(VerifyProblem::Corrupt, e.what() + after);
    }
  }
  return res;
}

/// Reads the core file `name` through as its row's `compression` says it is stored: decompresses
/// a zstd file, reads a raw ("none") one as is. Never follows a symlink.
DeepResult deep_check(int dirfd, const std::string& name, const std::string& compression) {
  const UniqueFd fd(::openat(dirfd, name.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
  if (!fd) return deep_failure(VerifyProblem::Unreadable, "cannot open: " + errno_text(errno));
  struct stat sb {};
  if (::fstat(fd.get(), &sb) != 0)
    return deep_failure(VerifyProblem::Unreadable, "fstat: " + errno_text(errno));
  if (!S_ISREG(sb.st_mode))
    return deep_failure(VerifyProblem::NotRegular, file_type_name(sb.st_mode));
  return read_through(fd.get(), compression);
}

/// True if `r` accounts for a file named `name` (a core that is, or is being, stored). An
/// InProgress row accounts for either format's file: the daemon decides at the end of the stream
/// whether the core is kept raw, links `<id>.core`, and only then updates the row's path.
bool accounts_for(const DumpRecord& r, const std::string& name) {
  if (r.state == DumpState::InProgress) return core_file_id(name) == r.id;
  return r.path == name && holds_core(r);
}


}  // namespace

const char* verify_problem_name(VerifyProblem p) {
  switch (p) {
    case VerifyProblem::Orphan: return "orphan";
    case VerifyProblem::Missing: return "missing";
    case VerifyProblem::NotRegular: return "not_regular";
    case VerifyProblem::SizeMismatch: return "size_mismatch";
    case VerifyProblem::Corrupt: return "corrupt";
    case VerifyProblem::CoreSizeMismatch: return "core_size_mismatch";
    case VerifyProblem::Unreadable: return "unreadable";
    case VerifyProblem::ShortCore: return "short_core";
  }
  return "unknown";
}

VerifyReport verify(const Index& index, int store_dirfd, bool deep) {
  VerifyReport rep;
  // Rows first, then the directory: the daemon inserts a row before it links the core file, so a
  // file seen below normally has its row here already (the rest is re-checked).
  const std::vector<DumpRecord> rows = index.list();
  std::map<std::string, const DumpRecord*> by_path;
  std::map<std::string, const DumpRecord*> by_id;
  for (const auto& r : rows) {
    by_id[r.id] = &r;
    if (!r.path.empty()) by_path[r.path] = &r;
    if (holds_core(r)) ++rep.cores;
  }
  const auto issue = [&](VerifyProblem p, const std::string& name, const std::string& id,
                         std::string detail) {
    rep.issues.push_back(VerifyIssue{p, name, id, std::move(detail)});
  };

  std::vector<std::string> names;
  const auto listed = for_each_dir_entry(store_dirfd, ".", [&](std::string_view name) {
    if (!is_ignored_name(std::string(name))) names.emplace_back(name);
    return true;
  });
  if (listed && listed->step == DirError::Step::Open) {
    issue(VerifyProblem::Unreadable, ".", "", "cannot list the store directory: " + errno_text(listed->error));
    return rep;
  }
  if (listed) issue(VerifyProblem::Unreadable, ".", "", "readdir: " + errno_text(listed->error));
  std::sort(names.begin(), names.end());

  std::set<std::string> present;
  for (const auto& name : names) {
    ++rep.files;
    struct stat sb {};
    if (::fstatat(store_dirfd, name.c_str(), &sb, AT_SYMLINK_NOFOLLOW) != 0) {
      if (errno == ENOENT) continue;  // removed since the listing (a vacuum)
      issue(VerifyProblem::Unreadable, name, "", "stat: " + errno_text(errno));
      continue;
    }
    present.insert(name);
    const DumpRecord* r = nullptr;
    if (const auto it = by_path.find(name); it != by_path.end() && accounts_for(*it->second, name))
      r = it->second;
    std::optional<DumpRecord> fresh;
    if (!r) {
      // Re-read: the dump may have started (row inserted) after the rows were listed.
      const std::string id = core_file_id(name);
      if (!id.empty()) {
        try {
          fresh = index.get(id);
        } catch (const IndexError&) {
          fresh.reset();
        }
      }
      if (fresh && accounts_for(*fresh, name)) {
        r = &*fresh;
      } else {
        std::string why;
        const DumpRecord* row = fresh ? &*fresh : nullptr;
        if (!row && !id.empty()) {
          if (const auto it = by_id.find(id); it != by_id.end()) row = it->second;
        }
        if (!row) {
          why = "no row in the index";
        } else if (const auto v = vacuumed_reason(*row)) {
          why = "row " + row->id + " was vacuumed (" + *v + ") but the file is still here";
        } else {
          why = "row " + row->id + " is " + state_name(row->state) + " and holds no core";
        }
        if (!S_ISREG(sb.st_mode)) why += " (" + file_type_name(sb.st_mode) + ")";
        issue(VerifyProblem::Orphan, name, row ? row->id : "", why);
        continue;
      }
    }
    if (r->state == DumpState::InProgress) continue;  // still being written
    if (!S_ISREG(sb.st_mode)) {
      issue(VerifyProblem::NotRegular, name, r->id,
            file_type_name(sb.st_mode) + " where the core should be (not followed)");
      continue;
    }
    const auto size = static_cast<std::uint64_t>(sb.st_size);
    if (size != r->stored_size) {
      issue(VerifyProblem::SizeMismatch, name, r->id,
            std::to_string(size) + " bytes on disk, the index says " +
                std::to_string(r->stored_size));
      continue;
    }
    if (!deep) continue;
    ++rep.deep_checked;
    const DeepResult d = deep_check(store_dirfd, name, r->compression);
    if (d.problem) {
      issue(*d.problem, name, r->id, d.detail);
      continue;
    }
    std::optional<std::uint64_t> want;
    if (r->state == DumpState::Complete) {
      want = r->core_size;
    } else if (r->extra.is_object()) {
      const auto it = r->extra.find(extras::kStoredCoreBytes);  // Truncated: the bytes kept
      if (it != r->extra.end() && it->is_number_unsigned()) want = it->get<std::uint64_t>();
    }
    if (want && d.bytes != *want) {
      issue(VerifyProblem::CoreSizeMismatch, name, r->id,
            (r->compression == kCompressionNone ? "holds " : "decompresses to ") +
                std::to_string(d.bytes) + " bytes, the index says " + std::to_string(*want));
    } else if (r->state == DumpState::Complete && d.promised > d.bytes) {
      issue(VerifyProblem::ShortCore, name, r->id,
            "recorded complete, but its core holds " + std::to_string(d.bytes) + " of the " +
                std::to_string(d.promised) + " bytes its program headers promise (the stream was cut short)");
    }
  }

  for (const auto& r : rows) {
    if (!holds_core(r) || present.count(r.path) != 0) continue;
    // Re-check both: a vacuum may have removed file and path since the rows were read.
    struct stat sb {};
    if (::fstatat(store_dirfd, r.path.c_str(), &sb, AT_SYMLINK_NOFOLLOW) == 0) continue;
    std::optional<DumpRecord> fresh;
    try {
      fresh = index.get(r.id);
    } catch (const IndexError&) {
      fresh = r;
    }
    if (!fresh || !holds_core(*fresh) || fresh->path != r.path) continue;
    issue(VerifyProblem::Missing, r.path, r.id,
          std::string(state_name(r.state)) + " dump's core file is not in the store");
  }
  return rep;
}

}  // namespace coredumpd
