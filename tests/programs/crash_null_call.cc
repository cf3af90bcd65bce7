// crash_null_call: calls a NULL function pointer, so the fault is at PC 0 (SIGSEGV, fault address 0).
//
//   frames (innermost first): 0x0 (no function), call_null, main. The unwinder must step out of
//   PC 0 through the return address the call pushed (the top frame has no CFI of its own).
//
// Built -O1 -g -fno-optimize-sibling-calls: call_null's call is a real call, not a jump.
// extern "C": the frames carry these plain names, not C++ mangled ones.
static volatile int sink;

extern "C" {

typedef void (*handler_fn)(int);

__attribute__((noinline)) void call_null(handler_fn fn) {
  fn(1);  // fn is NULL: jumps to 0
  sink = sink + 1;
}

}  // extern "C"

int main(void) {
  handler_fn volatile fn = nullptr;
  call_null(fn);
  sink = sink + 1;
  return 0;
}
