// crash_abort: check_failed() prints a message and calls abort() (SIGABRT), as a CHECK macro would.
//
//   frames (innermost first): __pthread_kill_implementation, __pthread_kill_internal,
//   __GI_raise / raise, __GI_abort / abort (glibc: the machinery a signature skips), check_failed,
//   main. The signature's first own frame is check_failed.
#include <stdio.h>
#include <stdlib.h>

// extern "C": the frames carry these plain names, not C++ mangled ones.
static volatile int sink;

extern "C" {

__attribute__((noinline, noreturn)) void check_failed(const char *what) {
  fprintf(stderr, "check failed: %s\n", what);
  abort();
}

}  // extern "C"

int main(int argc, char **argv) {
  (void)argv;
  if (argc < 100) check_failed("argc < 100");
  sink = sink + 1;
  return 0;
}
