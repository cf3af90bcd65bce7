#include "store/record_json.h"

#include <optional>
#include <stdexcept>
#include <string>

namespace coredumpd {

namespace {

using nlohmann::json;

std::string bytes_field(const json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return {};
  auto v = bytes_from_json(*it);
  if (!v) throw std::invalid_argument(std::string("field ") + key + " is not a byte string");
  return std::move(*v);
}

template <typename T>
std::optional<T> optional_field(const json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  return it->get<T>();
}

}  // namespace

DumpRecord record_from_envelope(const json& line) {
  const json& j = line.at("record");
  DumpRecord r;
  r.id = j.at("id").get<std::string>();
  const auto state = parse_state(j.at("state").get<std::string>());
  if (!state) throw std::invalid_argument("unknown state");
  r.state = *state;
  r.reason = bytes_field(j, "reason");
  r.timestamp_us = j.at("timestamp_us").get<std::int64_t>();
  r.pid = j.at("pid").get<std::int64_t>();
  r.tid = optional_field<std::int64_t>(j, "tid");
  r.uid = j.value("uid", std::int64_t{-1});
  r.gid = j.value("gid", std::int64_t{-1});
  r.euid = j.value("euid", std::int64_t{-1});
  r.egid = j.value("egid", std::int64_t{-1});
  r.comm = bytes_field(j, "comm");
  r.exe = bytes_field(j, "exe");
  for (const auto& a : j.value("argv", json::array())) {
    auto v = bytes_from_json(a);
    if (!v) throw std::invalid_argument("argv entry is not a byte string");
    r.argv.push_back(std::move(*v));
  }
  r.cwd = bytes_field(j, "cwd");
  r.cgroup = bytes_field(j, "cgroup");
  r.hostname = bytes_field(j, "hostname");
  r.boot_id = bytes_field(j, "boot_id");
  r.coredump_mask = j.value("coredump_mask", std::uint32_t{0});
  r.signal = optional_field<int>(j, "signal");
  r.crashing_tid_ns = optional_field<std::int64_t>(j, "crashing_tid_ns");
  r.core_size = j.value("core_size", std::uint64_t{0});
  r.stored_size = j.value("stored_size", std::uint64_t{0});
  r.compression = j.value("compression", std::string());
  r.path = bytes_field(j, "path");
  r.extra = j.value("extra", json::object());
  if (!r.extra.is_object()) throw std::invalid_argument("extra is not an object");
  // Columns of the index that to_json() leaves to extra: kept beside the record.
  r.rule = line.value("rule", std::string());
  if (const auto it = line.find("container_key"); it != line.end() && !it->is_null()) {
    auto key = bytes_from_json(*it);
    if (!key) throw std::invalid_argument("container_key is not a byte string");
    r.container_key = std::move(*key);
  }
  if (const auto it = j.find("signature"); it != j.end() && !it->is_null()) r.signature = it->get<std::string>();
  r.signature_text = bytes_field(j, "signature_text");
  if (const auto it = j.find("analysis"); it != j.end()) r.analysis = *it;
  return r;
}


json record_envelope(const DumpRecord& r) {
  return {{"rule", r.rule},
          {"container_key", r.container_key ? bytes_to_json(*r.container_key) : json(nullptr)},
          {"record", to_json(r)}};
}

}  // namespace coredumpd
