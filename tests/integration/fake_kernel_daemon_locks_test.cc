// What the record says about the crasher's locks under CLOSE_FILES (issue 25 item 3), end to end:
// a real fake-crasher holds a lock, shared as the RFC selftest shares it; coredumpd captures and
// judges it before the ack; the fake kernel then closes the crasher's fd table, and the record's
// verdict is held against what the kernel really did to the lock, and against `dumpctl info`.
#include <fcntl.h>
#include <sys/file.h>

#include "tests/integration/fake_kernel_daemon_fixture.h"
#include "util/unique_fd.h"

namespace coredumpd::test {
namespace {

using fk::LockKind;
using fk::lock_held;
using fk::LockShare;

struct Case {
  const char* name;
  LockKind kind;
  LockShare share;
  const char* type;  // as /proc prints it
  bool released;
};

class FakeKernelDaemonLocks : public FakeKernelDaemon, public ::testing::WithParamInterface<Case> {};

TEST_P(FakeKernelDaemonLocks, TheRecordSaysWhatCloseFilesDoesToEachLock) {
  const Case& c = GetParam();
  const std::string lock_path = *dir_ / "held.lock";
  std::string error;
  auto crasher = fk::Crasher::start({FAKE_CRASHER_BIN, lock_path, c.kind, c.share, 0}, error);
  ASSERT_TRUE(crasher) << error;
  const UniqueFd probe(::open(lock_path.c_str(), O_RDWR | O_CLOEXEC));
  bool held_after_close = true;
  auto o = fk::rfc_close_files_kernel(socket_);
  o.core = fk::CoreSource::pattern(64 * 1024);
  o.timeout = std::chrono::milliseconds(15'000);
  o.crasher = &*crasher;
  o.close_files = [&] { held_after_close = lock_held(probe.get(), c.kind); };  // right after the table went
  const auto res = fk::run(o);
  ASSERT_TRUE(fk::task_released(res));
  ASSERT_TRUE(res.close_files_called);
  EXPECT_EQ(held_after_close, !c.released) << "the kernel's own answer for this cell";
  const pid_t sharer = crasher->sharer_pid();
  crasher->end();

  const auto r = only_record();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->extra["negotiation"]["close_files"], "granted");
  const auto& release = r->extra["proc"]["lock_release"];
  ASSERT_EQ(release.size(), 1u) << r->extra["proc"].dump();
  const auto& l = release[0];
  EXPECT_EQ(l["type"], c.type);
  EXPECT_EQ(l["access"], "WRITE");
  EXPECT_EQ(l["target"], lock_path);
  EXPECT_EQ(l["close_files"], c.released ? "released" : "kept") << l.dump();
  std::string want = std::string(c.type) + " WRITE " + lock_path + " \u2014 ";
  if (c.released) {
    want += "released by CLOSE_FILES";
  } else if (c.share == LockShare::Files) {
    want += "kept: fd table shared with pid " + std::to_string(sharer) + " (CLONE_FILES)";
  } else {
    want += "kept: open file shared with pid " + std::to_string(sharer) + (c.kind == LockKind::Flock ? " (flock)" : " (OFD)");
  }
  if (!c.released) {
    EXPECT_EQ(l["why"], want.substr(want.find("kept: ") + 6));
  }
  if (c.share == LockShare::Dup) {
    EXPECT_EQ(l["fds"].size(), 2u);
  }
  const auto [st, info] = run_capture({DUMPCTL_BIN, "--store", store_, "info", r->id});
  EXPECT_NE(info.find(want), std::string::npos) << "dumpctl info:\n" << info;
  // Processes kcmp refuses (here: pid 1 of the container) are reported, never a cut-short scan.
  if (r->extra.contains("collect_errors") && r->extra["collect_errors"].contains("lock_release")) {
    EXPECT_NE(r->extra["collect_errors"]["lock_release"].get<std::string>().find("kcmp refused"), std::string::npos);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Rfc, FakeKernelDaemonLocks,
    ::testing::Values(Case{"posix_alone", LockKind::Posix, LockShare::None, "POSIX", true},
                      Case{"ofd_alone", LockKind::Ofd, LockShare::None, "OFDLCK", true},
                      Case{"flock_dup", LockKind::Flock, LockShare::Dup, "FLOCK", true},
                      Case{"posix_fork", LockKind::Posix, LockShare::Fork, "POSIX", true},
                      Case{"flock_fork", LockKind::Flock, LockShare::Fork, "FLOCK", false},
                      Case{"ofd_fork", LockKind::Ofd, LockShare::Fork, "OFDLCK", false},
                      Case{"posix_shared_table", LockKind::Posix, LockShare::Files, "POSIX", false}),
    [](const ::testing::TestParamInfo<Case>& i) { return std::string(i.param.name); });

}  // namespace
}  // namespace coredumpd::test
