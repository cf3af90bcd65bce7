// store/query_protocol.h: request parsing (never throws), request/error lines, the visibility
// rule, QueryStatus JSON.
#include "store/query_protocol.h"

#include <gtest/gtest.h>

#include <string>
#include <variant>

#include "store/record_extras.h"

namespace coredumpd {
namespace {

const std::string kId(32, 'a');

QueryError error_of(std::string_view line) {
  auto r = parse_query_request(line);
  EXPECT_TRUE(std::holds_alternative<QueryError>(r)) << line;
  return std::holds_alternative<QueryError>(r) ? std::get<QueryError>(r) : QueryError{};
}

QueryRequest request_of(std::string_view line) {
  auto r = parse_query_request(line);
  EXPECT_TRUE(std::holds_alternative<QueryRequest>(r))
      << line << ": " << (std::holds_alternative<QueryError>(r) ? std::get<QueryError>(r).message : "");
  return std::holds_alternative<QueryRequest>(r) ? std::get<QueryRequest>(r) : QueryRequest{};
}

TEST(QueryProtocol, ParsesEachOp) {
  auto l = std::get<ListRequest>(request_of(R"({"op":"list"})"));
  EXPECT_FALSE(l.query.since_us);
  EXPECT_FALSE(l.query.until_us);
  EXPECT_TRUE(l.query.matches.empty());
  EXPECT_FALSE(l.query.limit);
  EXPECT_FALSE(l.query.newest_first);
  EXPECT_TRUE(l.query.with_extra);  // a request from before the query: whole records, as then
  l = std::get<ListRequest>(request_of(R"({"op":"list","since_us":5,"until_us":-7,"x":[1]})"));
  EXPECT_EQ(l.query.since_us, 5);
  EXPECT_EQ(l.query.until_us, -7);
  l = std::get<ListRequest>(request_of(
      R"({"op":"list","matches":[{"field":"COREDUMP_COMM","value":"a b"},{"field":"COREDUMP_EXE","value":[47,255]}],)"
      R"("limit":3,"newest_first":true,"with_extra":false})"));
  EXPECT_EQ(l.query.matches, (std::vector<FieldMatch>{{"COREDUMP_COMM", "a b"}, {"COREDUMP_EXE", "/\xff"}}));
  EXPECT_EQ(l.query.limit, 3u);
  EXPECT_TRUE(l.query.newest_first);
  EXPECT_FALSE(l.query.with_extra);
  EXPECT_EQ(std::get<GetRequest>(request_of(R"({"op":"get","id":")" + kId + "\"}")).id, kId);
  EXPECT_EQ(std::get<CoreRequest>(request_of(R"({"id":")" + kId + R"(","op":"core"})")).id, kId);
  EXPECT_TRUE(std::holds_alternative<StatusRequest>(request_of(R"( {"op":"status"} )")));
  EXPECT_EQ(std::get<DeleteRequest>(request_of(R"({"op":"delete","id":")" + kId + "\"}")).id, kId);
}

TEST(QueryProtocol, RefusesMalformedRequests) {
  for (const char* line : {"", "{", "[]", "\"list\"", "null", "{}", R"({"op":1})", R"({"op":"drop"})",
                           R"({"op":"list","since_us":"1"})", R"({"op":"list","since_us":1.5})",
                           R"({"op":"list","until_us":18446744073709551615})", R"({"op":"get"})",
                           R"({"op":"get","id":7})", R"({"op":"core","id":"abc"})", R"({"op":"delete"})",
                           R"({"op":"delete","id":"../x.zst"})",
                           R"({"op":"get","id":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"})",
                           R"({"op":"get","id":"../../../../../../etc/passwd.zst"})",
                           "{\"op\":\"st\xff\"}", "{\"op\":\"status\"}garbage",
                           R"({"op":"list","limit":-1})", R"({"op":"list","limit":1.5})",
                           R"({"op":"list","newest_first":1})", R"({"op":"list","with_extra":"no"})",
                           R"({"op":"list","matches":{}})", R"({"op":"list","matches":[["COREDUMP_PID","1"]]})",
                           R"({"op":"list","matches":[{"field":1,"value":"1"}]})",
                           R"({"op":"list","matches":[{"field":"COREDUMP_PID"}]})",
                           R"({"op":"list","matches":[{"field":"COREDUMP_PID","value":[256]}]})"}) {
    EXPECT_EQ(error_of(line).code, QueryErrorCode::BadRequest) << line;
  }
  EXPECT_EQ(error_of(std::string(1'000'000, '[')).code, QueryErrorCode::TooLarge);
  EXPECT_EQ(error_of(std::string(kMaxRequestBytes, ' ')).code, QueryErrorCode::TooLarge);
  // Deep nesting just under the limit is refused without blowing the stack.
  EXPECT_EQ(error_of(std::string(kMaxRequestBytes - 1, '[')).code, QueryErrorCode::BadRequest);
}

