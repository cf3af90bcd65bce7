// crash_recursion: recurse(n) calls itself down to n == 0, where it writes through a NULL pointer
// (SIGSEGV). Depth = argv[1] frames of recurse (default 200).
//
//   frames (innermost first): recurse (n = 0), recurse (n = 1), ..., recurse (n = depth-1), main
//   -- depth frames of recurse, then main: for the frame cap and the signature of a deep stack.
//
// Built -O1 -g -fno-optimize-sibling-calls; recurse is noinline and works after its call.
#include <stdlib.h>

// extern "C": the frames carry these plain names, not C++ mangled ones.
static volatile int sink;

extern "C" {

__attribute__((noinline)) void recurse(int n, int *p) {
  if (n == 0)
    *p = 1;  // the fault: p is NULL
  else
    recurse(n - 1, p);
  sink = sink + 1;
}

}  // extern "C"

int main(int argc, char **argv) {
  const int depth = argc > 1 ? atoi(argv[1]) : 200;
  if (depth < 1 || depth > 100000) return 2;
  int* volatile null = nullptr;
  recurse(depth - 1, null);
  sink = sink + 1;
  return 0;
}
