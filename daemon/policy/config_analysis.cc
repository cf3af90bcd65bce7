// The tables of the "analysis" keys and of its "debuginfod" object (config_keys.h).
#include <pwd.h>

#include <cerrno>
#include <cstring>

#include "daemon/policy/config_keys.h"

namespace coredumpd {

namespace {

using nlohmann::json;

// getpwnam() at load time, so that a typo is a configuration error rather than an analyzer that
// cannot drop its privileges at the first crash.
void resolve_user(const KeyValue& v, AnalysisSettings& a) {
  const std::string name = v.string();
  if (name.empty()) v.fail("expected a user name");
  errno = 0;
  const struct passwd* pw = ::getpwnam(name.c_str());
  if (!pw) v.fail("no such user \"" + name + "\"" + (errno ? std::string(": ") + std::strerror(errno) : std::string()));
  a.run_as_user = name;
  a.run_as_uid = pw->pw_uid;
  a.run_as_gid = pw->pw_gid;
}

void read_urls(const KeyValue& v, DebuginfodSettings& d) {
  if (!v.value.is_array()) v.fail("expected a list of URLs");
  std::vector<std::string> urls;
  for (std::size_t i = 0; i < v.value.size(); ++i) {
    const KeyValue url{v.origin, v.key + "[" + std::to_string(i) + "]", v.value[i]};
    auto s = url.string();
    if (!s.starts_with("http://") && !s.starts_with("https://")) url.fail("expected an http:// or https:// URL, got \"" + s + "\"");
    if (s.find_first_of(" \t\n") != std::string::npos) url.fail("a URL cannot contain white space");
    urls.push_back(std::move(s));
  }
  d.urls = std::move(urls);
}

constexpr ConfigKey<DebuginfodSettings> kDebuginfod[] = {
    boolean_key<&DebuginfodSettings::enabled>("enabled",
        "Fetch missing debug files from the debuginfod servers in urls (no network at all when false or urls is empty)."),
    {.name = "urls", .type = "list of strings", .values = "http:// or https:// URLs",
     .description = "debuginfod servers, asked in order.",
     .apply = read_urls,
     .write = [](const DebuginfodSettings& d) -> json { return d.urls; }},
    integer_key<&DebuginfodSettings::budget>("budget_s", 1, 300, "Time debuginfod may take per dump."),
    {.name = "cache_dir", .type = "path", .values = "absolute",
     .description = "Where fetched debug files are kept between analyses.",
     .apply = [](const KeyValue& v, DebuginfodSettings& d) { d.cache_dir = v.path(); },
     .write = [](const DebuginfodSettings& d) -> json { return d.cache_dir; }},
};

constexpr ConfigKey<AnalysisSettings> kAnalysis[] = {
    boolean_key<&AnalysisSettings::enabled>("enabled",
        "Analyse each stored core (stack traces, build-ids, signature) after it is stored, at idle priority."),
    {.name = "analyzer", .type = "path", .values = "absolute, or \"\"",
     .default_text = "\"\": the installed coredumpd-analyze (libexec)",
     .description = "The analyzer program (analysis/analyzer_run.h keeps its interface).",
     .apply = [](const KeyValue& v, AnalysisSettings& a) { a.analyzer = v.value == "" ? std::string() : v.path(); },
     .write = [](const AnalysisSettings& a) -> json { return a.analyzer; }},
    integer_key<&AnalysisSettings::timeout>("timeout_s", 1, 600,
        "Wall time of one analysis; the analyzer is then killed and the analysis recorded as unavailable."),
    integer_key<&AnalysisSettings::cpu>("cpu_s", 1, 600, "CPU time of one analysis (RLIMIT_CPU)."),
    integer_key<&AnalysisSettings::memory_mib>("memory_mib", 64, 65536, "Address space of the analyzer (RLIMIT_AS), MiB."),
    integer_key<&AnalysisSettings::max_threads>("max_threads", 1, 1024,
        "Threads shown in a report, the crashing thread first; the rest are counted."),
    integer_key<&AnalysisSettings::max_frames>("max_frames", 1, 4096, "Frames kept per thread; the rest are counted."),
    integer_key<&AnalysisSettings::queue>("queue", 1, 65536,
        "Dumps waiting for analysis; a dump stored while it is full is recorded as \"analysis unavailable\"."),
    {.name = "temp_dir", .type = "path", .values = "absolute",
     .description = "Where the analyzer decompresses a zstd core (an unnamed O_TMPFILE file).",
     .apply = [](const KeyValue& v, AnalysisSettings& a) { a.temp_dir = v.path(); },
     .write = [](const AnalysisSettings& a) -> json { return a.temp_dir; }},
    {.name = "run_as_user", .type = "string", .values = "an existing user",
     .description = "The user the analyzer drops to when coredumpd runs as root.",
     .apply = resolve_user,
     .write = [](const AnalysisSettings& a) -> json { return a.run_as_user; }},
    {.name = "debuginfod", .type = "object",
     .description = "Debug files over HTTP, off by default: see the analysis.debuginfod keys.",
     .apply = [](const KeyValue& v, AnalysisSettings& a) { apply_keys(debuginfod_keys(), v, a.debuginfod, {.unknown_key = unknown_key_naming(debuginfod_keys())}); },
     .write = [](const AnalysisSettings& a) { return keys_to_json(debuginfod_keys(), a.debuginfod); }},
};

}  // namespace

std::span<const ConfigKey<AnalysisSettings>> analysis_keys() { return kAnalysis; }
std::span<const ConfigKey<DebuginfodSettings>> debuginfod_keys() { return kDebuginfod; }

}  // namespace coredumpd
