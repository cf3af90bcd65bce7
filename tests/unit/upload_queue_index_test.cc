// The upload queue in the index (schema 4, store/upload_row.h) and what retention does with it:
// a core whose upload is pending is never evicted; uploaded cores go before the others.
#include <gtest/gtest.h>

#include "tests/unit/retention_fixture.h"

namespace coredumpd {
namespace {

using namespace std::chrono_literals;

class UploadQueueIndex : public RetentionTest {
 protected:
  UploadRow row(int n, const char* state, const char* mode = "core") {
    UploadRow r;
    r.id = make_id(n);
    r.mode = mode;
    r.state = state;
    r.queued_us = 1;
    if (std::string(state) == upload_state::kDone) r.object_key = "h/" + r.id + "/core.zst";
    return r;
  }
};

TEST_F(UploadQueueIndex, RowsAreIdempotentAndDurable) {
  add_sized(1, 1000, 10s, 1000);
  add_sized(2, 1000, 5s, 1000);
  add(3, 1000, 1s, "x", "", DumpState::InProgress);
  const std::int64_t origin = index_->upload_origin(0);
  EXPECT_EQ(index_->upload_origin(12345), origin) << "the origin is set once";
  EXPECT_EQ(index_->upload_candidates(origin, 10), (std::vector<std::string>{make_id(1), make_id(2)}))
      << "final dumps without a row, oldest first; never an in_progress one";
  EXPECT_TRUE(index_->add_upload(row(1, upload_state::kQueued)));
  EXPECT_FALSE(index_->add_upload(row(1, upload_state::kQueued))) << "a second row for a dump is refused";
  EXPECT_EQ(index_->upload_candidates(origin, 10), std::vector<std::string>{make_id(2)});
  UploadRow r = *index_->get_upload(make_id(1));
  r.upload_id = "2~abc";
  r.attempts = 3;
  r.next_try_us = 500;
  ASSERT_TRUE(index_->save_upload(r));
  open_store();  // a restart
  const auto again = index_->get_upload(make_id(1));
  ASSERT_TRUE(again);
  EXPECT_EQ(again->upload_id, "2~abc");
  EXPECT_EQ(again->attempts, 3);
  EXPECT_TRUE(index_->due_uploads(499, 10).empty()) << "not before its next_try_us";
  EXPECT_EQ(index_->due_uploads(500, 10).size(), 1u);
  std::int64_t soonest = 0;
  EXPECT_EQ(index_->uploads_waiting(&soonest), 1u);
  EXPECT_EQ(soonest, 500);
  r.state = upload_state::kDone;
  index_->save_upload(r);
  EXPECT_EQ(index_->uploads_waiting(), 0u);
  EXPECT_TRUE(index_->due_uploads(1000, 10).empty());
}

TEST_F(UploadQueueIndex, RetentionKeepsPendingCoresAndEvictsUploadedFirst) {
  for (int n = 1; n <= 4; ++n) add_sized(n, 1000, std::chrono::seconds(100 - n), 100000);
  index_->add_upload(row(1, upload_state::kQueued));              // oldest: upload pending
  index_->add_upload(row(2, upload_state::kRecord, "metadata"));  // metadata only: no protection
  index_->add_upload(row(4, upload_state::kDone));                // newest: uploaded
  RetentionLimits l;
  l.max_use_bytes = 250000;  // room for two of the four
  const VacuumResult v = run_vacuum(l);
  EXPECT_EQ(removed_ids(v), (std::vector<std::string>{make_id(4), make_id(2)}))
      << "the uploaded core first although newest, then the oldest not pending";
  EXPECT_TRUE(has_file(1)) << "a core whose upload is pending is never deleted";
  EXPECT_TRUE(has_file(3));

  RetentionLimits age;
  age.max_core_age = 1s;
  run_vacuum(age);
  EXPECT_TRUE(has_file(1)) << "not by age either";
  EXPECT_FALSE(has_file(3));
}

}  // namespace
}  // namespace coredumpd
