// crash_deleted_exe: with the argument "delete", unlinks its own executable (/proc/self/exe's target;
// run a copy: the test copies the binary to a temp dir) and then writes through a NULL pointer
// (SIGSEGV). The kernel names the file "<path> (deleted)" in exe and NT_FILE; the analysis must
// still unwind and symbolize from the core (and the mapped file if it is still reachable).
//
//   frames (innermost first): deleted_crash, main
//
// Exits 2 if the unlink fails, so a test never mistakes an undeleted exe for the deleted case.
#include <limits.h>
#include <string.h>
#include <unistd.h>

// extern "C": the frames carry these plain names, not C++ mangled ones.
static volatile int sink;

extern "C" {

__attribute__((noinline)) void deleted_crash(int *p) {
  *p = 1;  // the fault: p is NULL
  sink = sink + 1;
}

}  // extern "C"

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "delete") == 0) {
    char self[PATH_MAX];
    const ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n <= 0) return 2;
    self[n] = '\0';
    if (unlink(self) != 0) return 2;
  }
  int* volatile null = nullptr;
  deleted_crash(null);
  sink = sink + 1;
  return 0;
}
