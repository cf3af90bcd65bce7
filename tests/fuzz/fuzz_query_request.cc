// libFuzzer target: the query service's request parser (store/query_protocol.h), which reads lines
// from any local user. It must never throw, and what it accepts must be what it says.
//
// Input: one request line (without its '\n'). Invariants: parse_query_request() returns a request
// or an error and never throws; an accepted request prints (query_request_line()) as one line that
// parses back to the same line; get/core ids are 32 lower-case hex (they name files in the store);
// list bounds survive the round trip; an error prints as one JSON line whose code parses back.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>

#include <nlohmann/json.hpp>

#include "store/query_protocol.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

using namespace coredumpd;

bool is_hex_id(const std::string& id) {
  if (id.size() != 32) return false;
  for (const char c : id)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

void check_one_line(const std::string& line) {
  FUZZ_CHECK(!line.empty() && line.back() == '\n');
  FUZZ_CHECK(line.find('\n') == line.size() - 1);
}

void check_error(const QueryError& e) {
  const std::string line = query_error_line(e);
  check_one_line(line);
  const auto j = nlohmann::json::parse(line, nullptr, false);
  FUZZ_CHECK(j.is_object() && j["ok"] == false);
  FUZZ_CHECK(j["code"].is_string() && parse_query_error_code(j["code"].get<std::string>()) == e.code);
}

void check_request(const QueryRequest& r) {
  if (const auto* g = std::get_if<GetRequest>(&r)) FUZZ_CHECK(is_hex_id(g->id));
  if (const auto* c = std::get_if<CoreRequest>(&r)) FUZZ_CHECK(is_hex_id(c->id));
  const std::string line = query_request_line(r);
  check_one_line(line);
  const auto back = parse_query_request(std::string_view(line).substr(0, line.size() - 1));
  FUZZ_CHECK(std::holds_alternative<QueryRequest>(back));
  const auto& again = std::get<QueryRequest>(back);
  FUZZ_CHECK(again.index() == r.index());
  FUZZ_CHECK(query_request_line(again) == line);
  if (const auto* l = std::get_if<ListRequest>(&r)) {
    const auto& l2 = std::get<ListRequest>(again);
    const RecordQuery &q = l->query, &q2 = l2.query;
    FUZZ_CHECK(q.since_us == q2.since_us && q.until_us == q2.until_us && q.matches == q2.matches &&
               q.limit == q2.limit && q.newest_first == q2.newest_first && q.with_extra == q2.with_extra);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view line(reinterpret_cast<const char*>(data), size);
  const auto parsed = parse_query_request(line);
  if (const auto* e = std::get_if<QueryError>(&parsed)) {
    if (size >= kMaxRequestBytes) FUZZ_CHECK(e->code == QueryErrorCode::TooLarge);
    FUZZ_CHECK(e->code == QueryErrorCode::BadRequest || e->code == QueryErrorCode::TooLarge);
    check_error(*e);
  } else {
    FUZZ_CHECK(size < kMaxRequestBytes);
    check_request(std::get<QueryRequest>(parsed));
  }
  return 0;
}
