// crasher: a program that dies with a core dump in a chosen way. Used by the real-kernel tests and
// the benchmarks. Its extra arguments are ignored (tests pass odd argv to check it is recorded).
//
//   crasher [--mode segv|abort-thread|abort] [--touch-mib N] [--fill random|half-zero|zero|untouched]
//           [--lock-file PATH] [--threads N] [--ready-fd FD] [--] [ignored args...]
//
// --touch-mib allocates and writes N MiB so the core carries that much data; with --fill untouched
// it maps N MiB but writes only one page in every 256 MiB (the rest is never faulted in). --lock-file takes a
// POSIX write lock (F_SETLK) on PATH before crashing. --ready-fd writes one byte to FD when
// everything is set up, just before the crash.
#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

struct Options {
  std::string mode = "segv";
  std::size_t touch_mib = 0;
  std::string fill = "random";
  std::string lock_file;
  int threads = 0;
  int ready_fd = -1;
};

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr, "crasher: %s\n", why);
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(("missing value for " + a).c_str());
      return argv[++i];
    };
    if (a == "--") break;
    if (a == "--mode") o.mode = value();
    else if (a == "--touch-mib") o.touch_mib = std::stoul(value());
    else if (a == "--fill") o.fill = value();
    else if (a == "--lock-file") o.lock_file = value();
    else if (a == "--threads") o.threads = std::stoi(value());
    else if (a == "--ready-fd") o.ready_fd = std::stoi(value());
    // anything else: ignored on purpose
  }
  return o;
}

// Memory the core will carry. Random bytes do not compress; half-zero pages alternate random and
// zero 4 KiB pages, like a sparse heap.
void touch(std::size_t mib, const std::string& fill) {
  if (mib == 0) return;
  const std::size_t len = mib << 20;
  void* p = ::mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) usage("mmap failed");
  auto* words = static_cast<std::uint64_t*>(p);
  std::mt19937_64 rng(42);
  const std::size_t per_page = 4096 / sizeof(std::uint64_t);
  if (fill == "untouched") {
    for (std::size_t off = 0; off < len; off += std::size_t{256} << 20) {
      for (std::size_t k = 0; k < per_page; ++k) words[off / sizeof(std::uint64_t) + k] = rng();
    }
    return;
  }
  for (std::size_t page = 0; page < len / 4096; ++page) {
    std::uint64_t* w = words + page * per_page;
    const bool zero = fill == "zero" || (fill == "half-zero" && page % 2 == 1);
    if (zero) {
      w[0] = 1;  // fault the page in, then clear it: present but all zero
      w[0] = 0;
    } else {
      for (std::size_t k = 0; k < per_page; ++k) w[k] = rng();
    }
  }
}

void take_lock(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) usage("cannot open lock file");
  struct flock fl{};
  fl.l_type = F_WRLCK;
  fl.l_whence = SEEK_SET;
  if (::fcntl(fd, F_SETLK, &fl) < 0) usage("cannot lock");
}

// The address comes from outside the compiler's view so it cannot prove (and warn about) the fault.
// Never inlined: a backtrace names it (tests/e2e/promises_e2e_test.cc, dumpctl debug).
[[noreturn]] __attribute__((noinline)) void crash_segv(const char* address) {
  auto* bad = reinterpret_cast<volatile int*>(std::strtoull(address, nullptr, 0));
  *bad = 42;
  std::abort();
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  touch(o.touch_mib, o.fill);
  if (!o.lock_file.empty()) take_lock(o.lock_file);
  std::vector<std::thread> idle;
  for (int i = 0; i < o.threads; ++i) idle.emplace_back([] { ::pause(); });
  if (o.ready_fd >= 0) {
    const char c = 'r';
    (void)!::write(o.ready_fd, &c, 1);
  }
  if (o.mode == "segv") crash_segv("0x0");
  if (o.mode == "abort") std::abort();
  if (o.mode == "abort-thread") {
    std::thread([] { std::abort(); }).join();
  }
  usage("unknown --mode");
}
