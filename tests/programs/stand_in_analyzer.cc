// A stand-in for coredumpd-analyze (analysis/analyzer_run.h's interface) for dumpctl's tests:
// reads the request on fd 0 and the core on fd 3, and prints a valid report on fd 1 that tells
// what it was given (in its warnings), so a test can check what dumpctl passed. A request with
// signal 6 (SIGABRT) gets an "unavailable" report, to test failures.
#include <sys/stat.h>
#include <unistd.h>

#include <iostream>
#include <iterator>
#include <string>

#include <nlohmann/json.hpp>

int main() {
  const std::string text{std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>()};
  const auto req = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (req.is_discarded()) {
    std::cerr << "stand-in analyzer: the request is not JSON\n";
    return 2;
  }
  struct stat st {};
  if (::fstat(3, &st) != 0) {
    std::cerr << "stand-in analyzer: no core on fd 3\n";
    return 2;
  }
  nlohmann::json report = {
      {"version", 1}, {"state", "ok"}, {"reason", ""},
      {"signature", "5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a"}, {"signature_text", "SIGSEGV: stand_in | main"},
      {"threads_total", 1}, {"threads_omitted", 0}, {"modules_omitted", 0}, {"text_truncated", false},
      {"elapsed_us", 1}, {"maxrss_kib", 1}, {"debuginfod_used", false}, {"modules", nlohmann::json::array()},
  };
  const auto tid = req.value("crashing_tid", nlohmann::json(nullptr));
  std::string name;
  if (tid.is_number_integer() && req["thread_names"].is_object()) {
    const auto it = req["thread_names"].find(std::to_string(tid.get<long long>()));
    if (it != req["thread_names"].end() && it->is_string()) name = *it;
  }
  nlohmann::json frames = nlohmann::json::array();
  const auto max_frames = req.value("max_frames", 64);
  for (int i = 0; i < 2 && i < max_frames; ++i)
    frames.push_back({{"pc", 0x1000 + i}, {"module", "prog"}, {"module_offset", i}, {"function", i ? "main" : "stand_in"},
                      {"function_offset", 0}, {"file", ""}, {"line", 0}});
  report["threads"] = nlohmann::json::array({{{"tid", tid.is_number_integer() ? tid : nlohmann::json(1)}, {"name", name},
                                              {"crashed", true}, {"frames_omitted", 0}, {"error", ""}, {"frames", frames}}});
  std::string urls;
  if (req["debuginfod"].is_object())
    for (const auto& u : req["debuginfod"]["urls"]) urls += (urls.empty() ? "" : " ") + u.get<std::string>();
  report["warnings"] = {"core fd 3: " + std::to_string(st.st_size) + " bytes, compression " + req.value("compression", "?"),
                        "max_frames " + std::to_string(max_frames) + ", max_threads " + std::to_string(req.value("max_threads", 0)),
                        "debuginfod: " + (urls.empty() ? std::string("off") : urls)};
  if (req.value("signal", 0) == 6) {
    report = {{"version", 1}, {"state", "unavailable"}, {"reason", "stand-in: asked to fail"}, {"signature", ""},
              {"signature_text", ""}, {"threads_total", 0}, {"threads_omitted", 0}, {"modules_omitted", 0},
              {"text_truncated", false}, {"warnings", nlohmann::json::array()}, {"elapsed_us", 1}, {"maxrss_kib", 1},
              {"debuginfod_used", false}, {"modules", nlohmann::json::array()}, {"threads", nlohmann::json::array()}};
  }
  std::cout << report.dump() << std::flush;
  return 0;
}
