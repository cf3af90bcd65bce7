// Unit tests of the "journal" configuration section (daemon/policy/config_journal.cc): defaults,
// values read, and errors that name the key.
#include <gtest/gtest.h>

#include "daemon/policy/config_json.h"
#include "tests/unit/config_test_util.h"

using namespace coredumpd;

using coredumpd::unit::error_of;
using coredumpd::unit::parse;

TEST(JournalConfig, Defaults) {
  const JournalSettings j = parse("{}").journal;
  EXPECT_TRUE(j.enabled);
  EXPECT_TRUE(j.stack_trace);
  EXPECT_EQ(j.queue, 256);
}

TEST(JournalConfig, ValuesRead) {
  const JournalSettings j = parse(R"({"journal": {"enabled": false, "stack_trace": false, "queue": 3}})").journal;
  EXPECT_FALSE(j.enabled);
  EXPECT_FALSE(j.stack_trace);
  EXPECT_EQ(j.queue, 3);
}

TEST(JournalConfig, ErrorsNameTheKey) {
  EXPECT_EQ(error_of(R"({"journal": {"queue": 0}})"), "test.json: journal.queue: value 0 out of range [1, 65536]");
  EXPECT_NE(error_of(R"({"journal": {"enabled": "yes"}})").find("test.json: journal.enabled:"), std::string::npos);
  EXPECT_NE(error_of(R"({"journal": {"stacktrace": true}})").find("journal.stacktrace: unknown key (known: enabled, stack_trace, queue)"),
            std::string::npos);
}

TEST(JournalConfig, WrittenBackAsRead) {
  const Config c = parse(R"({"journal": {"stack_trace": false, "queue": 9}})");
  const auto j = config_to_json(c)["journal"];
  EXPECT_EQ(j, nlohmann::json({{"enabled", true}, {"stack_trace", false}, {"queue", 9}}));
}
