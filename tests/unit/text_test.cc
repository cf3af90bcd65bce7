// util/text.h: character classes, UTF-8 validation and the one escaper that dumpctl and the
// daemon's log share.
#include "util/text.h"

#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "daemon/report/logging.h"

namespace coredumpd {
namespace {

using namespace std::string_literals;

TEST(Text, CharacterClasses) {
  // Each class against every byte: the bytes it holds, and no other.
  const std::string digits = "0123456789", lower = digits + "abcdef", hex = lower + "ABCDEF";
  for (int b = 0; b < 256; ++b) {
    const char c = static_cast<char>(b);
    EXPECT_EQ(is_digit(c), digits.find(c) != std::string::npos) << b;
    EXPECT_EQ(is_lower_hex(c), lower.find(c) != std::string::npos) << b;
    EXPECT_EQ(is_hex_digit(c), hex.find(c) != std::string::npos) << b;
  }
  EXPECT_TRUE(all_digits(digits));
  for (const char* s : {"", "12a", "-1", " 1", "1 "}) EXPECT_FALSE(all_digits(s)) << s;
}

TEST(Text, Utf8AcceptsValidSequences) {
  EXPECT_TRUE(is_valid_utf8(""));
  EXPECT_TRUE(is_valid_utf8("plain ascii"));
  EXPECT_TRUE(is_valid_utf8("nul\0inside"s));
  EXPECT_TRUE(is_valid_utf8("\x7f"));
  EXPECT_TRUE(is_valid_utf8("\xc2\x80"));                      // U+0080, smallest 2-byte
  EXPECT_TRUE(is_valid_utf8("\xdf\xbf"));                      // U+07FF
  EXPECT_TRUE(is_valid_utf8("\xe0\xa0\x80"));                  // U+0800, smallest 3-byte
  EXPECT_TRUE(is_valid_utf8("\xed\x9f\xbf"));                  // U+D7FF, just below the surrogates
  EXPECT_TRUE(is_valid_utf8("\xee\x80\x80"));                  // U+E000, just above them
  EXPECT_TRUE(is_valid_utf8("\xef\xbf\xbf"));                  // U+FFFF
  EXPECT_TRUE(is_valid_utf8("\xf0\x90\x80\x80"));              // U+10000, smallest 4-byte
  EXPECT_TRUE(is_valid_utf8("\xf4\x8f\xbf\xbf"));              // U+10FFFF, the largest
  EXPECT_TRUE(is_valid_utf8("caf\xc3\xa9 \xf0\x9f\x92\xa5"));  // "café 💥"
  char32_t cp = 0;
  EXPECT_EQ(decode_utf8("\xf0\x9f\x92\xa5", cp), 4U);
  EXPECT_EQ(cp, U'\U0001F4A5');
  EXPECT_EQ(decode_utf8("\xe2\x80\xae", cp), 3U);
  EXPECT_EQ(cp, U'\u202E');
}

TEST(Text, Utf8RejectsInvalidSequences) {
  EXPECT_FALSE(is_valid_utf8("\x80"));  // lone continuation
  EXPECT_FALSE(is_valid_utf8("\xbf"));
  EXPECT_FALSE(is_valid_utf8("\xff"));
  EXPECT_FALSE(is_valid_utf8("\xfe"));
  EXPECT_FALSE(is_valid_utf8("\xc0\x80"));                  // overlong NUL
  EXPECT_FALSE(is_valid_utf8("\xc1\xbf"));                  // overlong U+007F
  EXPECT_FALSE(is_valid_utf8("\xe0\x80\x80"));              // overlong 3-byte
  EXPECT_FALSE(is_valid_utf8("\xe0\x9f\xbf"));              // overlong U+07FF
  EXPECT_FALSE(is_valid_utf8("\xf0\x80\x80\x80"));          // overlong 4-byte
  EXPECT_FALSE(is_valid_utf8("\xf0\x8f\xbf\xbf"));          // overlong U+FFFF
  EXPECT_FALSE(is_valid_utf8("\xed\xa0\x80"));              // U+D800, high surrogate
  EXPECT_FALSE(is_valid_utf8("\xed\xbf\xbf"));              // U+DFFF, low surrogate
  EXPECT_FALSE(is_valid_utf8("\xed\xa0\xbd\xed\xb2\xa5"));  // CESU-8 surrogate pair
  EXPECT_FALSE(is_valid_utf8("\xf4\x90\x80\x80"));          // U+110000
  EXPECT_FALSE(is_valid_utf8("\xf5\x80\x80\x80"));
  EXPECT_FALSE(is_valid_utf8("\xf8\x88\x80\x80\x80"));  // old 5-byte form
  EXPECT_FALSE(is_valid_utf8("\xc3"));                  // truncated
  EXPECT_FALSE(is_valid_utf8("\xe2\x82"));
  EXPECT_FALSE(is_valid_utf8("\xf0\x9f\x92"));
  EXPECT_FALSE(is_valid_utf8("\xc3("));  // bad continuation
  EXPECT_FALSE(is_valid_utf8("\xe2\x28\xa1"));
  EXPECT_FALSE(is_valid_utf8("ok\xffok"));
  char32_t cp = 42;
  EXPECT_EQ(decode_utf8("", cp), 0U);
  EXPECT_EQ(decode_utf8("\xed\xa0\x80", cp), 0U);
  EXPECT_EQ(cp, 42U);
}

TEST(Text, EscapeForDisplay) {
  EXPECT_EQ(escape_for_display("plain /usr/bin/x"), "plain /usr/bin/x");
  EXPECT_EQ(escape_for_display("caf\xc3\xa9 \xf0\x9f\x92\xa5"), "caf\xc3\xa9 \xf0\x9f\x92\xa5");
  EXPECT_EQ(escape_for_display("a\nb\tc\rd"), "a\\nb\\tc\\rd");
  EXPECT_EQ(escape_for_display("\x1b[2J\x7f"), "\\x1b[2J\\x7f");
  EXPECT_EQ(escape_for_display("back\\slash"), "back\\\\slash");
  EXPECT_EQ(escape_for_display("\xff\xc0\x80\xed\xa0\x80"), "\\xff\\xc0\\x80\\xed\\xa0\\x80");
  EXPECT_EQ(escape_for_display("\xc2\x9b"
                               "1m"),
            "\\u009b1m");
  EXPECT_EQ(escape_for_display("\xe2\x80\xae\xe2\x81\xa6"), "\\u202e\\u2066");
  EXPECT_EQ(escape_for_display("nul\0x"s), "nul\\x00x");
  EXPECT_EQ(display_width("caf\xc3\xa9"), 4U);
}

TEST(Text, SanitizeJsonText) {
  const nlohmann::json j = {{"s", "a\nb\x1b\xc2\x9b\xe2\x80\xae caf\xc3\xa9"}};
  const std::string text = sanitize_json_text(j.dump(2));
  EXPECT_EQ(nlohmann::json::parse(text), j);  // still the same JSON
  EXPECT_NE(text.find("\\u009b\\u202e caf\xc3\xa9"), std::string::npos) << text;
  EXPECT_EQ(sanitize_json_text("\"\xff\""), "\"\\ufffd\"");
}

TEST(Text, NextUtf8Unit) {
  const Utf8Unit e = next_utf8_unit("\xe2\x80\xaex");
  EXPECT_TRUE(e.valid);
  EXPECT_EQ(e.size, 3U);
  EXPECT_EQ(e.cp, U'\u202E');
  const Utf8Unit bad = next_utf8_unit("\xffx");
  EXPECT_FALSE(bad.valid);
  EXPECT_EQ(bad.size, 1U);
  EXPECT_EQ(bad.cp, 0xFFU);
}

// The daemon's log escapes what a crashing process chose (comm, exe, argv) exactly as dumpctl
// shows it: a bidi override or a C1 control in a log line could reorder or restyle the line.
TEST(Text, LogLinesEscapeBidiControlsAsDumpctlDoes) {
  const std::string comm = "evil\xe2\x80\xae" "fdp.exe\xe2\x81\xa6\xe2\x80\xa8\xc2\x9b" "1m";
  EXPECT_EQ(escape_for_log(comm), "evil\\u202efdp.exe\\u2066\\u2028\\u009b1m");
  EXPECT_EQ(escape_for_log(comm), escape_for_display(comm));
  for (const std::string& s : {"a\nb\tc\rd"s, "\x1b[2J\x7f"s, "\xff\xc0\x80"s, "back\\slash"s, "nul\0x"s,
                              "caf\xc3\xa9 \xf0\x9f\x92\xa5"s}) {
    EXPECT_EQ(escape_for_log(s), escape_for_display(s));
  }
  EXPECT_EQ(escape_for_log("a\rb"), "a\\rb");
}

}  // namespace
}  // namespace coredumpd

namespace coredumpd {
namespace {

TEST(ReplaceInvalidUtf8, EachInvalidByteBecomesOneReplacementCharacter) {
  EXPECT_EQ(replace_invalid_utf8("caf\xc3\xa9 /usr/bin/x"), "caf\xc3\xa9 /usr/bin/x");
  EXPECT_EQ(replace_invalid_utf8(""), "");
  EXPECT_EQ(replace_invalid_utf8("a\xff" "b"), "a\uFFFDb");
  EXPECT_EQ(replace_invalid_utf8("\xc0\xaf"), "\uFFFD\uFFFD");          // overlong '/'
  EXPECT_EQ(replace_invalid_utf8("\xed\xa0\x80"), "\uFFFD\uFFFD\uFFFD");  // a surrogate
  EXPECT_EQ(replace_invalid_utf8("\xe2\x82"), "\uFFFD\uFFFD");          // cut short
  EXPECT_TRUE(is_valid_utf8(replace_invalid_utf8("\x80\x81\xfe\xff")));
}

}  // namespace
}  // namespace coredumpd
