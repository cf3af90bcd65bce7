#include "store/dump_record.h"

#include <string.h>  // sigabbrev_np (glibc >= 2.32, _GNU_SOURCE)

#include <array>

#include "util/enum_names.h"
#include "util/text.h"

namespace coredumpd {

namespace {

constexpr std::array<EnumName<DumpState>, 8> kStateNames{{
    {DumpState::InProgress, "in_progress"},
    {DumpState::Complete, "complete"},
    {DumpState::Truncated, "truncated"},
    {DumpState::Failed, "failed"},
    {DumpState::Interrupted, "interrupted"},
    {DumpState::MetadataOnly, "metadata_only"},
    {DumpState::Rejected, "rejected"},
    {DumpState::Forwarded, "forwarded"},
}};

template <typename T>
nlohmann::json optional_to_json(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

}  // namespace

const char* state_name(DumpState s) {
  // The names are literals, so their data() is NUL-terminated.
  return name_of(kStateNames, s).value_or("unknown").data();
}

std::optional<DumpState> parse_state(const std::string& s) { return value_of(kStateNames, s); }

std::string signal_name(int signo) {
  if (signo > 0) {
    if (const char* abbrev = sigabbrev_np(signo)) return std::string("SIG") + abbrev;
  }
  return "SIG" + std::to_string(signo);
}

nlohmann::json bytes_to_json(const std::string& bytes) {
  if (is_valid_utf8(bytes)) return bytes;
  auto arr = nlohmann::json::array();
  for (const char c : bytes) arr.push_back(static_cast<unsigned char>(c));
  return arr;
}

std::optional<std::string> bytes_from_json(const nlohmann::json& j) {
  if (j.is_string()) return j.get<std::string>();
  if (!j.is_array()) return std::nullopt;
  std::string out;
  out.reserve(j.size());
  for (const auto& e : j) {
    if (!e.is_number_unsigned() && !e.is_number_integer()) return std::nullopt;
    const auto v = e.get<std::int64_t>();
    if (v < 0 || v > 255) return std::nullopt;
    out.push_back(static_cast<char>(static_cast<unsigned char>(v)));
  }
  return out;
}

nlohmann::json to_json(const DumpRecord& r) {
  nlohmann::json j = nlohmann::json::object();
  j["id"] = r.id;
  j["state"] = state_name(r.state);
  j["reason"] = bytes_to_json(r.reason);
  j["timestamp_us"] = r.timestamp_us;
  j["pid"] = r.pid;
  j["tid"] = optional_to_json(r.tid);
  j["uid"] = r.uid;
  j["gid"] = r.gid;
  j["euid"] = r.euid;
  j["egid"] = r.egid;
  j["comm"] = bytes_to_json(r.comm);
  j["exe"] = bytes_to_json(r.exe);
  auto argv = nlohmann::json::array();
  for (const auto& a : r.argv) argv.push_back(bytes_to_json(a));
  j["argv"] = std::move(argv);
  j["cwd"] = bytes_to_json(r.cwd);
  j["cgroup"] = bytes_to_json(r.cgroup);
  j["hostname"] = bytes_to_json(r.hostname);
  j["boot_id"] = bytes_to_json(r.boot_id);
  j["coredump_mask"] = r.coredump_mask;
  j["signal"] = optional_to_json(r.signal);
  j["signal_name"] = r.signal ? nlohmann::json(signal_name(*r.signal)) : nlohmann::json(nullptr);
  j["crashing_tid_ns"] = optional_to_json(r.crashing_tid_ns);
  j["core_size"] = r.core_size;
  j["stored_size"] = r.stored_size;
  j["compression"] = r.compression;
  j["path"] = bytes_to_json(r.path);
  j["extra"] = r.extra;
  j["signature"] = r.signature.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.signature);
  j["signature_text"] = r.signature_text.empty() ? nlohmann::json(nullptr) : bytes_to_json(r.signature_text);
  if (!r.analysis.is_null()) j["analysis"] = r.analysis;
  return j;
}

}  // namespace coredumpd
