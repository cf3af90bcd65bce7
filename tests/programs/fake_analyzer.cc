// A stand-in for coredumpd-analyze in analysis/analyzer_run.h's tests: it keeps the analyzer's
// interface (argv, request on fd 0, core on fd 3, report on fd 1) and misbehaves as
// $FAKE_ANALYZER_MODE says:
//   report  print a valid report            echo    print a report of what it was given
//   hang    ignore SIGTERM, sleep forever   segv    write to stderr, then SIGSEGV
//   flood   write to stdout without end     badjson print text that is not JSON
//   refused print JSON that is not a valid report
//   exit3   print to stderr, exit 3
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include <nlohmann/json.hpp>

namespace {

using nlohmann::json;

json report() {
  json frame = {{"pc", 4096},     {"module", "app"}, {"module_offset", 16}, {"function", "crash_here"},
                {"function_offset", 4}, {"file", "app.c"}, {"line", 7}};
  json thread = {{"tid", 1}, {"name", "app"}, {"crashed", true}, {"frames_omitted", 0}, {"error", ""},
                 {"frames", json::array({frame})}};
  return {{"version", 1},        {"state", "ok"},           {"reason", ""},
          {"signature", ""},     {"signature_text", ""},     {"threads_total", 1},
          {"threads_omitted", 0}, {"modules_omitted", 0},    {"text_truncated", false},
          {"warnings", json::array()}, {"elapsed_us", 1},  {"maxrss_kib", 1},
          {"debuginfod_used", false}, {"modules", json::array()}, {"threads", json::array({thread})}};
}

std::string read_all(int fd) {
  std::string out;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n > 0) {
      out.append(buf, static_cast<std::size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      return out;
    }
  }
}

/// The descriptors open in this process, as "0,1,2,3" (the one opendir() uses left out).
std::string open_fds() {
  std::string list;
  DIR* d = ::opendir("/proc/self/fd");
  if (d == nullptr) return "?";
  while (const dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.' || std::atoi(e->d_name) == ::dirfd(d)) continue;
    list += (list.empty() ? "" : ",") + std::string(e->d_name);
  }
  ::closedir(d);
  return list;
}

void print(const std::string& text) {
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  ::prctl(PR_SET_DUMPABLE, 0);  // its SIGSEGV is on purpose: no core for core_pattern
  const char* env = std::getenv("FAKE_ANALYZER_MODE");
  const std::string mode = env ? env : "report";
  if (mode == "report") {
    print(report().dump() + "\n");
  } else if (mode == "echo") {
    // Facts only the runner could have given: argv, the request on fd 0, the core's bytes on fd 3.
    std::string args;
    for (int i = 1; i < argc; ++i) args += std::string(i > 1 ? " " : "") + argv[i];
    const int fd0_flags = ::fcntl(0, F_GETFL), fd1_flags = ::fcntl(1, F_GETFL);
    const json request = json::parse(read_all(0), nullptr, false);
    char core[16] = {};
    const ssize_t n = ::pread(3, core, sizeof core - 1, 0);
    json r = report();
    r["warnings"] = {"argv=" + args, "fds=" + open_fds(), "core=" + std::string(core, n > 0 ? static_cast<std::size_t>(n) : 0),
                     "request=" + (request.is_discarded() ? std::string("not JSON") : request.dump()),
                     std::string("blocking=") + ((fd0_flags | fd1_flags) & O_NONBLOCK ? "no" : "yes"),
                     "thread_names=" + std::to_string(request.is_object() && request["thread_names"].is_object() ? request["thread_names"].size() : 0)};
    if (r["warnings"][3].get_ref<const std::string&>().size() > 4000) r["warnings"][3] = "request=(too long)";
    print(r.dump());
  } else if (mode == "hang") {
    ::signal(SIGTERM, SIG_IGN);
    for (;;) ::pause();
  } else if (mode == "segv") {
    ::signal(SIGSEGV, SIG_DFL);  // die by the signal even where a sanitizer runtime handles SIGSEGV
    std::fputs("fake analyzer: unwinding\nfake analyzer: about to fault\n", stderr);
    ::raise(SIGSEGV);
  } else if (mode == "flood") {
    const std::string chunk(65536, 'x');
    for (;;) {
      if (::write(1, chunk.data(), chunk.size()) < 0) return 1;
    }
  } else if (mode == "badjson") {
    print("{\"version\": 1, \"state\": ");
  } else if (mode == "refused") {
    json r = report();
    r["version"] = 2;
    print(r.dump());
  } else if (mode == "exit3") {
    std::fputs("fake analyzer: starting\nfake analyzer: cannot read the core: truncated\n", stderr);
    return 3;
  } else {
    std::fprintf(stderr, "fake analyzer: unknown mode %s\n", mode.c_str());
    return 2;
  }
  return 0;
}
