#include "daemon/upload/upload_object.h"

#include <systemd/sd-id128.h>
#include <unistd.h>

#include <climits>

#include "store/record_extras.h"

namespace coredumpd::upload {

namespace {

using nlohmann::json;

std::string string_at(const json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace

HostIdentity host_identity(const UploadSettings& s) {
  HostIdentity h;
  h.host_id = s.host_id;
  if (h.host_id.empty()) {
    char name[HOST_NAME_MAX + 1] = {};
    if (::gethostname(name, sizeof name - 1) == 0) h.host_id = name;
    if (h.host_id.empty()) h.host_id = "localhost";
    // Any bytes sethostname(2) took: made what upload.host_id allows (one plain segment of an
    // object key), each other byte '_', and "." or ".." (which a URL resolves away) all '_'.
    for (char& c : h.host_id)
      if (!is_host_id_byte(c)) c = '_';
    if (is_dot_segment(h.host_id)) h.host_id.assign(h.host_id.size(), '_');
  }
  // libsystemd reads and validates /etc/machine-id (32 hex digits), as the journal's _MACHINE_ID.
  sd_id128_t id;
  char text[SD_ID128_STRING_MAX];
  if (sd_id128_get_machine(&id) == 0) h.machine_id = sd_id128_to_string(id, text);
  return h;
}

std::string core_key(const std::string& host_id, const DumpRecord& r) {
  return host_id + "/" + r.id + (r.compression == "zstd" ? "/core.zst" : "/core");
}

std::string record_key(const std::string& host_id, const DumpRecord& r) { return host_id + "/" + r.id + "/record.json"; }

std::string record_body(const HostIdentity& host, const DumpRecord& r, const std::string& core_object_key) {
  json j;
  j["host_id"] = host.host_id;
  j["machine_id"] = host.machine_id;
  j["record"] = to_json(r);
  j["signature"] = r.signature;
  j["signature_text"] = r.signature_text;
  j["analysis"] = r.analysis;
  j["core_key"] = core_object_key.empty() ? json(nullptr) : json(core_object_key);
  // Bytes from the crashing process may not be UTF-8: replaced, never a failed dump().
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

FleetRecord fleet_record_of(const HostIdentity& host, const DumpRecord& r, const UploadRow& row, const std::string& state) {
  FleetRecord f;
  f.host_id = host.host_id;
  f.machine_id = host.machine_id;
  f.dump_id = r.id;
  f.timestamp_us = r.timestamp_us;
  f.exe = r.exe;
  f.comm = r.comm;
  f.signal = r.signal.value_or(0);
  f.signature = r.signature;
  f.signature_text = r.signature_text;
  if (r.analysis.is_object()) {
    if (const auto m = r.analysis.find("modules"); m != r.analysis.end() && m->is_array()) {
      for (const auto& mod : *m) {
        if (!mod.is_object()) continue;
        const std::string id = string_at(mod, "build_id");
        if (id.empty()) continue;
        const bool main_exe = string_at(mod, "path") == r.exe;
        if (main_exe) f.build_ids.insert(f.build_ids.begin(), id);
        else f.build_ids.push_back(id);
        if (main_exe) {
          if (const auto p = mod.find("package"); p != mod.end() && p->is_object())
            f.package = string_at(*p, "name") + (string_at(*p, "version").empty() ? "" : " " + string_at(*p, "version"));
        }
      }
    }
  }
  if (const auto c = r.extra.find(extras::kContainer); c != r.extra.end() && c->is_object()) {
    f.container = string_at(*c, "name");
    if (f.container.empty()) f.container = string_at(*c, "key");
  }
  f.object_key = row.object_key;
  f.record_key = row.record_key;
  f.core_bytes = row.core_bytes;
  f.state = state;
  return f;
}

UploadMode mode_for(const Config& c, const DumpRecord& r) {
  for (const auto& rule : c.rules)
    if (rule.name == r.rule) return rule.policy.upload;
  return c.defaults.upload;
}

}  // namespace coredumpd::upload
