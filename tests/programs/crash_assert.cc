// crash_assert: validate() fails an assert() (SIGABRT), whatever the build type (NDEBUG undefined).
//
//   frames (innermost first): __pthread_kill_implementation, __pthread_kill_internal, raise, abort,
//   __assert_fail_base, __assert_fail (glibc: the machinery a signature skips), validate, main.
//   The signature's first own frame is validate.
#undef NDEBUG
#include <assert.h>

// extern "C": the frames carry these plain names, not C++ mangled ones.
static volatile int sink;

extern "C" {

__attribute__((noinline)) void validate(int value) {
  assert(value > 0 && "value must be positive");
  sink = sink + 1;
}

}  // extern "C"

int main(int argc, char **argv) {
  (void)argv;
  validate(argc - 1);  // no arguments: 0
  sink = sink + 1;
  return 0;
}
