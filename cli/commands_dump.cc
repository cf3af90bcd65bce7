// `dumpctl dump`: the original core bytes, to a file or standard output.
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "cli/core_file.h"
#include "cli/dump_source.h"
#include "cli/dumpctl.h"
#include "cli/format.h"
#include "cli/options.h"
#include "cli/pending_records.h"
#include "cli/progress.h"
#include "cli/temp_file.h"
#include "util/text.h"
#include "util/unique_fd.h"

namespace coredumpd::cli {

namespace {

/// Follows a symlink at `target` so that the rename replaces the file it points to, not the link.
std::string resolve_target(const std::string& target) {
  struct stat sb {};
  if (::lstat(target.c_str(), &sb) != 0 || !S_ISLNK(sb.st_mode)) return target;
  const std::unique_ptr<char, decltype(&::free)> real(::realpath(target.c_str(), nullptr), &::free);
  return real ? std::string(real.get()) : target;
}

/// Writes the core to an existing non-regular file (a FIFO, /dev/null, ...) in place.
void write_to_special(OpenCore& core, const DumpRecord& r, const std::string& target) {
  const std::string shown = escape_for_display(target);
  const UniqueFd fd(::open(target.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY));
  if (!fd) throw DumpctlError("cannot open " + shown + ": " + std::strerror(errno));
  if (::isatty(fd.get()) != 0) throw DumpctlError("refusing to write a core dump to a terminal");
  ProgressLine bar(STDERR_FILENO, r.core_size, "Writing " + shown);
  std::uint64_t done = 0;
  extract_core(core, r, [&](const char* p, std::size_t n) {
    write_all(fd.get(), p, n, shown);
    bar.update(done += n);
  });
}

/// Writes the core to a regular file: a temporary file next to it (sparse where the core has zero
/// blocks), renamed into place on success.
void write_to_file(OpenCore& core, const DumpRecord& r, const std::string& output) {
  const std::string target = resolve_target(output);
  struct stat sb {};
  if (::stat(target.c_str(), &sb) == 0 && !S_ISREG(sb.st_mode)) {
    if (S_ISDIR(sb.st_mode)) throw DumpctlError(escape_for_display(output) + " is a directory");
    write_to_special(core, r, target);
    return;
  }
  TempFile tmp(dir_of(target), ".dumpctl-");
  ProgressLine bar(STDERR_FILENO, r.core_size, "Writing " + escape_for_display(target));
  // holes for zero runs; removed on error and on SIGINT/TERM/HUP
  write_core_sparse(core, r, tmp, [&bar](std::uint64_t done) { bar.update(done); });
  bar.finish();
  tmp.rename_to(target);
}

}  // namespace

int cmd_dump(const GlobalOptions& g, const DumpOptions& o, const Io& io) {
  std::unique_ptr<DumpSource> source = open_source(g, io.err);
  bool more = false;
  const DumpRecord r = newest_selected(*source, o.select, more);
  // coredumpctl 252 says so after the core is written; before is where the user still sees it.
  if (more && !o.select.quiet) io.err << "dumpctl: More than one entry matches, ignoring rest.\n";
  source->require_core(r);  // fail before creating any output
  OpenCore core = source->open_core(r);
  source.reset();  // the descriptor is ours now: free the daemon's connection while bytes are written
  if (r.state == DumpState::Truncated) {
    io.err << "dumpctl: warning: the core of coredump " << escape_for_display(r.id)
           << " is truncated\n";
  }

  if (!o.output.empty() && o.output != "-") {
    write_to_file(core, r, o.output);
    return 0;
  }
  if (io.out_is_tty) {
    throw DumpctlError(
        "refusing to write a core dump to a terminal: use -o FILE or redirect standard output");
  }
  extract_core(core, r, [&](const char* p, std::size_t n) {
    io.out.write(p, static_cast<std::streamsize>(n));
    if (!io.out) throw DumpctlError("cannot write to standard output");
  });
  io.out.flush();
  if (!io.out) throw DumpctlError("cannot write to standard output");
  return 0;
}

}  // namespace coredumpd::cli
