#include "cli/temp_file.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "cli/core_file.h"
#include "cli/dumpctl.h"
#include "cli/format.h"
#include "cli/sparse_writer.h"
#include "util/text.h"

namespace coredumpd::cli {

std::string temp_dir() {
  const char* env = std::getenv("TMPDIR");
  return env != nullptr && env[0] != '\0' ? env : "/var/tmp";
}

std::string dir_of(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

TempFile::TempFile(const std::string& dir, const std::string& prefix) {
  std::string name = dir;
  if (name.empty()) name = ".";
  if (name.back() != '/') name.push_back('/');
  name += prefix + "XXXXXX";
  std::vector<char> buf(name.begin(), name.end());
  buf.push_back('\0');
  // Signals wait until the file is registered for removal: none can strike between the two.
  const BlockCleanupSignals blocked;
  fd_.reset(::mkostemp(buf.data(), O_CLOEXEC));
  if (!fd_) {
    throw DumpctlError("cannot create a temporary file in " + escape_for_display(dir) + ": " +
                       std::strerror(errno));
  }
  path_ = buf.data();
  on_signal_ = std::make_unique<SignalCleanup>(path_.c_str());
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
  // After the rename: a signal in between unlinks a name that no longer exists, which is harmless.
  on_signal_->release();
  owned_ = false;
}

namespace {
bool g_test_stall = false;  // set once, before any command runs
}  // namespace

void set_test_stall_after_first_write(bool stall) { g_test_stall = stall; }

std::uint64_t write_core_sparse(OpenCore& core, const DumpRecord& r, TempFile& file,
                                const std::function<void(std::uint64_t done)>& progress) {
  const bool stall = g_test_stall;
  SparseWriter out(file.fd(), escape_for_display(file.path()));
  extract_core(core, r, [&](const char* p, std::size_t n) {
    out.write(p, n);
    if (progress) progress(out.size());
    while (stall) ::pause();  // test only (kTestStallFlag): wait to be killed mid-write
  });
  out.finish();
  file.close();
  return out.size();
}

}  // namespace coredumpd::cli
