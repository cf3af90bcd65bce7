// crash_chain: a fixed call chain that writes through a NULL pointer (SIGSEGV), for the stack-trace
// and signature tests. Two crash sites give two signatures:
//
//   crash_chain         frames (innermost first): level3, level2, level1, main
//   crash_chain other   frames (innermost first): other_site, level2, level1, main
//
// Built -O1 -g -fno-optimize-sibling-calls; every function is noinline and does work after its
// call (a volatile), so no frame is inlined or replaced by a tail call.
#include <string.h>

// extern "C": the frames carry these plain names, not C++ mangled ones.
static volatile int sink;

extern "C" {

__attribute__((noinline)) void level3(int *p) {
  *p = 3;  // the fault: p is NULL
  sink = sink + 1;
}

__attribute__((noinline)) void other_site(int *p) {
  p[1] = 4;  // the other fault: p is NULL (address 4)
  sink = sink + 1;
}

__attribute__((noinline)) void level2(int *p, int other) {
  if (other)
    other_site(p);
  else
    level3(p);
  sink = sink + 1;
}

__attribute__((noinline)) void level1(int *p, int other) {
  level2(p, other);
  sink = sink + 1;
}

}  // extern "C"

int main(int argc, char **argv) {
  int* volatile null = nullptr;
  level1(null, argc > 1 && strcmp(argv[1], "other") == 0);
  sink = sink + 1;
  return 0;
}
