// Stand-ins for coredumpd-analyze (analysis/analyzer_run.h's interface: the request JSON on fd 0,
// the core on fd 3, the report on fd 1), for the daemon's analysis tests (tests/integration/
// analysis_test.cc). Built three times, STAND_IN_MODE choosing what it does:
//   ok     reads the request and the core's first bytes, prints a fixed valid report that names
//          what it was given (in "warnings") and the signature kFakeSignature;
//   hang   reads the request, then sleeps until killed;
//   crash  reads the request, then dies of SIGSEGV (never dumping a core: not dumpable).
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <iterator>
#include <string>

#include <nlohmann/json.hpp>

#include "analysis/crash_report.h"

namespace {

std::string hex_prefix(int fd) {
  unsigned char buf[4] = {};
  const ssize_t n = ::pread(fd, buf, sizeof buf, 0);
  std::string s;
  for (ssize_t i = 0; i < n; ++i) {
    char h[3];
    std::snprintf(h, sizeof h, "%02x", buf[i]);
    s += h;
  }
  return n < 0 ? "unreadable" : s;
}

}  // namespace

int main() {
  const std::string text{std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>()};
  const auto request = nlohmann::json::parse(text, nullptr, false);
  if (request.is_discarded() || !request.is_object()) {
    std::fprintf(stderr, "fake analyzer: the request is not a JSON object\n");
    return 2;
  }
  const std::string mode = STAND_IN_MODE;
  if (mode == "hang") {
    for (;;) ::pause();
  }
  if (mode == "crash") {
    ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);  // no core of the stand-in for whatever core_pattern is set
    const struct rlimit none {};
    ::setrlimit(RLIMIT_CORE, &none);
    std::fprintf(stderr, "fake analyzer: crashing on purpose\n");
    ::raise(SIGSEGV);
    return 3;
  }
  using namespace coredumpd::analysis;
  CrashReport r;
  r.state = "ok";
  r.signature = "0123456789abcdef0123456789abcdef";
  r.signature_text = "SIGSEGV: fake_frame | main";
  Thread t;
  t.tid = request.value("crashing_tid", nlohmann::json(1)).is_number_integer() ? request["crashing_tid"].get<std::int64_t>() : 1;
  t.crashed = true;
  Frame f;
  f.pc = 0x1000;
  f.module = "fake";
  f.module_offset = 0x1000;
  f.function = "fake_frame";
  t.frames.push_back(std::move(f));
  r.threads.push_back(std::move(t));
  r.threads_total = 1;
  r.warnings.push_back("compression " + request.value("compression", std::string("?")));
  r.warnings.push_back("core starts " + hex_prefix(3));
  std::cout << to_json(r).dump() << '\n';
  return 0;
}
