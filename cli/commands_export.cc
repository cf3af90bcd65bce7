// `dumpctl export`: one tar.zst for a bug report (see verb_commands.h for what goes in it).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <map>
#include <memory>
#include <span>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/dump_source.h"
#include "cli/export_archive.h"
#include "cli/format.h"
#include "cli/options.h"
#include "cli/progress.h"
#include "cli/temp_file.h"
#include "cli/verb_commands.h"
#include "protocol/core_notes.h"
#include "store/record_json.h"
#include "util/text.h"
#include "util/unique_fd.h"

namespace coredumpd::cli {

namespace {

constexpr std::string_view kDeleted = " (deleted)";

/// The NT_FILE mappings of the core in `fd` (its notes are near the start: read until parsed).
std::vector<std::string> mapped_files(int fd) {
  protocol::CoreNoteScanner scanner;
  std::vector<std::byte> buf(1 << 20);
  while (!scanner.done()) {
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    scanner.feed(std::span(buf.data(), static_cast<std::size_t>(n)));
  }
  scanner.finish();
  std::vector<std::string> out;
  for (const auto& f : scanner.facts().files) out.push_back(f.path);
  return out;
}

/// One file the archive should hold, and what became of it.
struct Wanted {
  std::string why;      ///< "executable" or "mapped"
  std::string missing;  ///< "" when archived, else the reason
  std::uint64_t size = 0;
  bool changed_after_crash = false;  ///< modified after the crash: may not be what the process ran
};

std::string readme(const DumpRecord& r, const std::string& exe_in_archive, const std::map<std::string, Wanted>& files) {
  std::string t = "Coredump " + r.id + " exported by dumpctl (coredumpd)\n\n";
  t += "  core         the core file, byte-identical to what the kernel sent (as `dumpctl dump` writes it)\n";
  t += "  record.json  the dump's record (dumpctl info --json shows the same fields)\n";
  t += "  files.json   the files below: archived, or missing and why\n";
  t += "  usr/, ...    the executable and the shared libraries it mapped, at their paths: a sysroot\n\n";
  t += "Open it from this directory with:\n\n  gdb -iex 'set sysroot .' ";
  t += exe_in_archive.empty() ? "-c core" : shell_quote("." + exe_in_archive) + " core";
  t += "\n\nFiles were read when the dump was exported, not when the process crashed: one changed since the\n"
       "crash (marked below) may not be what the process ran; compare build-ids (eu-unstrip -n --core core).\n\n";
  for (const auto& [path, w] : files) {
    t += (w.missing.empty() ? "  archived  " : "  MISSING   ") + escape_for_display(path);
    if (!w.missing.empty()) t += "  (" + w.missing + ")";
    if (w.changed_after_crash) t += "  (changed after the crash)";
    t += '\n';
  }
  return t;
}

}  // namespace

int cmd_export(const GlobalOptions& g, const ExportOptions& o, const Io& io) {
  const bool quiet = o.select.quiet;
  if (o.output == "-") throw DumpctlError("export writes an archive file: give -o FILE, not standard output");
  std::unique_ptr<DumpSource> source = open_source(g, io.err);
  bool more = false;
  DumpRecord r = newest_selected(*source, o.select, more);
  if (more && !quiet) io.err << "dumpctl: More than one entry matches, ignoring rest.\n";
  source->require_core(r);
  if (auto full = source->get(r.id)) r = std::move(*full);  // with its analysis, for record.json
  OpenCore core = source->open_core(r);
  source.reset();
  const std::string prefix = "coredump-" + r.id.substr(0, 12);
  const std::string output = o.output.empty() ? prefix + ".tar.zst" : o.output;
  const std::string shown = escape_for_display(output);

  // The core first, to a private temporary file: the tar header needs its size, and the NT_FILE
  // note says which files to add.
  TempFile core_tmp(temp_dir(), "dumpctl-export-");
  {
    ProgressLine bar(STDERR_FILENO, r.core_size, "Extracting core");
    write_core_sparse(core, r, core_tmp, [&bar](std::uint64_t done) { bar.update(done); });
  }
  const UniqueFd core_fd(::open(core_tmp.path().c_str(), O_RDONLY | O_CLOEXEC));
  if (!core_fd) throw DumpctlError("cannot reopen the extracted core: " + std::string(std::strerror(errno)));
  std::map<std::string, Wanted> files;
  std::string exe = r.exe;
  if (exe.ends_with(kDeleted)) exe.resize(exe.size() - kDeleted.size());
  if (!exe.empty() && exe.front() == '/') files[exe].why = "executable";
  for (const auto& p : mapped_files(core_fd.get()))
    if (!p.empty() && p.front() == '/' && !files.contains(p)) files[p].why = "mapped";
  if (r.exe.ends_with(kDeleted)) files[exe].missing = "deleted or replaced since the crash";
  for (auto& [path, w] : files)
    if (path.ends_with(kDeleted)) w.missing = "deleted or replaced since the crash";

  TempFile out(dir_of(output), ".dumpctl-export-");
  TarZstWriter tar(out.fd(), shown);
  const time_t now = std::time(nullptr);
  struct stat core_st {};
  ::fstat(core_fd.get(), &core_st);
  ::lseek(core_fd.get(), 0, SEEK_SET);
  {
    ProgressLine bar(STDERR_FILENO, static_cast<std::uint64_t>(core_st.st_size), "Archiving core");
    tar.add_file(prefix + "/core", core_fd.get(), static_cast<std::uint64_t>(core_st.st_size), 0600,
                 static_cast<time_t>(r.timestamp_us / 1'000'000), [&bar](std::uint64_t done) { bar.update(done); });
  }
  std::size_t archived = 0, missing = 0;
  for (auto& [path, w] : files) {
    if (!w.missing.empty()) {
      ++missing;
      continue;
    }
    // Read with dumpctl's own permissions: nothing the user could not read anyway.
    const UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
    struct stat st {};
    if (!fd || ::fstat(fd.get(), &st) != 0) {
      w.missing = std::strerror(errno);
    } else if (!S_ISREG(st.st_mode)) {
      w.missing = "not a regular file";
    } else {
      w.size = static_cast<std::uint64_t>(st.st_size);
      w.changed_after_crash = static_cast<std::int64_t>(st.st_mtime) * 1'000'000 > r.timestamp_us;
      tar.add_file(prefix + path, fd.get(), w.size, st.st_mode, st.st_mtime);
      ++archived;
      continue;
    }
    ++missing;
  }
  nlohmann::json manifest = nlohmann::json::array();
  for (const auto& [path, w] : files) {
    nlohmann::json f = {{"path", bytes_to_json(path)}, {"role", w.why}, {"archived", w.missing.empty()}};
    if (w.missing.empty()) f["size"] = w.size;
    else f["missing"] = w.missing;
    if (w.changed_after_crash) f["changed_after_crash"] = true;
    manifest.push_back(std::move(f));
  }
  const auto dump = [](const nlohmann::json& j) { return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + '\n'; };
  tar.add_text(prefix + "/record.json", dump(record_envelope(r)), now);
  tar.add_text(prefix + "/files.json", dump({{"id", r.id}, {"files", manifest}}), now);
  tar.add_text(prefix + "/README", readme(r, files.contains(exe) && files[exe].missing.empty() ? exe : "", files), now);
  tar.close();
  out.close();
  out.rename_to(output);
  if (!quiet) {
    io.err << "Wrote " << shown << ": the core, " << archived << " file(s)";
    if (missing > 0) io.err << ", " << missing << " missing (listed in its README and files.json)";
    io.err << '\n';
  }
  return 0;
}

}  // namespace coredumpd::cli
