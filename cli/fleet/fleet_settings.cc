#include "cli/fleet/fleet_settings.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/dumpctl.h"
#include "util/text.h"

namespace coredumpd::cli {
namespace {

namespace fs = std::filesystem;

// The daemon's key names (config/coredumpd.json, object "upload").
constexpr const char* kSection = "upload";

void merge_file(const std::string& path, FleetSettings& s) {
  std::ifstream in(path);
  if (!in) throw DumpctlError("cannot read " + escape_for_display(path));
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/true, /*ignore_comments=*/true);
  } catch (const nlohmann::json::exception& e) {
    throw DumpctlError(escape_for_display(path) + ": not valid JSON: " + e.what());
  }
  if (!j.is_object() || !j.contains(kSection)) return;
  const auto& u = j[kSection];
  if (!u.is_object()) throw DumpctlError(escape_for_display(path) + ": \"upload\" is not an object");
  const auto take = [&](const char* key, std::string& into) {
    if (!u.contains(key)) return;
    if (!u[key].is_string())
      throw DumpctlError(escape_for_display(path) + ": upload." + key + " is not a string");
    into = u[key].get<std::string>();
  };
  take("fleet_conninfo", s.database);
  take("endpoint", s.s3.endpoint);
  take("region", s.s3.region);
  take("bucket", s.s3.bucket);
  take("credentials_file", s.credentials_file);
}

}  // namespace

FleetSettings read_fleet_settings(const std::string& path, bool must_exist) {
  FleetSettings s;
  s.s3.bucket = "coredumpd";  // the daemon's defaults (daemon/policy/upload_settings.h)
  s.s3.region = "us-east-1";
  std::error_code ec;
  if (!fs::exists(path, ec)) {
    if (must_exist) throw DumpctlError("no configuration file " + escape_for_display(path));
    return s;
  }
  merge_file(path, s);
  const fs::path dropins = fs::path(path).parent_path() / "conf.d";
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(dropins, ec))
    if (e.path().extension() == ".json" && e.is_regular_file(ec)) files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  for (const auto& f : files) merge_file(f, s);
  return s;
}

}  // namespace coredumpd::cli
