// DumpRecord helpers: state names, signal names, JSON encoding of byte strings (UTF-8 validation is
// tests/unit/text_test.cc).
#include "store/dump_record.h"

#include <gtest/gtest.h>

#include <csignal>
#include <string>

namespace coredumpd {
namespace {

using namespace std::string_literals;

TEST(DumpRecord, StateNamesRoundTrip) {
  for (const auto s :
       {DumpState::InProgress, DumpState::Complete, DumpState::Truncated, DumpState::Failed,
        DumpState::Interrupted, DumpState::MetadataOnly, DumpState::Rejected}) {
    const auto parsed = parse_state(state_name(s));
    ASSERT_TRUE(parsed.has_value()) << state_name(s);
    EXPECT_EQ(*parsed, s);
  }
  EXPECT_STREQ(state_name(DumpState::InProgress), "in_progress");
  EXPECT_STREQ(state_name(DumpState::MetadataOnly), "metadata_only");
  EXPECT_FALSE(parse_state("Complete").has_value());
  EXPECT_FALSE(parse_state("").has_value());
  EXPECT_FALSE(parse_state("complete\n").has_value());
}

TEST(DumpRecord, SignalNames) {
  EXPECT_EQ(signal_name(SIGSEGV), "SIGSEGV");
  EXPECT_EQ(signal_name(SIGABRT), "SIGABRT");
  EXPECT_EQ(signal_name(SIGBUS), "SIGBUS");
  EXPECT_EQ(signal_name(0), "SIG0");
  EXPECT_EQ(signal_name(-3), "SIG-3");
  EXPECT_EQ(signal_name(200), "SIG200");
}

TEST(DumpRecord, BytesToJson) {
  EXPECT_EQ(bytes_to_json("hello"), nlohmann::json("hello"));
  EXPECT_EQ(bytes_to_json(""), nlohmann::json(""));
  EXPECT_EQ(bytes_to_json("a\nb\x1b"), nlohmann::json("a\nb\x1b"));  // valid UTF-8 stays a string
  EXPECT_EQ(bytes_to_json("a\xff"), nlohmann::json::parse("[97, 255]"));
  EXPECT_EQ(bytes_to_json("\xc0\x80"), nlohmann::json::parse("[192, 128]"));
  EXPECT_EQ(bytes_to_json("\xed\xa0\x80"), nlohmann::json::parse("[237, 160, 128]"));
  // Round trip through text for every byte value.
  std::string all;
  for (int b = 1; b < 256; ++b) all.push_back(static_cast<char>(b));
  const nlohmann::json j = bytes_to_json(all);
  ASSERT_TRUE(j.is_array());
  const auto back = bytes_from_json(nlohmann::json::parse(j.dump()));
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(*back, all);
  EXPECT_EQ(bytes_from_json(nlohmann::json("x\ny")), "x\ny");
  EXPECT_FALSE(bytes_from_json(nlohmann::json::parse("[256]")).has_value());
  EXPECT_FALSE(bytes_from_json(nlohmann::json::parse("[-1]")).has_value());
  EXPECT_FALSE(bytes_from_json(nlohmann::json::parse("[\"a\"]")).has_value());
  EXPECT_FALSE(bytes_from_json(nlohmann::json(3)).has_value());
}

TEST(DumpRecord, ToJsonIsLosslessAndSerialisable) {
  DumpRecord r;
  r.id = "0123456789abcdef0123456789abcdef";
  r.state = DumpState::Truncated;
  r.reason = "size limit";
  r.timestamp_us = 1'790'000'000'123'456;
  r.pid = 4242;
  r.uid = 1000;
  r.gid = 1000;
  r.euid = 0;
  r.egid = 0;
  r.comm = "evil\x1b[2J";
  r.exe = "/tmp/\xff\xfe bin";
  r.argv = {"/tmp/\xff\xfe bin", "", "two words", "line\nbreak", "\xc0\x80"};
  r.cwd = "/home/u";
  r.cgroup = "0::/user.slice\n";
  r.hostname = "h";
  r.boot_id = "b";
  r.coredump_mask = 0x5;
  r.signal = SIGSEGV;
  r.core_size = 5'000'000'000ULL;
  r.stored_size = 1234;
  r.compression = "zstd";
  r.path = r.id + ".zst";
  r.extra = {{"negotiated", {"PIDFD"}}, {"t_ms", 12}};

  const nlohmann::json j = to_json(r);
  const std::string text = j.dump();  // must not throw: all strings are valid UTF-8
  const nlohmann::json p = nlohmann::json::parse(text);
  EXPECT_EQ(p["id"], r.id);
  EXPECT_EQ(p["state"], "truncated");
  EXPECT_EQ(p["pid"], 4242);
  EXPECT_TRUE(p["tid"].is_null());
  EXPECT_TRUE(p["crashing_tid_ns"].is_null());
  EXPECT_EQ(p["signal"], SIGSEGV);
  EXPECT_EQ(p["signal_name"], "SIGSEGV");
  EXPECT_EQ(p["core_size"].get<std::uint64_t>(), 5'000'000'000ULL);
  EXPECT_EQ(p["coredump_mask"], 5);
  EXPECT_EQ(bytes_from_json(p["comm"]), r.comm);
  EXPECT_TRUE(p["exe"].is_array());
  EXPECT_EQ(bytes_from_json(p["exe"]), r.exe);
  ASSERT_EQ(p["argv"].size(), r.argv.size());
  for (std::size_t i = 0; i < r.argv.size(); ++i) {
    EXPECT_EQ(bytes_from_json(p["argv"][i]), r.argv[i]) << i;
  }
  EXPECT_TRUE(p["argv"][1].is_string());
  EXPECT_TRUE(p["argv"][4].is_array());
  EXPECT_EQ(p["extra"], r.extra);

  DumpRecord unsignalled;
  EXPECT_TRUE(to_json(unsignalled)["signal"].is_null());
  EXPECT_TRUE(to_json(unsignalled)["signal_name"].is_null());
  EXPECT_EQ(to_json(unsignalled)["state"], "in_progress");
}

}  // namespace
}  // namespace coredumpd
