// coredumpd-analyze: unwinds one stored core in a sandbox and prints its crash report.
//
//   coredumpd-analyze --request-fd 0 --core-fd 3      (as the daemon and dumpctl run it)
//   coredumpd-analyze --request req.json --core core  (by hand, or in tests)
//
// The interface is analysis/analyzer_run.h's: the request JSON on --request-fd, the core (raw ELF
// or zstd) on --core-fd, the report JSON on stdout, diagnostics on stderr, exit 0 iff a report was
// written (possibly "unavailable"). Order matters: the request is read (trusted, from the parent)
// and the temp file opened, then the sandbox applied, and only then is the core read.
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <iostream>
#include <new>
#include <string>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "analysis/crash_report.h"
#include "analysis/signature.h"
#include "analyzer/core_input.h"
#include "analyzer/request.h"
#include "analyzer/sandbox.h"
#include "analyzer/unwind.h"
#include "util/unique_fd.h"

#if defined(__SANITIZE_ADDRESS__)
// LeakSanitizer's exit check stops the world with ptrace from a helper thread, which the seccomp
// filter and the dropped ids do not allow: it would spin at exit. The analyzer's leaks are checked
// in-process by tests/fuzz/fuzz_analyzer instead.
extern "C" const char* __lsan_default_options() { return "detect_leaks=0"; }
#endif

namespace {

using namespace coredumpd;

constexpr std::size_t kMaxRequestBytes = 4 << 20;
// stdout/stderr may be regular files (by hand): RLIMIT_FSIZE must leave room for the report.
constexpr std::uint64_t kMinFileBytes = 8 << 20;

std::string read_all(int fd) {
  std::string text;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw std::system_error(errno, std::generic_category(), "reading the request");
    if (n == 0) return text;
    text.append(buf, static_cast<std::size_t>(n));
    if (text.size() > kMaxRequestBytes) throw std::runtime_error("request larger than 4 MiB");
  }
}

// Points libdwfl's debuginfod client (libdebuginfod, loaded by libdw on first use; it reads these
// variables at each query) at the request's servers, or makes sure it has none.
void set_debuginfod_env(const analyzer::Request& r) {
  ::unsetenv("DEBUGINFOD_URLS");
  if (!r.debuginfod) return;
  std::string urls;
  for (const auto& u : r.debuginfod->urls) urls += (urls.empty() ? "" : " ") + u;
  const auto budget = std::to_string(std::max<long long>(1, r.debuginfod->budget.count()));
  const std::string cache = r.debuginfod->cache_dir.empty() ? r.temp_dir + "/coredumpd-debuginfod" : r.debuginfod->cache_dir;
  ::setenv("DEBUGINFOD_URLS", urls.c_str(), 1);
  ::setenv("DEBUGINFOD_TIMEOUT", budget.c_str(), 1);  // per connection, seconds
  ::setenv("DEBUGINFOD_MAXTIME", budget.c_str(), 1);  // per download, seconds
  ::setenv("DEBUGINFOD_CACHE_PATH", cache.c_str(), 1);
  ::unsetenv("DEBUGINFOD_PROGRESS");
}

