#include "analyzer/request.h"

#include <limits>

#include "store/dump_record.h"

namespace coredumpd::analyzer {
namespace {

const nlohmann::json* key(const nlohmann::json& j, const char* name) {
  const auto it = j.find(name);
  return it == j.end() || it->is_null() ? nullptr : &*it;
}

[[noreturn]] void refuse(const char* name, const std::string& why) {
  throw RequestError(std::string("request key \"") + name + "\": " + why);
}

template <typename T>
void read_uint(const nlohmann::json& j, const char* name, T& out, T max = std::numeric_limits<T>::max()) {
  const auto* v = key(j, name);
  if (v == nullptr) return;
  if (!v->is_number_unsigned()) refuse(name, "not an unsigned integer");
  const auto n = v->get<std::uint64_t>();
  if (n > max) refuse(name, "out of range");
  out = static_cast<T>(n);
}

std::optional<std::int64_t> read_int(const nlohmann::json& j, const char* name) {
  const auto* v = key(j, name);
  if (v == nullptr) return std::nullopt;
  if (!v->is_number_integer()) refuse(name, "not an integer");
  return v->get<std::int64_t>();
}

std::string read_string(const nlohmann::json& j, const char* name, std::string fallback) {
  const auto* v = key(j, name);
  if (v == nullptr) return fallback;
  if (!v->is_string()) refuse(name, "not a string");
  return v->get<std::string>();
}

std::optional<DebuginfodRequest> read_debuginfod(const nlohmann::json& j) {
  const auto* v = key(j, "debuginfod");
  if (v == nullptr) return std::nullopt;
  if (!v->is_object()) refuse("debuginfod", "not an object");
  DebuginfodRequest d;
  if (const auto* urls = key(*v, "urls")) {
    if (!urls->is_array()) refuse("debuginfod.urls", "not an array");
    for (const auto& u : *urls) {
      if (!u.is_string() || u.get<std::string>().empty()) refuse("debuginfod.urls", "not a list of URLs");
      d.urls.push_back(u.get<std::string>());
    }
  }
  if (d.urls.empty()) return std::nullopt;  // no server: no debuginfod, and no network
  std::uint32_t budget = 10;
  read_uint(*v, "budget_s", budget);
  d.budget = std::chrono::seconds(budget);
  d.cache_dir = read_string(*v, "cache_dir", "");
  return d;
}

}  // namespace

Request parse_request(const nlohmann::json& j) {
  if (!j.is_object()) throw RequestError("request: not a JSON object");
  Request r;
  r.compression = read_string(j, "compression", "none");
  if (r.compression != "none" && r.compression != "zstd") refuse("compression", "neither \"none\" nor \"zstd\"");
  if (const auto s = read_int(j, "signal")) {
    if (*s < 0 || *s > 255) refuse("signal", "out of range");
    r.signal = static_cast<int>(*s);
  }
  r.crashing_tid = read_int(j, "crashing_tid");
  if (const auto* names = key(j, "thread_names")) {
    if (!names->is_object()) refuse("thread_names", "not an object");
    for (const auto& [tid, name] : names->items()) {
      std::int64_t t = 0;
      try {
        std::size_t used = 0;
        t = std::stoll(tid, &used);
        if (used != tid.size()) throw std::invalid_argument(tid);
      } catch (const std::exception&) {
        refuse("thread_names", "key \"" + tid + "\" is not a TID");
      }
      auto bytes = bytes_from_json(name);
      if (!bytes) refuse("thread_names", "value of " + tid + " is not a byte string");
      r.thread_names[t] = std::move(*bytes);
    }
  }
  read_uint(j, "max_threads", r.max_threads);
  read_uint(j, "max_frames", r.max_frames);
  read_uint(j, "max_report_bytes", r.max_report_bytes);
  read_uint(j, "cpu_seconds", r.cpu_seconds);
  read_uint(j, "memory_bytes", r.memory_bytes);
  if (const auto* idle = key(j, "idle")) {
    if (!idle->is_boolean()) refuse("idle", "not a boolean");
    r.idle = idle->get<bool>();
  }
  r.temp_dir = read_string(j, "temp_dir", r.temp_dir);
  read_uint(j, "max_core_bytes", r.max_core_bytes);
  r.run_as_uid = read_int(j, "run_as_uid");
  r.run_as_gid = read_int(j, "run_as_gid");
  for (const auto& [name, id] : {std::pair{"run_as_uid", r.run_as_uid}, std::pair{"run_as_gid", r.run_as_gid}}) {
    if (id && (*id < 0 || *id > std::numeric_limits<std::uint32_t>::max() - 1)) refuse(name, "out of range");
  }
  r.debuginfod = read_debuginfod(j);
  return r;
}

nlohmann::json example_request() {
  const Request r;
  return {{"compression", r.compression}, {"signal", 11}, {"crashing_tid", 1234},
          {"thread_names", {{"1234", "worker"}}}, {"max_threads", r.max_threads},
          {"max_frames", r.max_frames}, {"max_report_bytes", r.max_report_bytes},
          {"cpu_seconds", r.cpu_seconds}, {"memory_bytes", r.memory_bytes}, {"idle", r.idle},
          {"temp_dir", r.temp_dir}, {"run_as_uid", 65534}, {"run_as_gid", 65534},
          {"debuginfod", nullptr}};
}

}  // namespace coredumpd::analyzer
