// The man pages as the package installs them (docs/man: scdoc, then gzip -9n) rendered by man(1)
// at 80 columns: no groff or man warnings, nothing wider than the terminal, and the NAME and
// SYNOPSIS sections a reader (and whatis/apropos, via mandb) looks for.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "tests/support/test_support.h"

namespace coredumpd {
namespace {

using test::ExitStatus;
using test::read_file;
using test::run_capture;

struct Page {
  std::string file;      // under MAN_DIR
  std::string name;      // NAME's first word
  std::string synopsis;  // what SYNOPSIS's first line starts with
};

const std::vector<Page> kPages = {
    {"coredumpd.8.gz", "coredumpd", "coredumpd"},
    {"dumpctl.1.gz", "dumpctl", "dumpctl"},
    {"coredumpd.json.5.gz", "coredumpd.json", "/etc/coredumpd/coredumpd.json"},
};

std::pair<ExitStatus, std::string> sh(const std::string& command) {
  return run_capture({"/bin/sh", "-c", command}, std::chrono::seconds(60));
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// The rendered text of `page` (no formatting: man(1) strips it when not writing to a terminal).
std::string render(const Page& page) {
  const auto [status, text] =
      sh("MANWIDTH=80 LC_ALL=C.UTF-8 MAN_KEEP_FORMATTING= " MAN_PROGRAM " -l " MAN_DIR "/" + page.file + " 2>/dev/null");
  EXPECT_EQ(status.exit_code(), 0) << page.file;
  return text;
}

// The body lines of section `title` (up to the next unindented heading).
std::vector<std::string> section(const std::vector<std::string>& lines, const std::string& title) {
  std::vector<std::string> out;
  bool in = false;
  for (const auto& l : lines) {
    if (!l.empty() && l[0] != ' ') {
      in = l == title;
      continue;
    }
    if (in && !l.empty()) out.push_back(l.substr(l.find_first_not_of(' ')));
  }
  return out;
}

// What man(1) (--warnings: groff's default set) and groff -ww (every warning) say on stderr.
std::string warnings_of(const std::string& gz) {
  const auto [man_status, man] = sh("MANWIDTH=80 LC_ALL=C.UTF-8 " MAN_PROGRAM " --warnings -l " + gz + " 2>&1 >/dev/null");
  EXPECT_TRUE(man_status.exited && man_status.exit_code() == 0) << gz;
  const auto [groff_status, groff] = sh("gzip -dc " + gz + " | groff -ww -z -t -man -Tutf8 2>&1");
  EXPECT_TRUE(groff_status.exited && groff_status.exit_code() == 0) << gz;
  return man + groff;
}

TEST(ManPages, RenderWithoutWarnings) {
  if (std::string(MAN_PROGRAM).find("NOTFOUND") != std::string::npos) GTEST_SKIP() << "man(1) is not installed";
  for (const auto& page : kPages) EXPECT_EQ(warnings_of(std::string(MAN_DIR) + "/" + page.file), "") << page.file;
}

// The check above sees a real mistake: an undefined macro and an unknown escape.
TEST(ManPages, WarningsAreSeen) {
  if (std::string(MAN_PROGRAM).find("NOTFOUND") != std::string::npos) GTEST_SKIP() << "man(1) is not installed";
  const std::string gz = ::testing::TempDir() + "/bad.1.gz";
  const auto [status, out] = sh("printf '.TH BAD 1\\n.SH NAME\\nbad \\\\- x\\n.BADMACRO y\\n' | gzip -9n > " + gz);
  ASSERT_EQ(status.exit_code(), 0) << out;
  const std::string warnings = warnings_of(gz);
  EXPECT_NE(warnings.find("BADMACRO"), std::string::npos) << warnings;
}

TEST(ManPages, NameAndSynopsis) {
  if (std::string(MAN_PROGRAM).find("NOTFOUND") != std::string::npos) GTEST_SKIP() << "man(1) is not installed";
  for (const auto& page : kPages) {
    const auto lines = lines_of(render(page));
    ASSERT_GT(lines.size(), 20U) << page.file;
    const auto name = section(lines, "NAME");
    ASSERT_FALSE(name.empty()) << page.file << ": no NAME section";
    // "name - description": the form mandb's whatis parser needs.
    EXPECT_EQ(name[0].rfind(page.name + " - ", 0), 0U) << page.file << ": NAME is \"" << name[0] << "\"";
    const auto synopsis = section(lines, "SYNOPSIS");
    ASSERT_FALSE(synopsis.empty()) << page.file << ": no SYNOPSIS section";
    EXPECT_EQ(synopsis[0].rfind(page.synopsis, 0), 0U) << page.file << ": SYNOPSIS starts \"" << synopsis[0] << "\"";
    for (const char* s : {"DESCRIPTION", "SEE ALSO"}) EXPECT_FALSE(section(lines, s).empty()) << page.file << ": no " << s;
  }
}

TEST(ManPages, FitEightyColumns) {
  if (std::string(MAN_PROGRAM).find("NOTFOUND") != std::string::npos) GTEST_SKIP() << "man(1) is not installed";
  for (const auto& page : kPages) {
    const auto [status, wide] = sh("MANWIDTH=80 LC_ALL=C.UTF-8 " MAN_PROGRAM " -l " MAN_DIR "/" + page.file +
                                   " 2>/dev/null | awk 'length > 80'");
    EXPECT_EQ(wide, "") << page.file << ": lines wider than 80 columns";
  }
}

// Debian installs pages gzip -9n'd: no file name or time stamp in the header (reproducible).
TEST(ManPages, GzipHeaderHasNoNameOrTime) {
  for (const auto& page : kPages) {
    const auto header = read_file(std::string(MAN_DIR) + "/" + page.file);
    ASSERT_TRUE(header && header->size() > 10) << page.file;
    EXPECT_EQ(static_cast<unsigned char>((*header)[3]) & 0x08, 0) << page.file << ": FNAME set";
    EXPECT_EQ(header->substr(4, 4), std::string(4, '\0')) << page.file << ": MTIME set";
  }
}

// The configuration page lists every key (its KEYS section is generated: config_keys_test).
TEST(ManPages, ConfigPageListsKeys) {
  if (std::string(MAN_PROGRAM).find("NOTFOUND") != std::string::npos) GTEST_SKIP() << "man(1) is not installed";
  const std::string text = render(kPages[2]);
  for (const char* key : {"socket (path)", "max_concurrent_dumps (integer)", "max_use", "run_as_user", "over_size"})
    EXPECT_NE(text.find(key), std::string::npos) << key;
}

}  // namespace
}  // namespace coredumpd
