// Unit tests of filling a record from the core's notes where /proc was missed (daemon/dump/core_fill.h).
#include <csignal>

#include <gtest/gtest.h>

#include "daemon/dump/core_fill.h"
#include "store/record_extras.h"

using namespace coredumpd;
using protocol::CoreFacts;
using protocol::MappedFile;

namespace {

// A PIE crasher as the kernel's NT_FILE lists it: in address order, the executable's mappings,
// then libc and ld.so.
CoreFacts pie_core() {
  CoreFacts c;
  c.fname = "crasher";
  c.psargs = "/opt/t/crasher --segv now ";
  c.signal = SIGSEGV;
  c.page_size = 4096;
  c.files = {{0x555555554000, 0x555555555000, 0, "/opt/t/crasher"},
             {0x555555555000, 0x555555556000, 1, "/opt/t/crasher"},
             {0x7ffff7c00000, 0x7ffff7c28000, 0, "/usr/lib/x86_64-linux-gnu/libc.so.6"},
             {0x7ffff7fc5000, 0x7ffff7fc6000, 0, "/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"}};
  c.entry = 0x555555555040;
  return c;
}

}  // namespace

TEST(ExeFromCore, TheMappingHoldingAtEntry) {
  EXPECT_EQ(exe_from_core(pie_core()), "/opt/t/crasher");
  // The legacy mmap layout puts libraries below a PIE executable: AT_ENTRY still finds it.
  auto c = pie_core();
  c.files.insert(c.files.begin(), MappedFile{0x2aaaaaaab000, 0x2aaaaaad3000, 0, "/usr/lib/x86_64-linux-gnu/libc.so.6"});
  EXPECT_EQ(exe_from_core(c), "/opt/t/crasher");
}

TEST(ExeFromCore, WithoutAuxvTheMappingNamedLikeComm) {
  auto c = pie_core();
  c.entry.reset();
  c.files.insert(c.files.begin(), MappedFile{0x2aaaaaaab000, 0x2aaaaaad3000, 0, "/usr/lib/libfoo.so"});
  EXPECT_EQ(exe_from_core(c), "/opt/t/crasher");
  // comm holds the first 15 bytes of the base name.
  c.fname = "a-very-long-nam";
  c.files.push_back({0x600000000000, 0x600000001000, 0, "/usr/bin/a-very-long-name-indeed (deleted)"});
  EXPECT_EQ(exe_from_core(c), "/usr/bin/a-very-long-name-indeed (deleted)");
  // A comm changed by prctl(PR_SET_NAME) names no mapping: no guess.
  c.fname = "worker-3";
  EXPECT_EQ(exe_from_core(c), std::nullopt);
}

TEST(ArgvFromPsargs, SplitsAtSpacesAndDropsTheTrailingOne) {
  EXPECT_EQ(argv_from_psargs("/opt/t/crasher --segv now "), (std::vector<std::string>{"/opt/t/crasher", "--segv", "now"}));
  EXPECT_TRUE(argv_from_psargs("").empty());
  EXPECT_EQ(argv_from_psargs("a  b"), (std::vector<std::string>{"a", "b"}));
}

TEST(FillFromCore, FillsOnlyWhatIsMissingAndSaysSo) {
  DumpRecord r;
  r.comm = "from-proc";  // collected before the stall: kept
  r.extra[extras::kProc] = nlohmann::json::object();
  const auto filled = fill_from_core(pie_core(), r);
  EXPECT_EQ(filled, (std::vector<std::string>{"argv", "exe", "maps", "signal"}));
  EXPECT_EQ(r.comm, "from-proc");
  EXPECT_EQ(r.exe, "/opt/t/crasher");
  EXPECT_EQ(r.argv, (std::vector<std::string>{"/opt/t/crasher", "--segv", "now"}));
  EXPECT_EQ(r.signal, SIGSEGV);
  EXPECT_EQ(r.extra[extras::kFromCore], nlohmann::json(filled));
  const auto& maps = r.extra[extras::kCoreMappedFiles];
  ASSERT_EQ(maps.size(), 4u);
  EXPECT_EQ(maps[1]["offset"], 4096u) << "NT_FILE offsets are in pages";
  EXPECT_EQ(maps[1]["path"], "/opt/t/crasher");
}

TEST(FillFromCore, ACompleteHandshakeTakesNothing) {
  DumpRecord r;
  r.comm = "crasher";
  r.exe = "/opt/t/crasher";
  r.argv = {"crasher"};
  r.signal = SIGABRT;
  r.extra[extras::kProc] = {{"maps", "555555554000-555555555000 r--p ..."}};
  EXPECT_TRUE(fill_from_core(pie_core(), r).empty());
  EXPECT_FALSE(r.extra.contains(extras::kFromCore));
  EXPECT_FALSE(r.extra.contains(extras::kCoreMappedFiles));
  EXPECT_EQ(r.signal, SIGABRT);
}

TEST(FillFromCore, ANonElfStreamTakesNothing) {
  DumpRecord r;
  EXPECT_TRUE(fill_from_core(CoreFacts{}, r).empty());
  EXPECT_TRUE(r.comm.empty());
  EXPECT_FALSE(r.extra.contains(extras::kFromCore));
}
