#include "cli/json_output.h"

#include "cli/core_file.h"

namespace coredumpd::cli {

namespace {

using json = nlohmann::json;

/// coredumpctl's COREFILE words: "present", "truncated", "missing" (a file the entry names is gone:
/// also a vacuumed core), "none" (no core was stored). Our finer status is in "state".
const char* corefile_word(CoreStatus s) {
  switch (s) {
    case CoreStatus::Present: return "present";
    case CoreStatus::Truncated: return "truncated";
    case CoreStatus::Missing:
    case CoreStatus::Vacuumed: return "missing";
    case CoreStatus::Failed:
    case CoreStatus::Interrupted:
    case CoreStatus::None:
    case CoreStatus::InProgress: break;
  }
  return "none";
}

json id_or_null(std::int64_t id) { return id >= 0 ? json(id) : json(nullptr); }

/// The keys coredumpctl 252's `list --json` gives each entry, in its order.
json coredumpctl_keys(DumpSource& source, const DumpRecord& r) {
  const CoreStatus status = source.core_status(r);
  const bool has_file = status == CoreStatus::Present || status == CoreStatus::Truncated;
  json j = json::object();
  j["time"] = r.timestamp_us;
  j["pid"] = r.pid;
  j["uid"] = id_or_null(r.uid);
  j["gid"] = id_or_null(r.gid);
  j["sig"] = r.signal ? json(*r.signal) : json(nullptr);
  j["corefile"] = corefile_word(status);
  // coredumpctl: `exe ?: comm`.
  j["exe"] = !r.exe.empty() ? bytes_to_json(r.exe) : !r.comm.empty() ? bytes_to_json(r.comm) : json(nullptr);
  j["size"] = has_file ? json(r.stored_size) : json(nullptr);
  return j;
}

}  // namespace

void print_json(const json& j, const Io& io, JsonMode mode) {
  const bool pretty = mode != JsonMode::Short;
  io.out << j.dump(pretty ? 1 : -1, '\t', /*ensure_ascii=*/io.out_is_tty, json::error_handler_t::replace) << '\n';
}

json list_entry_json(DumpSource& source, const DumpRecord& r, const std::string& short_id, bool with_extra) {
  json j = coredumpctl_keys(source, r);
  j["id"] = r.id;
  j["short_id"] = short_id;
  j["state"] = state_name(r.state);
  j["reason"] = bytes_to_json(r.reason);
  j["comm"] = bytes_to_json(r.comm);
  j["container"] = r.container_key ? bytes_to_json(*r.container_key) : json(nullptr);
  j["signature"] = r.signature.empty() ? json(nullptr) : json(r.signature);
  if (with_extra) j["extra"] = r.extra;
  return j;
}

json info_json(DumpSource& source, const DumpRecord& r, const std::string& short_id) {
  json j = to_json(r);
  j["short_id"] = short_id;
  j["container"] = r.container_key ? bytes_to_json(*r.container_key) : json(nullptr);  // the object: extra.container
  // The analysis as stored (analysis/crash_report.h's shape), for readers of the JSON.
  j["signature"] = r.signature.empty() ? json(nullptr) : json(r.signature);
  j["signature_text"] = r.signature_text.empty() ? json(nullptr) : bytes_to_json(r.signature_text);
  j["analysis"] = r.analysis;
  const json keys = coredumpctl_keys(source, r);
  for (const auto& [key, value] : keys.items()) j[key] = value;
  return j;
}

}  // namespace coredumpd::cli
