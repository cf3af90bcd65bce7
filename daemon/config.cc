#include "daemon/config.h"

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

namespace coredumpd {

namespace {

using nlohmann::json;

[[noreturn]] void error(const std::string& origin, const std::string& key, const std::string& reason) {
  throw ConfigError(origin + ": " + key + ": " + reason);
}

std::int64_t get_int(const std::string& origin, const std::string& key, const json& v, std::int64_t lo,
                     std::int64_t hi) {
  if (!v.is_number_integer()) error(origin, key, "expected an integer, got " + std::string(v.type_name()));
  const auto n = v.get<std::int64_t>();
  if (n < lo || n > hi)
    error(origin, key, "value " + std::to_string(n) + " out of range [" + std::to_string(lo) + ", " +
                           std::to_string(hi) + "]");
  return n;
}

std::string get_path(const std::string& origin, const std::string& key, const json& v) {
  if (!v.is_string()) error(origin, key, "expected a string, got " + std::string(v.type_name()));
  auto s = v.get<std::string>();
  if (s.empty() || s[0] != '/') error(origin, key, "expected an absolute path, got \"" + s + "\"");
  return s;
}

}  // namespace

Config apply_config_json(const std::string& origin, const std::string& text, Config c) {
  json doc;
  try {
    doc = json::parse(text, nullptr, true, /*ignore_comments=*/true);
  } catch (const json::parse_error& e) {
    error(origin, "(syntax)", e.what());
  }
  if (!doc.is_object()) error(origin, "(top level)", "expected a JSON object");
  for (const auto& [key, v] : doc.items()) {
    if (key == "socket") {
      c.socket_path = get_path(origin, key, v);
      if (c.socket_path.size() >= 108) error(origin, key, "path must be shorter than 108 bytes (UNIX_PATH_MAX)");
      if (c.socket_path.find(' ') != std::string::npos) error(origin, key, "the kernel refuses socket paths with spaces");
    } else if (key == "store") {
      c.store_dir = get_path(origin, key, v);
    } else if (key == "handshake_timeout_ms") {
      c.handshake_timeout = std::chrono::milliseconds(get_int(origin, key, v, 10, 60'000));
    } else if (key == "stream_idle_timeout_ms") {
      c.stream_idle_timeout = std::chrono::milliseconds(get_int(origin, key, v, 100, 3'600'000));
    } else if (key == "listen_backlog") {
      c.listen_backlog = static_cast<int>(get_int(origin, key, v, 16, 65535));
    } else if (key == "dump_workers") {
      c.dump_workers = static_cast<int>(get_int(origin, key, v, 1, 256));
    } else if (key == "collector_threads") {
      c.collector_threads = static_cast<int>(get_int(origin, key, v, 1, 64));
    } else if (key == "compression") {
      if (!v.is_object()) error(origin, key, "expected an object with \"level\" and/or \"threads\"");
      for (const auto& [k2, v2] : v.items()) {
        if (k2 == "level") c.compression.level = static_cast<int>(get_int(origin, "compression.level", v2, 1, 19));
        else if (k2 == "threads") c.compression.threads = static_cast<int>(get_int(origin, "compression.threads", v2, 0, 64));
        else error(origin, "compression." + k2, "unknown key");
      }
    } else if (key == "close_files_bit") {
      const auto bit = get_int(origin, key, v, 1, std::int64_t{1} << 62);
      if ((bit & (bit - 1)) != 0) error(origin, key, "must be a single bit (a power of two)");
      if (static_cast<std::uint64_t>(bit) <= protocol::COREDUMP_MEMORY_TYPES)
        error(origin, key, "collides with a mainline/NEXT mask bit (0x01..0x40)");
      c.close_files_bit = static_cast<std::uint64_t>(bit);
    } else {
      error(origin, key, "unknown key");
    }
  }
  return c;
}

Config load_config_file(const std::string& path, Config base) {
  std::ifstream in(path);
  if (!in) throw ConfigError(path + ": cannot be read");
  std::stringstream ss;
  ss << in.rdbuf();
  return apply_config_json(path, ss.str(), std::move(base));
}

}  // namespace coredumpd
