// Listing a directory by descriptor: /proc/<pid>/task and fd/, the store directory.
#pragma once

#include <functional>
#include <optional>
#include <string_view>

namespace coredumpd {

/// Where a directory listing failed, with the errno.
struct DirError {
  enum class Step {
    Open,  ///< the directory could not be opened (openat or fdopendir)
    Read,  ///< readdir failed part way; the entries before it were seen
  };
  Step step = Step::Open;
  int error = 0;  ///< errno
};

/// Calls `fn(name)` for each entry of the directory `path` (relative to `dirfd`; "." for `dirfd`
/// itself), in readdir order, skipping "." and "..". `name` is NUL-terminated and valid only
/// during the call. `fn` returns false to stop early. The directory is opened afresh, so the
/// offset of `dirfd` is neither used nor moved, and `fn` may create or remove entries.
/// Returns std::nullopt when it saw every entry (or `fn` stopped it), else where it failed.
std::optional<DirError> for_each_dir_entry(int dirfd, const char* path,
                                           const std::function<bool(std::string_view name)>& fn);

}  // namespace coredumpd
