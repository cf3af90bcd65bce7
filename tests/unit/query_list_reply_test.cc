// The query service's list reply (daemon/query/query_answers.h): a RecordQuery answered a page at
// a time, in chunks of about the asked size, with the peer's visibility, and the old request
// without a query still listing every record in full.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "daemon/query/query_answers.h"
#include "store/index.h"
#include "store/record_extras.h"
#include "store/record_json.h"

namespace coredumpd {
namespace {

namespace fs = std::filesystem;

class QueryListReplyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "query_list_reply_test.XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    Index index(dir_, /*writable=*/true);
    for (int n = 1; n <= kRecords; ++n) {
      DumpRecord r;
      char id[33];
      std::snprintf(id, sizeof id, "%032x", n);
      r.id = id;
      r.state = DumpState::MetadataOnly;
      r.timestamp_us = 1'700'000'000'000'000 + n;
      r.pid = n;
      r.uid = r.euid = n % 2 == 0 ? 1000 : 0;
      r.comm = n % 3 == 0 ? "three" : "other";
      r.extra = {{extras::kOwnerMayRead, true}, {extras::kProc, {{"maps", std::string(10'000, 'm')}}}};
      index.insert(r);
    }
  }
  void TearDown() override { fs::remove_all(dir_); }

  /// Every line of the reply to `q` for `uid`, with the largest chunk's size in `*largest`.
  std::vector<nlohmann::json> lines(const RecordQuery& q, uid_t uid, std::size_t* largest = nullptr) {
    QueryAnswers answers(dir_, nullptr);
    QueryReply reply = answers.answer(ListRequest{q}, uid);
    std::vector<nlohmann::json> out;
    std::string rest;
    for (std::string chunk; !(chunk = reply.next_chunk(kChunk)).empty();) {
      if (largest) *largest = std::max(*largest, chunk.size());
      rest += chunk;
      for (std::size_t nl; (nl = rest.find('\n')) != std::string::npos; rest.erase(0, nl + 1))
        out.push_back(nlohmann::json::parse(rest.substr(0, nl)));
    }
    EXPECT_TRUE(rest.empty());
    return out;
  }

  static constexpr int kRecords = 300;
  static constexpr std::size_t kChunk = 64 * 1024;
  std::string dir_;
};

TEST_F(QueryListReplyTest, OldRequestListsEveryRecordInFullInBoundedChunks) {
  std::size_t largest = 0;
  const auto got = lines(RecordQuery{}, 0, &largest);
  ASSERT_EQ(got.size(), kRecords + 2u);
  EXPECT_EQ(got.front(), (nlohmann::json{{"ok", true}, {"op", "list"}}));
  EXPECT_EQ(got.back(), (nlohmann::json{{"end", true}, {"count", kRecords}}));
  for (std::size_t i = 1; i + 1 < got.size(); ++i) {
    const DumpRecord r = record_from_envelope(got[i]);
    EXPECT_EQ(r.pid, static_cast<std::int64_t>(i));
    EXPECT_TRUE(r.extra.contains(extras::kProc));
  }
  // A chunk is about the size asked: at most one page of records (each ~10 KB) over it.
  EXPECT_LE(largest, kChunk + QueryReply::kListPageRowsWithExtra * 11'000);
}

TEST_F(QueryListReplyTest, QuerySelectsOrdersAndLimitsWithTheVisibilityOfThePeer) {
  RecordQuery q;
  q.matches = {{"COREDUMP_COMM", "three"}};
  q.newest_first = true;
  q.limit = 4;
  q.with_extra = false;
  auto got = lines(q, 1000);  // uid 1000 sees the even ones: 300, 294, 288, 282
  ASSERT_EQ(got.size(), 6u);
  std::vector<std::int64_t> pids;
  for (std::size_t i = 1; i + 1 < got.size(); ++i) {
    const DumpRecord r = record_from_envelope(got[i]);
    pids.push_back(r.pid);
    EXPECT_FALSE(r.extra.contains(extras::kProc));
    EXPECT_TRUE(r.extra.contains(extras::kOwnerMayRead));
  }
  EXPECT_EQ(pids, (std::vector<std::int64_t>{300, 294, 288, 282}));
  EXPECT_EQ(got.back()["count"], 4);
  q.since_us = 1'700'000'000'000'000 + 299;
  got = lines(q, 0);
  ASSERT_EQ(got.size(), 3u);  // 300 only (299 is not "three")
  EXPECT_EQ(record_from_envelope(got[1]).pid, 300);
}

}  // namespace
}  // namespace coredumpd
