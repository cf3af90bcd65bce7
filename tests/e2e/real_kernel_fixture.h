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
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "store/index.h"
#include "store/record_extras.h"
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
  std::size_t prstatus_notes = 0;  // one per thread dumped
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
    for (std::size_t i = 0; i < phnum; ++i) {
      GElf_Phdr ph;
      if (!gelf_getphdr(elf, static_cast<int>(i), &ph) || ph.p_type != PT_NOTE) continue;
      Elf_Data* data = elf_getdata_rawchunk(elf, static_cast<off_t>(ph.p_offset), ph.p_filesz, ELF_T_NHDR);
      GElf_Nhdr nh;
      std::size_t off = 0, name_off = 0, desc_off = 0;
      while (data && (off = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
        if (nh.n_type == NT_PRSTATUS && ++c.prstatus_notes == 1) {  // the first is the crashing thread
          const auto* desc = static_cast<const char*>(data->d_buf) + desc_off;
          std::uint16_t cursig = 0;
          std::int32_t pid = 0;
          std::memcpy(&cursig, desc + 12, 2);  // pr_cursig (x86_64 elf_prstatus)
          std::memcpy(&pid, desc + 32, 4);     // pr_pid
          c.prstatus_signal = cursig;
          c.prstatus_pid = pid;
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
    return crash_program(argv, pid_out);
  }

  // Runs `argv` (argv[0]: a program that crashes) and returns its exit status (bounded: 60 s, then SIGKILL).
  ExitStatus crash_program(const std::vector<std::string>& argv, pid_t* pid_out) {
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
    std::vector<std::string> argv{CRASHER_BIN};
    argv.insert(argv.end(), args.begin(), args.end());
    return complete_dump_of_program(argv, pid_out);
  }

  // complete_dump_of_crash() for any crashing program: `argv[0]` is its path.
  std::optional<DumpRecord> complete_dump_of_program(const std::vector<std::string>& argv, pid_t* pid_out) {
    const auto st = crash_program(argv, pid_out);
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
    expect_released_promptly(*rec);
    return rec;
  }

  // How long after its core's last byte a crasher may be reaped: generous, far from any normal value
  // (bench/ measures the real figure); a daemon that keeps tasks frozen past it fails.
  static constexpr std::chrono::seconds kReleaseBound{30};

  // Expects `rec`'s task to have been released right after its dump, from the daemon's own
  // timestamps (extras, µs since the dump job started): the release (released_us) after the core's
  // last byte (stream_us) and no later than the core file was complete (compressed_us, if one was
  // kept) and stored (stored_us; a core recovered at the next start has no such times); and, if this
  // test was waiting for the crasher when it exited (reaped_at_us()), that it was reaped within
  // kReleaseBound of the last byte, whose time (UTC) is at least accept + handshake_us + stream_us.
  // Records failures; call it for every dump that streamed.
  void expect_released_promptly(const DumpRecord& rec) {
    const auto& x = rec.extra;
    const auto us = [&x](const char* key) -> std::optional<std::int64_t> {
      if (!x.contains(key) || !x[key].is_number_integer()) return std::nullopt;
      return x[key].get<std::int64_t>();
    };
    std::string times = "dump " + rec.id + " (" + std::string(state_name(rec.state)) + "):";
    for (const char* key : {extras::kStreamUs, extras::kReleasedUs, extras::kCompressedUs, extras::kStoredUs})
      times += std::string(" ") + key + "=" + (x.contains(key) ? x[key].dump() : "none");
    const auto stream = us(extras::kStreamUs), released = us(extras::kReleasedUs);
    ASSERT_TRUE(stream && released) << "no stream or release time: " << times;
    EXPECT_GE(*released, *stream) << "released before the core's last byte: " << times;
    if (!x.contains(extras::kRecovered)) {
      const auto stored = us(extras::kStoredUs);
      EXPECT_TRUE(stored && *released <= *stored) << "released after the record was stored: " << times;
      const bool kept_core = (rec.state == DumpState::Complete || rec.state == DumpState::Truncated) && !rec.path.empty();
      const auto compressed = us(extras::kCompressedUs);
      EXPECT_TRUE(compressed || !kept_core) << "no compressed_us for a kept core: " << times;
      EXPECT_LE(*released, compressed.value_or(*released)) << "released after compression ended: " << times;
    }
    const auto reaped = reaped_at_us(static_cast<pid_t>(rec.pid));
    if (!reaped) return;  // not waited for while it ran (or not our child: a container's crasher)
    const std::int64_t last_byte_at_least = rec.timestamp_us + x.value(extras::kHandshakeUs, std::int64_t{0}) + *stream;
    const std::int64_t bound_us = std::chrono::duration_cast<std::chrono::microseconds>(kReleaseBound).count();
    EXPECT_LE(*reaped - last_byte_at_least, bound_us)
        << "crasher " << rec.pid << " reaped " << (*reaped - last_byte_at_least) / 1000 << " ms after its core's last byte";
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
