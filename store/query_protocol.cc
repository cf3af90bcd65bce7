#include "store/query_protocol.h"

#include <array>
#include <limits>
#include <utility>

#include "store/record_extras.h"
#include "util/enum_names.h"

namespace coredumpd {

namespace {

using nlohmann::json;

constexpr std::array<EnumName<QueryErrorCode>, 7> kCodeNames{{
    {QueryErrorCode::BadRequest, "bad_request"},
    {QueryErrorCode::TooLarge, "too_large"},
    {QueryErrorCode::NotFound, "not_found"},
    {QueryErrorCode::NoCore, "no_core"},
    {QueryErrorCode::Busy, "busy"},
    {QueryErrorCode::Internal, "internal"},
    {QueryErrorCode::InProgress, "in_progress"},
}};

QueryError bad(std::string message) { return {QueryErrorCode::BadRequest, std::move(message)}; }

bool is_dump_id(const std::string& s) {
  if (s.size() != 32) return false;
  for (const char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

// An optional int64 field: absent or null is nullopt; anything but an integer within int64 is an
// error (floats are refused: a bound of 1.5 µs is a client bug, not a rounding question).
std::variant<std::optional<std::int64_t>, QueryError> int64_field(const json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::optional<std::int64_t>{};
  if (it->is_number_unsigned()) {
    const auto v = it->get<std::uint64_t>();
    if (v > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
      return bad(std::string(key) + " is out of range");
    return std::optional<std::int64_t>{static_cast<std::int64_t>(v)};
  }
  if (it->is_number_integer()) return std::optional<std::int64_t>{it->get<std::int64_t>()};
  return bad(std::string(key) + " is not an integer");
}

std::variant<std::string, QueryError> id_field(const json& j) {
  const auto it = j.find("id");
  if (it == j.end()) return bad("\"id\" is missing");
  if (!it->is_string()) return bad("\"id\" is not a string");
  std::string id = it->get<std::string>();
  if (!is_dump_id(id)) return bad("\"id\" is not 32 lower-case hex characters");
  return id;
}

// Text that may hold bytes that are not UTF-8 (an error naming a file) still makes one JSON line.
std::string line_of(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace) + '\n'; }

// An optional boolean field: absent or null is `fallback`.
std::variant<bool, QueryError> bool_field(const json& j, const char* key, bool fallback) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  if (!it->is_boolean()) return bad(std::string(key) + " is not a boolean");
  return it->get<bool>();
}

std::variant<QueryRequest, QueryError> parse_list(const json& j) {
  ListRequest r;
  RecordQuery& q = r.query;
  auto since = int64_field(j, "since_us");
  if (auto* e = std::get_if<QueryError>(&since)) return std::move(*e);
  auto until = int64_field(j, "until_us");
  if (auto* e = std::get_if<QueryError>(&until)) return std::move(*e);
  auto limit = int64_field(j, "limit");
  if (auto* e = std::get_if<QueryError>(&limit)) return std::move(*e);
  auto newest_first = bool_field(j, "newest_first", false);
  if (auto* e = std::get_if<QueryError>(&newest_first)) return std::move(*e);
  auto with_extra = bool_field(j, "with_extra", true);
  if (auto* e = std::get_if<QueryError>(&with_extra)) return std::move(*e);
  q.since_us = std::get<0>(since);
  q.until_us = std::get<0>(until);
  if (const auto n = std::get<0>(limit)) {
    if (*n < 0) return bad("limit is negative");
    q.limit = static_cast<std::size_t>(*n);
  }
  q.newest_first = std::get<0>(newest_first);
  q.with_extra = std::get<0>(with_extra);
  if (const auto it = j.find("matches"); it != j.end() && !it->is_null()) {
    if (!it->is_array()) return bad("matches is not an array");
    for (const auto& m : *it) {
      const auto field = m.is_object() ? m.find("field") : m.end();
      const auto value = m.is_object() ? m.find("value") : m.end();
      if (!m.is_object() || field == m.end() || !field->is_string() || value == m.end())
        return bad("a match is not {\"field\": string, \"value\": bytes}");
      auto bytes = bytes_from_json(*value);
      if (!bytes) return bad("a match's value is not a string or an array of bytes");
      q.matches.push_back({field->get<std::string>(), std::move(*bytes)});
    }
  }
  return QueryRequest{std::move(r)};
}

std::variant<QueryRequest, QueryError> parse_object(const json& j) {
  const auto op_it = j.find("op");
  if (op_it == j.end()) return bad("\"op\" is missing");
  if (!op_it->is_string()) return bad("\"op\" is not a string");
  const auto& op = op_it->get_ref<const std::string&>();
  if (op == "list") return parse_list(j);
  if (op == "get" || op == "core" || op == "delete") {
    auto id = id_field(j);
    if (auto* e = std::get_if<QueryError>(&id)) return std::move(*e);
    if (op == "get") return QueryRequest{GetRequest{std::move(std::get<0>(id))}};
    if (op == "delete") return QueryRequest{DeleteRequest{std::move(std::get<0>(id))}};
    return QueryRequest{CoreRequest{std::move(std::get<0>(id))}};
  }
  if (op == "status") return QueryRequest{StatusRequest{}};
  return bad("unknown op (expected list, get, core, delete or status)");
}

}  // namespace

const char* query_error_code_name(QueryErrorCode c) { return name_of(kCodeNames, c).value_or("internal").data(); }

std::optional<QueryErrorCode> parse_query_error_code(std::string_view name) { return value_of(kCodeNames, name); }

std::variant<QueryRequest, QueryError> parse_query_request(std::string_view line) {
  // The line arrives without its '\n': one more byte would reach the limit.
  if (line.size() >= kMaxRequestBytes)
    return QueryError{QueryErrorCode::TooLarge,
                      "request longer than " + std::to_string(kMaxRequestBytes) + " bytes"};
  // No exceptions: invalid JSON (or invalid UTF-8 in it) yields a discarded value.
  const json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return bad("not valid JSON");
  if (!j.is_object()) return bad("not a JSON object");
  return parse_object(j);
}

std::string query_request_line(const QueryRequest& r) {
  json j;
  if (const auto* l = std::get_if<ListRequest>(&r)) {
    const RecordQuery& q = l->query;
    j["op"] = "list";
    if (q.since_us) j["since_us"] = *q.since_us;
    if (q.until_us) j["until_us"] = *q.until_us;
    if (!q.matches.empty()) {
      j["matches"] = json::array();
      for (const auto& m : q.matches) j["matches"].push_back({{"field", m.field}, {"value", bytes_to_json(m.value)}});
    }
    if (q.limit) j["limit"] = static_cast<std::uint64_t>(*q.limit);
    if (q.newest_first) j["newest_first"] = true;
    if (!q.with_extra) j["with_extra"] = false;
  } else if (const auto* g = std::get_if<GetRequest>(&r)) {
    j = {{"op", "get"}, {"id", g->id}};
  } else if (const auto* c = std::get_if<CoreRequest>(&r)) {
    j = {{"op", "core"}, {"id", c->id}};
  } else if (const auto* d = std::get_if<DeleteRequest>(&r)) {
    j = {{"op", "delete"}, {"id", d->id}};
  } else {
    j = {{"op", "status"}};
  }
  return line_of(j);
}

std::string query_error_line(const QueryError& e) {
  return line_of({{"ok", false}, {"error", e.message}, {"code", query_error_code_name(e.code)}});
}

bool peer_may_see(const DumpRecord& r, uid_t peer_uid) {
  if (peer_uid == 0) return true;
  const auto uid = static_cast<std::int64_t>(peer_uid);
  if (r.uid != uid || r.euid != uid || r.gid != r.egid) return false;
  const auto it = r.extra.find(extras::kOwnerMayRead);
  return it != r.extra.end() && it->is_boolean() && it->get<bool>();
}

bool peer_may_delete(const DumpRecord& r, uid_t peer_uid) { return peer_may_see(r, peer_uid); }

json to_json(const QueryStatus& s) {
  return {{"version", s.version},
          {"pid", s.pid},
          {"started_us", s.started_us},
          {"activation", s.activation},
          {"kernel_socket", s.kernel_socket},
          {"query_socket", s.query_socket},
          {"store", s.store},
          {"analysis_enabled", s.analysis_enabled},
          {"journal_enabled", s.journal_enabled},
          {"counters", s.counters},
          {"store_usage", s.store_usage}};
}

QueryStatus status_from_json(const json& j) {
  QueryStatus s;
  s.version = j.at("version").get<std::string>();
  s.pid = j.at("pid").get<std::int64_t>();
  s.started_us = j.at("started_us").get<std::int64_t>();
  s.activation = j.at("activation").get<std::string>();
  s.kernel_socket = j.at("kernel_socket").get<std::string>();
  s.query_socket = j.at("query_socket").get<std::string>();
  s.store = j.at("store").get<std::string>();
  s.analysis_enabled = j.at("analysis_enabled").get<bool>();
  s.journal_enabled = j.at("journal_enabled").get<bool>();
  // get<object_t>() throws type_error for anything but an object.
  s.counters = j.at("counters").get<json::object_t>();
  s.store_usage = j.at("store_usage").get<json::object_t>();
  return s;
}

}  // namespace coredumpd