int write_report(analysis::CrashReport& report, std::size_t max_bytes, std::chrono::steady_clock::time_point t0) {
  report.elapsed_us =
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0).count();
  rusage ru{};
  if (::getrusage(RUSAGE_SELF, &ru) == 0) report.maxrss_kib = ru.ru_maxrss;
  analysis::fit_report(report, max_bytes);
  const std::string text = analysis::to_json(report).dump() + "\n";
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(STDOUT_FILENO, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      std::perror("coredumpd-analyze: writing the report");
      return 1;
    }
    done += static_cast<std::size_t>(n);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const auto t0 = std::chrono::steady_clock::now();
  CLI::App app{"coredumpd-analyze: unwinds one core in a sandbox and prints its crash report (JSON)"};
  int request_fd = -1, core_fd = -1;
  std::string request_path, core_path;
  bool print_example = false, self_check = false;
  app.add_option("--request-fd", request_fd, "read the request JSON from this descriptor");
  app.add_option("--request", request_path, "read the request JSON from this file")->excludes("--request-fd");
  app.add_option("--core-fd", core_fd, "read the core from this descriptor");
  app.add_option("--core", core_path, "read the core from this file")->excludes("--core-fd");
  app.add_flag("--print-request-example", print_example, "print a request with every key and exit");
  app.add_flag("--sandbox-self-check", self_check, "")->group("");  // tests: probe the sandbox, print JSON
  CLI11_PARSE(app, argc, argv);
  if (print_example) {
    std::cout << analyzer::example_request().dump(2) << "\n";
    return 0;
  }

  analyzer::Request request;
  try {
    UniqueFd file;
    if (!request_path.empty()) {
      file.reset(::open(request_path.c_str(), O_RDONLY | O_CLOEXEC));
      if (!file) throw std::system_error(errno, std::generic_category(), request_path);
    }
    const int fd = file ? file.get() : (request_fd >= 0 ? request_fd : STDIN_FILENO);
    request = analyzer::parse_request(nlohmann::json::parse(read_all(fd)));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "coredumpd-analyze: bad request: %s\n", e.what());
    return 2;  // the parent's bug: no report
  }

  UniqueFd core_file;
  if (!core_path.empty()) {
    core_file.reset(::open(core_path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!core_file) {
      std::fprintf(stderr, "coredumpd-analyze: %s: %s\n", core_path.c_str(), std::strerror(errno));
      return 2;
    }
  }
  const std::size_t max_bytes = request.max_report_bytes;
  try {
    const int core = core_file ? core_file.get() : (core_fd >= 0 ? core_fd : 3);
    UniqueFd temp;
    if (request.compression == "zstd") temp = analyzer::open_temp_file(request.temp_dir);
    set_debuginfod_env(request);

    analyzer::SandboxPolicy policy;
    if (request.run_as_uid) policy.run_as_uid = static_cast<std::uint32_t>(*request.run_as_uid);
    if (request.run_as_gid) policy.run_as_gid = static_cast<std::uint32_t>(*request.run_as_gid);
    policy.cpu_seconds = request.cpu_seconds;
    policy.memory_bytes = request.memory_bytes;
    policy.file_bytes = std::max(request.compression == "zstd" ? request.max_core_bytes : 0, kMinFileBytes);
    policy.idle = request.idle;
    policy.network = request.debuginfod.has_value();
    std::vector<std::string> warnings;
    try {
      warnings = analyzer::apply_sandbox(policy);
    } catch (const std::exception& e) {
      auto report = analysis::unavailable(e.what());  // never analyse a core unconfined
      return write_report(report, max_bytes, t0);
    }
    if (self_check) {
      std::cout << analyzer::sandbox_self_check() << std::endl;
      return 0;
    }

    // From here on, everything read comes from the core.
    auto input = analyzer::prepare_core(core, request.compression, std::move(temp), request.max_core_bytes);
    analysis::CrashReport report;
    if (!input.reason.empty()) {
      report = analysis::unavailable(input.reason);
    } else {
      analyzer::UnwindOptions options;
      options.crashing_tid = request.crashing_tid;
      options.thread_names = request.thread_names;
      options.max_threads = request.max_threads;
      options.max_frames = request.max_frames;
      options.debuginfod = request.debuginfod.has_value();
      report = analyzer::unwind_core(input.fd, options);
      if (report.state == "ok" && !report.threads.empty()) {
        if (auto sig = analysis::make_signature(report.threads.front(), request.signal)) {
          report.signature = sig->hash;
          report.signature_text = sig->text;
        }
      }
    }
    input.warnings.insert(input.warnings.end(), report.warnings.begin(), report.warnings.end());
    warnings.insert(warnings.end(), input.warnings.begin(), input.warnings.end());
    report.warnings = std::move(warnings);
    return write_report(report, max_bytes, t0);
  } catch (const std::bad_alloc&) {
    std::fputs("coredumpd-analyze: out of memory\n", stderr);
    auto report = analysis::unavailable("analyzer: out of memory (memory_bytes " + std::to_string(request.memory_bytes) + ")");
    return write_report(report, max_bytes, t0);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "coredumpd-analyze: %s\n", e.what());
    auto report = analysis::unavailable(std::string("analyzer: ") + e.what());
    return write_report(report, max_bytes, t0);
  }
}
