// libFuzzer target: the analyzer's handling of truncated and mutated cores (analyzer/): the core
// prepared (analyzer/core_input.h, zstd when the input starts with zstd's magic) and unwound with
// libdwfl (analyzer/unwind.h), as coredumpd-analyze does after its sandbox.
//
// Input: an ELF core (raw), or a zstd stream of one. Seed: tests/fuzz/corpus/fuzz_analyzer (a real
// core in the kernel's layout, tests/fuzz/make_analyzer_seed.py).
// Invariants: no crash; "ok" has the crashing thread first and frames within the caps, "unavailable"
// has a reason; the report, fitted, passes the parent's validation (report_from_json).
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "analysis/crash_report.h"
#include "analyzer/core_input.h"
#include "analyzer/unwind.h"
#include "tests/fuzz/fuzz_util.h"

namespace ca = coredumpd::analysis;
namespace cz = coredumpd::analyzer;

namespace {

constexpr std::size_t kMaxThreads = 4, kMaxFrames = 16;

coredumpd::UniqueFd memfd_with(const std::uint8_t* data, std::size_t size) {
  coredumpd::UniqueFd fd(::memfd_create("fuzz-core", MFD_CLOEXEC));
  FUZZ_CHECK(fd);
  std::size_t done = 0;
  while (done < size) {
    const ssize_t n = ::write(fd.get(), data + done, size - done);
    FUZZ_CHECK(n > 0);
    done += static_cast<std::size_t>(n);
  }
  FUZZ_CHECK(::lseek(fd.get(), 0, SEEK_SET) == 0);
  return fd;
}

}  // namespace

// libdw 0.188 (the system's, uninstrumented) frees its 16-byte thread cursor (linux-core-attach.c
// core_next_thread) only when a thread walk reaches the end: a walk that stops on a bad note leaks
// it. Bounded (one per walk, the analyzer makes two) and not ours to fix; every other leak counts.
extern "C" const char* __lsan_default_suppressions() { return "leak:libdw.so.1\n"; }

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  ::unsetenv("DEBUGINFOD_URLS");  // never the network
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const bool zstd = size >= 4 && std::memcmp(data, "\x28\xb5\x2f\xfd", 4) == 0;
  auto input = memfd_with(data, size);
  coredumpd::UniqueFd temp;
  if (zstd) temp.reset(::memfd_create("fuzz-temp", MFD_CLOEXEC));
  auto core = cz::prepare_core(input.get(), zstd ? "zstd" : "none", std::move(temp), 64 << 20);
  if (!core.reason.empty()) return 0;
  FUZZ_CHECK(core.fd >= 0);

  cz::UnwindOptions options;
  options.max_threads = kMaxThreads;
  options.max_frames = kMaxFrames;
  auto report = cz::unwind_core(core.fd, options);
  if (report.state == "ok") {
    FUZZ_CHECK(!report.threads.empty() && report.threads.size() <= kMaxThreads);
    FUZZ_CHECK(report.threads.front().crashed);
    FUZZ_CHECK(report.threads_total == report.threads.size() + report.threads_omitted);
    for (const auto& t : report.threads) FUZZ_CHECK(t.frames.size() <= kMaxFrames);
    FUZZ_CHECK(report.modules.size() <= ca::kMaxModules);
  } else {
    FUZZ_CHECK(report.state == "unavailable" && !report.reason.empty());
  }
  ca::fit_report(report, ca::kMaxReportBytes);
  try {
    (void)ca::report_from_json(ca::to_json(report));
  } catch (const ca::ReportError& e) {
    std::fprintf(stderr, "fuzz_analyzer: report refused: %s\n", e.what());
    FUZZ_CHECK(false);  // the parent would refuse what the analyzer printed
  }
  return 0;
}
