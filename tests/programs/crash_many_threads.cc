// crash_many_threads: starts N threads (N = argv[1], default 2000; 64 KiB stacks) that sleep in
// pause(), and once all are running the main thread writes through a NULL pointer (SIGSEGV).
//
//   crashing thread: the main one, frames (innermost first): many_threads_crash, main
//   (the others: pause, thread_main, start_thread, clone3). For the thread caps of the handshake
//   (extra.thread_names, 4096) and of the analysis.
//
// Exits 3 if a thread cannot be created (a low RLIMIT_NPROC or threads-max), before any crash.
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

// extern "C": the frames carry these plain names, not C++ mangled ones.
static volatile int sink;

extern "C" {
static pthread_barrier_t all_started;

static void *thread_main(void *arg) {
  (void)arg;
  pthread_barrier_wait(&all_started);
  for (;;) pause();
  return nullptr;
}

__attribute__((noinline)) void many_threads_crash(int *p) {
  *p = 1;  // the fault: p is NULL
  sink = sink + 1;
}

}  // extern "C"

int main(int argc, char **argv) {
  const int n = argc > 1 ? atoi(argv[1]) : 2000;
  if (n < 0 || n > 100000) return 2;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 64 * 1024);
  pthread_barrier_init(&all_started, nullptr, static_cast<unsigned>(n) + 1);
  for (int i = 0; i < n; ++i) {
    pthread_t t;
    if (pthread_create(&t, &attr, thread_main, nullptr) != 0) return 3;
  }
  pthread_barrier_wait(&all_started);
  int* volatile null = nullptr;
  many_threads_crash(null);
  sink = sink + 1;
  return 0;
}
