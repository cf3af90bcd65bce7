// The real-kernel test fixture: coredumpd on a temp store, core_pattern pointed at it under the
// global lock, crashers started with RLIMIT_CORE unlimited (coredumpd honours the limit).
#pragma once

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <sys/resource.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "store/index.h"
#include "tests/support/test_support.h"

// Skips the calling test (returns from the calling void function) when the real-kernel tests
// cannot run here, printing why; under COREDUMPD_REQUIRE_REAL_KERNEL=1 (.ci/run) fails it instead,
// with the same reason. `what` names the test kind in the message.
#define SKIP_WITHOUT_REAL_KERNEL(what)                                                              \
  do {                                                                                              \
    if (const auto why_unavailable = ::coredumpd::test::real_kernel_unavailable()) {                \
      if (::coredumpd::test::real_kernel_required())                                                \
        GTEST_FAIL() << "COREDUMPD_REQUIRE_REAL_KERNEL=1, but the real-kernel tests cannot run: "   \
                     << *why_unavailable;                                                           \
      std::fprintf(stderr, "SKIPPED %s: %s\n", what, why_unavailable->c_str());                     \
      GTEST_SKIP() << *why_unavailable;                                                             \
    }                                                                                               \
  } while (false)

namespace coredumpd::test {

// Facts read back from a stored core with elfutils, independently of the daemon's own note scanner.
struct CoreCheck {
  bool is_core = false;
  int prstatus_signal = 0;
  long prstatus_pid = 0;
};

inline CoreCheck inspect_core(const std::string& path) {
  CoreCheck c;
  elf_version(EV_CURRENT);
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return c;
  Elf* elf = elf_begin(fd, ELF_C_READ, nullptr);
  GElf_Ehdr eh;
  if (elf && gelf_getehdr(elf, &eh) && eh.e_type == ET_CORE) {
    c.is_core = true;
    std::size_t phnum = 0;
    elf_getphdrnum(elf, &phnum);
    for (std::size_t i = 0; i < phnum && c.prstatus_pid == 0; ++i) {
      GElf_Phdr ph;
      if (!gelf_getphdr(elf, static_cast<int>(i), &ph) || ph.p_type != PT_NOTE) continue;
      Elf_Data* data = elf_getdata_rawchunk(elf, static_cast<off_t>(ph.p_offset), ph.p_filesz, ELF_T_NHDR);
      GElf_Nhdr nh;
      std::size_t off = 0, name_off = 0, desc_off = 0;
      while (data && (off = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
        if (nh.n_type == NT_PRSTATUS) {
          const auto* desc = static_cast<const char*>(data->d_buf) + desc_off;
          std::uint16_t cursig = 0;
          std::int32_t pid = 0;
          std::memcpy(&cursig, desc + 12, 2);  // pr_cursig (x86_64 elf_prstatus)
          std::memcpy(&pid, desc + 32, 4);     // pr_pid
          c.prstatus_signal = cursig;
          c.prstatus_pid = pid;
          break;
        }
      }
    }
  }
  if (elf) elf_end(elf);
  ::close(fd);
  return c;
}

class RealKernel : public ::testing::Test {
 protected:
  void SetUp() override { start_daemon(); }

  // Starts coredumpd (with `config` JSON, if any) on a fresh temp dir and points core_pattern at it.
  void start_daemon(const std::string& config = "", const std::vector<std::string>& extra_args = {}) {
    SKIP_WITHOUT_REAL_KERNEL("real-kernel test");
    pattern_.reset();
    daemon_.reset();
    dir_ = std::make_unique<TempDir>();
    socket_ = *dir_ / "coredump.socket";
    store_ = *dir_ / "store";
    restart_daemon(config, extra_args);
  }

  // (Re)starts coredumpd on the current temp dir and store, e.g. after stopping or killing it;
  // `extra_args` go on its command line.
  void restart_daemon(const std::string& config = "", const std::vector<std::string>& extra_args = {}) {
    pattern_.reset();
    if (daemon_) daemon_->stop();
    std::vector<std::string> args;
    if (!config.empty()) {
      const std::string path = *dir_ / "config.json";
      FILE* f = std::fopen(path.c_str(), "w");
      std::fputs(config.c_str(), f);
      std::fclose(f);
      args = {"--config", path};
    }
    args.insert(args.end(), extra_args.begin(), extra_args.end());
    daemon_ = std::make_unique<Daemon>(COREDUMPD_BIN, socket_, store_, *dir_ / "coredumpd.log", args);
    pattern_ = std::make_unique<CorePatternLock>("@@" + socket_);
  }

  void TearDown() override {
    pattern_.reset();  // restore core_pattern first: nothing else may crash into our socket
    if (daemon_ && daemon_->pid() > 0) {
      const auto st = daemon_->stop();
      EXPECT_EQ(st.exit_code(), 0) << "coredumpd did not stop cleanly; log:\n" << daemon_->log();
      if (HasFailure()) std::fprintf(stderr, "coredumpd log:\n%s\n", daemon_->log().c_str());
    }
  }

  // Crashes the crasher with `args` and returns its exit status (bounded: 60 s, then SIGKILL).
  ExitStatus crash(const std::vector<std::string>& args, pid_t* pid_out) {
    std::vector<std::string> argv{CRASHER_BIN};
    argv.insert(argv.end(), args.begin(), args.end());
    const pid_t pid = spawn(argv);
    *pid_out = pid;
    return wait_for(pid, 60s);
  }

  // Waits (bounded, `timeout`) until the dump of `pid` has left InProgress, and returns it.
  std::optional<DumpRecord> stored_dump_of(pid_t pid, std::chrono::milliseconds timeout = 30s) {
    std::optional<DumpRecord> found;
    wait_until(
        [&] {
          try {
            Index index(store_, false);
            for (auto& r : index.list())
              if (r.pid == pid && r.state != DumpState::InProgress) found = r;
          } catch (const IndexError&) {
          }
          return found.has_value();
        },
        timeout);
    return found;
  }

  // Crashes the crasher with `args`, expects it to exit with a core dumped and its dump to end
  // Complete, and returns that dump (nullopt, with a failure recorded, if any of it went wrong).
  std::optional<DumpRecord> complete_dump_of_crash(const std::vector<std::string>& args, pid_t* pid_out) {
    const auto st = crash(args, pid_out);
    if (!st.exited) {
      ADD_FAILURE() << "crasher hung (SIGKILLed)";
      return std::nullopt;
    }
    EXPECT_TRUE(st.core_dumped()) << "the kernel did not report WCOREDUMP";
    auto rec = stored_dump_of(*pid_out);
    if (!rec) {
      ADD_FAILURE() << "no dump indexed for pid " << *pid_out;
      return std::nullopt;
    }
    EXPECT_EQ(rec->state, DumpState::Complete) << rec->reason;
    return rec;
  }

  // Gets the core of `rec` back with `dumpctl dump` into a file of the test's directory, expects it
  // to have the recorded size and to be the ELF core of `pid`, killed by `signal` (NT_PRSTATUS),
  // and returns its path (nullopt, with a failure recorded, if dumpctl failed).
  std::optional<std::string> dumped_core_of(const DumpRecord& rec, pid_t pid, int signal) {
    const std::string out = *dir_ / "core.out";
    const auto [dst, dtext] = run_capture({DUMPCTL_BIN, "--store", store_, "dump", rec.id, "-o", out});
    if (dst.exit_code() != 0) {
      ADD_FAILURE() << "dumpctl dump: " << dtext;
      return std::nullopt;
    }
    EXPECT_EQ(std::filesystem::file_size(out), rec.core_size);
    const auto core = inspect_core(out);
    EXPECT_TRUE(core.is_core);
    EXPECT_EQ(core.prstatus_signal, signal);
    EXPECT_EQ(core.prstatus_pid, pid);
    return out;
  }

  std::unique_ptr<TempDir> dir_;
  std::string socket_, store_;
  std::unique_ptr<Daemon> daemon_;
  std::unique_ptr<CorePatternLock> pattern_;
  ScopedCoreLimit core_limit_{RLIM_INFINITY};  // we honour RLIMIT_CORE; Debian defaults to 0
};

}  // namespace coredumpd::test