TEST(QueryProtocol, RequestLinesRoundTrip) {
  RecordQuery full;
  full.since_us = 1;
  full.until_us = 2;
  full.matches = {{"COREDUMP_PID", "7"}, {"COREDUMP_COMM", std::string("\xff\x01", 2)}, {"COREDUMP_PID", "8"}};
  full.limit = 0;
  full.newest_first = true;
  full.with_extra = false;
  for (const QueryRequest& r : {QueryRequest{ListRequest{}}, QueryRequest{ListRequest{full}},
                                QueryRequest{GetRequest{kId}}, QueryRequest{CoreRequest{kId}},
                                QueryRequest{StatusRequest{}}, QueryRequest{DeleteRequest{kId}}}) {
    const std::string line = query_request_line(r);
    ASSERT_FALSE(line.empty());
    EXPECT_EQ(line.back(), '\n');
    EXPECT_EQ(line.find('\n'), line.size() - 1);
    const auto back = request_of(std::string_view(line).substr(0, line.size() - 1));
    EXPECT_EQ(back.index(), r.index());
    EXPECT_EQ(query_request_line(back), line);
  }
}

TEST(QueryProtocol, ErrorLinesAndCodeNames) {
  for (auto c : {QueryErrorCode::BadRequest, QueryErrorCode::TooLarge, QueryErrorCode::NotFound,
                 QueryErrorCode::NoCore, QueryErrorCode::Busy, QueryErrorCode::Internal}) {
    EXPECT_EQ(parse_query_error_code(query_error_code_name(c)), c);
  }
  EXPECT_STREQ(query_error_code_name(QueryErrorCode::NotFound), "not_found");
  EXPECT_STREQ(query_error_code_name(QueryErrorCode::TooLarge), "too_large");
  EXPECT_FALSE(parse_query_error_code("nope"));
  // A message with bytes that are not UTF-8 still makes one JSON line.
  const std::string line = query_error_line({QueryErrorCode::Internal, "open \xff\n failed"});
  EXPECT_EQ(line.find('\n'), line.size() - 1);
  const auto j = nlohmann::json::parse(line);
  EXPECT_EQ(j["ok"], false);
  EXPECT_EQ(j["code"], "internal");
  EXPECT_TRUE(j["error"].is_string());
}

DumpRecord own_record(std::int64_t uid) {
  DumpRecord r;
  r.id = kId;
  r.uid = r.euid = uid;
  r.gid = r.egid = 100;
  r.extra[extras::kOwnerMayRead] = true;
  return r;
}

TEST(QueryProtocol, PeerMaySee) {
  DumpRecord r = own_record(1000);
  EXPECT_TRUE(peer_may_see(r, 1000));
  EXPECT_TRUE(peer_may_see(r, 0));
  EXPECT_FALSE(peer_may_see(r, 1001));

  DumpRecord setuid = own_record(1000);
  setuid.euid = 0;  // a set-uid program run by 1000
  EXPECT_FALSE(peer_may_see(setuid, 1000));
  EXPECT_TRUE(peer_may_see(setuid, 0));

  DumpRecord setgid = own_record(1000);
  setgid.egid = 0;
  EXPECT_FALSE(peer_may_see(setgid, 1000));

  DumpRecord root_dumped = own_record(1000);
  root_dumped.extra[extras::kOwnerMayRead] = false;
  EXPECT_FALSE(peer_may_see(root_dumped, 1000));
  root_dumped.extra[extras::kOwnerMayRead] = "true";  // not a boolean
  EXPECT_FALSE(peer_may_see(root_dumped, 1000));
  root_dumped.extra.erase(extras::kOwnerMayRead);
  EXPECT_FALSE(peer_may_see(root_dumped, 1000));
  EXPECT_TRUE(peer_may_see(root_dumped, 0));

  // Unknown ids (-1) never match a uid, not even (uid_t)-1.
  DumpRecord unknown = own_record(-1);
  EXPECT_FALSE(peer_may_see(unknown, static_cast<uid_t>(-1)));
}

TEST(QueryProtocol, StatusRoundTrip) {
  QueryStatus s;
  s.version = "1.2.3";
  s.pid = 42;
  s.started_us = 1'700'000'000'000'000;
  s.activation = "socket";
  s.kernel_socket = "/run/coredumpd/coredump.socket";
  s.query_socket = kDefaultQuerySocket;
  s.store = "/var/lib/coredumpd";
  s.analysis_enabled = true;
  s.counters = {{"stored", 12}};
  s.store_usage = {{"used_bytes", 5}};
  const auto j = to_json(s);
  const QueryStatus back = status_from_json(nlohmann::json::parse(j.dump()));
  EXPECT_EQ(to_json(back), j);
  EXPECT_EQ(back.counters["stored"], 12);

  auto missing = j;
  missing.erase("pid");
  EXPECT_THROW(status_from_json(missing), nlohmann::json::exception);
  auto mistyped = j;
  mistyped["counters"] = nlohmann::json::array();
  EXPECT_THROW(status_from_json(mistyped), nlohmann::json::exception);
  mistyped = j;
  mistyped["analysis_enabled"] = "yes";
  EXPECT_THROW(status_from_json(mistyped), nlohmann::json::exception);
}

}  // namespace
}  // namespace coredumpd
