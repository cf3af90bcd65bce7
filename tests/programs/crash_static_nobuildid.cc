// crash_static_nobuildid: a static executable without a build-id note (-Wl,--build-id=none),
// stripped after the build (no symbols, no debug info), that writes through a NULL pointer
// (SIGSEGV). The analysis has no build-id to look up and no symbol to name.
//
//   frames (innermost first): static_crash, main, __libc_start_call_main, __libc_start_main_impl,
//   _start -- all unnamed in the stripped binary (addresses in the executable's mapping only).
// extern "C": the frames carry these plain names, not C++ mangled ones.
static volatile int sink;

extern "C" {

__attribute__((noinline)) void static_crash(int *p) {
  *p = 1;  // the fault: p is NULL
  sink = sink + 1;
}

}  // extern "C"

int main(void) {
  int* volatile null = nullptr;
  static_crash(null);
  sink = sink + 1;
  return 0;
}
