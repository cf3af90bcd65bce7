// analysis/signature.h: which frames make a crash signature, their normalised form, and the hash
// (checked against coreutils' sha256sum, an independent SHA-256).
#include "analysis/signature.h"

#include <gtest/gtest.h>

#include <csignal>
#include <cstdio>
#include <fstream>
#include <string>
#include <unistd.h>

namespace coredumpd::analysis {
namespace {

Frame sym(std::string function, std::string module = "app") {
  Frame f;
  f.function = std::move(function);
  f.module = std::move(module);
  f.module_offset = 0x1234;
  f.pc = 0x5555'0000'1234;
  return f;
}

Frame unsym(std::string module, std::uint64_t offset) {
  Frame f;
  f.module = std::move(module);
  f.module_offset = offset;
  f.pc = 0x7f00'0000'0000 + offset;
  return f;
}

Thread thread_of(std::vector<Frame> frames) {
  Thread t;
  t.tid = 42;
  t.crashed = true;
  t.frames = std::move(frames);
  return t;
}

Signature sign(const std::vector<Frame>& frames, std::optional<int> signal = SIGSEGV) {
  const auto s = make_signature(thread_of(frames), signal);
  EXPECT_TRUE(s.has_value());
  return s.value_or(Signature{});
}

TEST(Signature, SameFramesSameHash) {
  const std::vector<Frame> frames{sym("crash_here"), sym("level2"), sym("main"), sym("__libc_start_call_main", "libc.so.6")};
  const Signature a = sign(frames), b = sign(frames);
  EXPECT_EQ(a.hash, b.hash);
  EXPECT_EQ(a.hash.size(), 32u);
  EXPECT_EQ(a.hash.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_EQ(a.text, "SIGSEGV: crash_here | level2 | main | __libc_start_call_main");
  // The module and addresses of a symbolised frame are not part of it (a library may move).
  std::vector<Frame> moved = frames;
  for (auto& f : moved) f.module_offset += 0x1000, f.pc += 0x100000, f.module = "other";
  EXPECT_EQ(sign(moved).hash, a.hash);
}

TEST(Signature, AnotherTopFrameAnotherHash) {
  const Signature a = sign({sym("crash_here"), sym("main")});
  const Signature b = sign({sym("crash_there"), sym("main")});
  EXPECT_NE(a.hash, b.hash);
  EXPECT_EQ(b.text, "SIGSEGV: crash_there | main");
}

TEST(Signature, OnlyTheTopFramesCount) {
  std::vector<Frame> deep;
  for (int i = 0; i < 200; ++i) deep.push_back(sym("recurse"));
  std::vector<Frame> deeper = deep;
  deeper.push_back(sym("main"));
  EXPECT_EQ(sign(deep).hash, sign(deeper).hash);
  EXPECT_EQ(sign(deep).text, "SIGSEGV: recurse | recurse | recurse | recurse | recurse");
}

TEST(Signature, SignalIsPartOfIt) {
  const std::vector<Frame> frames{sym("crash_here"), sym("main")};
  EXPECT_NE(sign(frames, SIGSEGV).hash, sign(frames, SIGBUS).hash);
  EXPECT_EQ(sign(frames, SIGBUS).text, "SIGBUS: crash_here | main");
  EXPECT_EQ(sign(frames, std::nullopt).text, "SIG?: crash_here | main");
  EXPECT_NE(sign(frames, std::nullopt).hash, sign(frames, SIGSEGV).hash);
}

TEST(Signature, AbortChainGivesTheCaller) {
  // glibc 2.36+: abort() via pthread_kill; older: raise/gsignal; the __GI_ aliases of static calls.
  const Signature abort_chain = sign({sym("__pthread_kill_implementation", "libc.so.6"),
                                      sym("__pthread_kill_internal", "libc.so.6"), sym("__GI_raise", "libc.so.6"),
                                      sym("__GI_abort", "libc.so.6"), sym("check_config"), sym("main")},
                                     SIGABRT);
  const Signature assert_chain = sign({sym("__pthread_kill_implementation.constprop.0", "libc.so.6"),
                                       sym("raise", "libc.so.6"), sym("abort", "libc.so.6"),
                                       sym("__assert_fail_base.cold", "libc.so.6"),
                                       sym("__assert_fail", "libc.so.6"), sym("check_config"), sym("main")},
                                      SIGABRT);
  const Signature direct = sign({sym("check_config"), sym("main")}, SIGABRT);
  EXPECT_EQ(abort_chain.text, "SIGABRT: check_config | main");
  EXPECT_EQ(abort_chain.hash, direct.hash);
  EXPECT_EQ(assert_chain.hash, direct.hash);
}

TEST(Signature, MachineryFrames) {
  for (const char* name :
       {"raise", "abort", "__assert_fail", "__assert_fail_base", "__GI_raise", "__GI_abort", "__GI___assert_fail",
        "pthread_kill", "__pthread_kill_implementation", "__pthread_kill_internal", "__libc_message",
        "__fortify_fail", "__chk_fail", "__stack_chk_fail", "std::terminate()", "__cxa_throw",
        "__gnu_cxx::__verbose_terminate_handler()", "std::__terminate(void (*)())",
        "__sanitizer::Die()", "__asan::ReportGenericError(unsigned long, unsigned long)",
        "__ubsan::Diag::~Diag()", "__tsan::ReportRace(__tsan::ThreadState*)", "__interceptor_memcpy",
        "gsignal", "__asan_report_load8", "__pthread_kill_implementation.constprop.0",
        "__assert_fail_base [clone .cold]"}) {
    EXPECT_TRUE(is_machinery_frame(sym(name))) << name;
  }
  for (const char* name : {"main", "__libc_start_call_main", "__libc_start_main", "raise_alarm", "abort_request",
                           "my::terminate()", "crash_here", "std::vector<int>::at(unsigned long)"}) {
    EXPECT_FALSE(is_machinery_frame(sym(name))) << name;
  }
  EXPECT_FALSE(is_machinery_frame(unsym("libc.so.6", 0x4242)));  // unsymbolised: nothing known
}

TEST(Signature, SanitizerChainGivesTheCaller) {
  const Signature s = sign({sym("__sanitizer::Die()", "libasan.so.8"),
                            sym("__asan::ScopedInErrorReport::~ScopedInErrorReport()", "libasan.so.8"),
                            sym("__asan::ReportGenericError(unsigned long, unsigned long, unsigned long, unsigned long, bool, unsigned long, unsigned int, bool)", "libasan.so.8"),
                            sym("__interceptor_memcpy", "libasan.so.8"), sym("copy_name"), sym("main")},
                           SIGABRT);
  EXPECT_EQ(s.text, "SIGABRT: copy_name | main");
}

TEST(Signature, UnsymbolisedFramesUseModuleAndOffset) {
  const Frame f = unsym("libfoo.so.1", 0x1a2b);
  EXPECT_EQ(frame_key(f), "libfoo.so.1+0x1a2b");
  Frame nowhere;
  nowhere.pc = 0;
  EXPECT_EQ(frame_key(nowhere), "0x0");  // a jump to address 0
  nowhere.pc = 0xdeadbeef;
  EXPECT_EQ(frame_key(nowhere), "0xdeadbeef");
  const Signature a = sign({unsym("libfoo.so.1", 0x1a2b), sym("main")});
  EXPECT_EQ(a.text, "SIGSEGV: libfoo.so.1+0x1a2b | main");
  EXPECT_NE(sign({unsym("libfoo.so.1", 0x1a2c), sym("main")}).hash, a.hash);
  EXPECT_NE(sign({unsym("libbar.so.1", 0x1a2b), sym("main")}).hash, a.hash);
}

TEST(Signature, CloneSuffixesAreNormalised) {
  EXPECT_EQ(frame_key(sym("parse.isra.0")), "parse");
  EXPECT_EQ(frame_key(sym("parse.constprop.3.isra.0")), "parse");
  EXPECT_EQ(frame_key(sym("parse.part.1")), "parse");
  EXPECT_EQ(frame_key(sym("parse.cold")), "parse");
  EXPECT_EQ(frame_key(sym("ns::parse(int) [clone .cold]")), "ns::parse(int)");
  EXPECT_EQ(frame_key(sym("a.isradical")), "a.isradical");  // not a suffix
  EXPECT_EQ(sign({sym("parse.isra.0"), sym("main")}).hash, sign({sym("parse"), sym("main")}).hash);
}

TEST(Signature, NoFramesNoSignature) {
  EXPECT_FALSE(make_signature(thread_of({}), SIGSEGV).has_value());
  // Only machinery (the unwind stopped inside abort): signed as it is rather than not at all.
  const Signature s = sign({sym("raise"), sym("abort")}, SIGABRT);
  EXPECT_EQ(s.text, "SIGABRT: raise | abort");
}

// The hash is SHA-256 of the text, as coreutils' sha256sum computes it (not a value this code made).
TEST(Signature, HashIsSha256PrefixOfTheText) {
  const Signature s = sign({sym("crash_here"), sym("level2"), sym("main")});
  char path[] = "/tmp/signature_test_XXXXXX";
  const int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::write(fd, s.text.data(), s.text.size()), static_cast<ssize_t>(s.text.size()));
  ::close(fd);
  FILE* p = ::popen(("sha256sum " + std::string(path)).c_str(), "r");
  ASSERT_NE(p, nullptr);
  char out[128] = {};
  const std::size_t n = std::fread(out, 1, sizeof out - 1, p);
  const int status = ::pclose(p);
  ::unlink(path);
  if (status != 0 || n < 64) GTEST_SKIP() << "sha256sum (coreutils) not usable here: status " << status;
  EXPECT_EQ(s.hash, std::string(out, 32)) << s.text;
}

// Fixed vectors, computed with `printf '%s' TEXT | sha256sum` (coreutils), not by this code: the
// hash must stay the same across hosts and releases, as the index keeps it.
TEST(Signature, FixedVectors) {
  const Signature a = sign({sym("crash_here"), sym("level2"), sym("main")});
  EXPECT_EQ(a.text, "SIGSEGV: crash_here | level2 | main");
  EXPECT_EQ(a.hash, "8fcac97dd2e161c3db2f390b2a6c5797");
  const Signature b = sign({sym("raise"), sym("abort"), sym("check_config"), sym("main")}, SIGABRT);
  EXPECT_EQ(b.text, "SIGABRT: check_config | main");
  EXPECT_EQ(b.hash, "412b6f09db312b8bd731068c76aadee6");
}

}  // namespace
}  // namespace coredumpd::analysis
