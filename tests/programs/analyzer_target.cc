// analyzer_target: stops at a known call chain, for the analyzer's tests and benchmarks. Run under
// gdb (`gdb -batch -ex run -ex 'gcore FILE'`), it faults and gdb writes the core at the fault, as
// the kernel would have (the registers at the faulting instruction), without core_pattern.
//
//   analyzer_target chain              main -> chain_one -> chain_two -> chain_three, SIGSEGV there
//   analyzer_target pc0                chain_one calls a null function pointer: PC 0
//   analyzer_target threads N          N threads "sleeper-<i>" sleep; thread "faulter" faults in
//                                      faulter_crash (TIDs printed as "TID <tid> <name>")
//   analyzer_target recurse N          recurse() N deep, SIGSEGV at the bottom
//   analyzer_target touch MIB THREADS  writes MIB MiB, starts THREADS sleeping threads, then faults
//   analyzer_target unlink-self        deletes its own executable, then faults in chain_three
//   analyzer_target abort              abort() in chain_three (machinery frames on top)
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

extern "C" {
volatile int* volatile g_null = nullptr;
std::atomic<int> g_started{0};
volatile unsigned char* g_memory = nullptr;

__attribute__((noinline)) void chain_three(bool do_abort) {
  if (do_abort) std::abort();
  *g_null = 3;  // SIGSEGV here
}
__attribute__((noinline)) void chain_two(bool do_abort) {
  chain_three(do_abort);
  asm volatile("" ::: "memory");  // not a tail call
}
__attribute__((noinline)) void chain_one(bool do_abort) {
  chain_two(do_abort);
  asm volatile("" ::: "memory");
}

__attribute__((noinline)) void call_null() {
  void (*volatile fn)() = nullptr;
  fn();  // PC 0
  asm volatile("" ::: "memory");
}

__attribute__((noinline)) int recurse(int depth) {
  if (depth <= 1) {
    *g_null = depth;
    return 0;
  }
  return recurse(depth - 1) + 1;
}

__attribute__((noinline)) void* sleeper_main(void*) {
  g_started.fetch_add(1);
  for (;;) ::pause();
  return nullptr;
}

__attribute__((noinline)) void faulter_crash() { *g_null = 7; }

__attribute__((noinline)) void* faulter_main(void* arg) {
  const int want = *static_cast<int*>(arg);
  while (g_started.load() < want) ::usleep(1000);
  pthread_setname_np(pthread_self(), "faulter");
  std::printf("TID %ld faulter\n", static_cast<long>(::syscall(SYS_gettid)));
  std::fflush(stdout);
  faulter_crash();
  return nullptr;
}
}

namespace {

void start_sleepers(int n, bool print) {
  for (int i = 0; i < n; ++i) {
    pthread_t t;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 64 * 1024);
    if (pthread_create(&t, &attr, sleeper_main, nullptr) != 0) {
      std::perror("pthread_create");
      std::exit(2);
    }
    pthread_attr_destroy(&attr);
    const std::string name = "sleeper-" + std::to_string(i);
    pthread_setname_np(t, name.c_str());
    if (print) std::printf("THREAD %s\n", name.c_str());
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IONBF, 0);  // no stdio buffer on the heap: small cores (fuzz seeds)
  const std::string mode = argc > 1 ? argv[1] : "chain";
  const int n = argc > 2 ? std::atoi(argv[2]) : 0;
  std::printf("PID %d\n", static_cast<int>(::getpid()));
  std::fflush(stdout);
  if (mode == "chain") chain_one(false);
  if (mode == "abort") chain_one(true);
  if (mode == "pc0") call_null();
  if (mode == "recurse") return recurse(n);
  if (mode == "unlink-self") {
    char path[4096];
    const ssize_t len = ::readlink("/proc/self/exe", path, sizeof path - 1);
    if (len <= 0) return 2;
    path[len] = 0;
    if (::unlink(path) != 0) return 2;
    chain_one(false);
  }
  if (mode == "threads" || mode == "touch") {
    if (mode == "touch") {
      const std::size_t bytes = static_cast<std::size_t>(n) << 20;
      g_memory = static_cast<unsigned char*>(std::malloc(bytes));
      for (std::size_t i = 0; i < bytes; ++i) g_memory[i] = static_cast<unsigned char>(i * 7 + (i >> 12));
    }
    const int threads = mode == "touch" ? (argc > 3 ? std::atoi(argv[3]) : 0) : n;
    start_sleepers(threads, false);
    int want = threads;
    pthread_t t;
    pthread_create(&t, nullptr, faulter_main, &want);
    pthread_join(t, nullptr);
  }
  std::fprintf(stderr, "analyzer_target: unknown mode %s\n", mode.c_str());
  return 2;
}
