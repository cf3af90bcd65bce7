#include "store/dump_record.h"

#include <string.h>  // sigabbrev_np (glibc >= 2.32, _GNU_SOURCE)

#include <array>

namespace coredumpd {

namespace {

struct StateName {
  DumpState state;
  const char* name;
};

constexpr std::array<StateName, 8> kStateNames{{
    {DumpState::InProgress, "in_progress"},
    {DumpState::Complete, "complete"},
    {DumpState::Truncated, "truncated"},
    {DumpState::Failed, "failed"},
    {DumpState::Interrupted, "interrupted"},
    {DumpState::MetadataOnly, "metadata_only"},
    {DumpState::Rejected, "rejected"},
    {DumpState::Forwarded, "forwarded"},
}};

bool is_continuation(unsigned char c) {
  return (c & 0xC0U) == 0x80U;
}

template <typename T>
nlohmann::json optional_to_json(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

}  // namespace

const char* state_name(DumpState s) {
  for (const auto& e : kStateNames) {
    if (e.state == s) return e.name;
  }
  return "unknown";
}

std::optional<DumpState> parse_state(const std::string& s) {
  for (const auto& e : kStateNames) {
    if (s == e.name) return e.state;
  }
  return std::nullopt;
}

std::string signal_name(int signo) {
  if (signo > 0) {
    if (const char* abbrev = sigabbrev_np(signo)) return std::string("SIG") + abbrev;
  }
  return "SIG" + std::to_string(signo);
}

std::size_t decode_utf8(std::string_view s, char32_t& cp) {
  if (s.empty()) return 0;
  const auto b0 = static_cast<unsigned char>(s[0]);
  if (b0 < 0x80U) {
    cp = b0;
    return 1;
  }
  std::size_t len = 0;
  // Bounds of the second byte (RFC 3629 table): they exclude overlong forms (E0, F0),
  // surrogates (ED) and code points above U+10FFFF (F4).
  unsigned char lo = 0x80U, hi = 0xBFU;
  char32_t value = 0;
  if (b0 >= 0xC2U && b0 <= 0xDFU) {
    len = 2;
    value = b0 & 0x1FU;
  } else if (b0 >= 0xE0U && b0 <= 0xEFU) {
    len = 3;
    value = b0 & 0x0FU;
    if (b0 == 0xE0U) lo = 0xA0U;
    if (b0 == 0xEDU) hi = 0x9FU;
  } else if (b0 >= 0xF0U && b0 <= 0xF4U) {
    len = 4;
    value = b0 & 0x07U;
    if (b0 == 0xF0U) lo = 0x90U;
    if (b0 == 0xF4U) hi = 0x8FU;
  } else {
    return 0;  // continuation byte, C0/C1 (always overlong) or F5..FF
  }
  if (s.size() < len) return 0;
  const auto b1 = static_cast<unsigned char>(s[1]);
  if (b1 < lo || b1 > hi) return 0;
  value = (value << 6) | (b1 & 0x3FU);
  for (std::size_t i = 2; i < len; ++i) {
    const auto b = static_cast<unsigned char>(s[i]);
    if (!is_continuation(b)) return 0;
    value = (value << 6) | (b & 0x3FU);
  }
  cp = value;
  return len;
}

bool is_valid_utf8(std::string_view s) {
  while (!s.empty()) {
    char32_t cp = 0;
    const std::size_t n = decode_utf8(s, cp);
    if (n == 0) return false;
    s.remove_prefix(n);
  }
  return true;
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
  return j;
}

}  // namespace coredumpd
