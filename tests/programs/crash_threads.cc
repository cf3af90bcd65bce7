// crash_threads: N threads named "sleeper-<i>" (N = argv[1], default 4) sleep while one thread named
// "faulter" writes through a NULL pointer (SIGSEGV) once every sleeper is running and named.
//
//   crashing thread "faulter", frames (innermost first): faulter_crash, faulter_main,
//   start_thread (glibc), clone3 (glibc); the sleepers are in pause() (or still leaving the
//   barrier, in a futex wait); main in pthread_join().
//
// Built -O1 -g -fno-optimize-sibling-calls, noinline functions: the frames above are all there.
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

// extern "C": the frames carry these plain names, not C++ mangled ones.
static volatile int sink;

extern "C" {
static pthread_barrier_t all_named;

static void *sleeper_main(void *arg) {
  char name[16];
  snprintf(name, sizeof(name), "sleeper-%d", static_cast<int>(reinterpret_cast<long>(arg)));
  pthread_setname_np(pthread_self(), name);
  pthread_barrier_wait(&all_named);
  for (;;) pause();
  return nullptr;
}

__attribute__((noinline)) void faulter_crash(int *p) {
  *p = 1;  // the fault: p is NULL
  sink = sink + 1;
}

__attribute__((noinline)) void *faulter_main(void *arg) {
  (void)arg;
  pthread_setname_np(pthread_self(), "faulter");
  pthread_barrier_wait(&all_named);
  int* volatile null = nullptr;
  faulter_crash(null);
  sink = sink + 1;
  return nullptr;
}

}  // extern "C"

int main(int argc, char **argv) {
  const int n = argc > 1 ? atoi(argv[1]) : 4;
  if (n < 0 || n > 10000) return 2;
  pthread_barrier_init(&all_named, nullptr, static_cast<unsigned>(n) + 1);
  for (int i = 0; i < n; ++i) {
    pthread_t t;
    if (pthread_create(&t, nullptr, sleeper_main, reinterpret_cast<void*>(static_cast<long>(i))) != 0) return 3;
  }
  pthread_t faulter;
  if (pthread_create(&faulter, nullptr, faulter_main, nullptr) != 0) return 3;
  pthread_join(faulter, nullptr);
  return 0;
}
