# Shared helpers for the tests/systemd shell tests. Sourced; expects CTest's environment
# (COREDUMPD, DUMPCTL, CRASHER, PYTHON, SOURCE_DIR, BUILD_DIR; see CMakeLists.txt).
set -euo pipefail

: "${COREDUMPD:?run through ctest}" "${SOURCE_DIR:?run through ctest}"
PYTHON=${PYTHON:-python3}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# A short path: socket paths must stay under 108 bytes.
T=$(mktemp -d /tmp/cdd-systemd.XXXXXX)
PIDS=()
EXIT_HOOKS=()  # commands run first on exit (e.g. restoring core_pattern), before PIDS are stopped

cleanup() {
  local rc=$?
  for h in "${EXIT_HOOKS[@]}"; do eval "$h" || true; done
  # Only what this test started, by PID; then wait so nothing outlives the test.
  for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do
    for _ in $(seq 50); do alive "$p" || break; sleep 0.1; done
    kill -KILL "$p" 2>/dev/null || true
  done
  if ((rc != 0 && rc != 77)); then
    for f in "$T"/*.log; do [[ -f $f ]] && { echo "--- $f"; tail -n 40 "$f"; }; done
  fi
  rm -rf "$T"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "SKIP: $*"; exit 77; }
# skip_real_kernel REASON: skips for want of a real kernel (root, Linux 6.17+), or fails under
# COREDUMPD_REQUIRE_REAL_KERNEL=1 (.ci/run), so CI cannot go green without a real crash.
skip_real_kernel() {
  [[ ${COREDUMPD_REQUIRE_REAL_KERNEL:-} != 1 ]] || fail "COREDUMPD_REQUIRE_REAL_KERNEL=1, but the real-kernel tests cannot run: $*"
  skip "$*"
}
ok() { echo "ok: $*"; }

# wait_for SECONDS COMMAND...: polls COMMAND every 50 ms until it succeeds; false on timeout.
wait_for() {
  local deadline=$((SECONDS + $1)); shift
  until "$@"; do
    ((SECONDS < deadline)) || return 1
    sleep 0.05
  done
}

log_has() { grep -q -- "$2" "$1" 2>/dev/null; }
# True while PID runs; a zombie (exited, not yet reaped by `wait`) counts as gone.
alive() {
  local stat
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  [[ ${stat##*) } != Z* ]]
}

# lock_core_pattern SET: takes the shared core_pattern lock (fd 9; waits up to 10 minutes: other
# real-kernel tests hold it for minutes), saves the current pattern in $previous and restores it on
# every exit. The state file tells the next test what to restore should we be SIGKILLed while the
# pattern is SET (tests/support/core_pattern_state.h). Children started after this must get 9>&-.
lock_core_pattern() {
  exec 9>/run/lock/coredumpd-core_pattern.lock
  flock -w 600 9 || fail "could not lock /run/lock/coredumpd-core_pattern.lock within 10 minutes"
  previous=$(cat /proc/sys/kernel/core_pattern)
  core_pattern_state=/run/coredumpd-test/core_pattern.state
  EXIT_HOOKS+=('printf "%s\n" "$previous" >/proc/sys/kernel/core_pattern; rm -f "$core_pattern_state"; exec 9>&-')
  mkdir -p "${core_pattern_state%/*}" && printf 'pid %s\nstart %s\nset %s\nprevious %s\n' $$ \
    "$(cut -d' ' -f22 /proc/$$/stat)" "$1" "$previous" >"$core_pattern_state"
}
pattern() { cat /proc/sys/kernel/core_pattern; }
