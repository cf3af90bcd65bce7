#!/usr/bin/env bash
# Newcomer's tour, as root on Debian 12 with Linux 6.17+: install deps, build the release preset,
# run coredumpd on the default socket and store with --install-pattern, crash a sample program,
# show what was stored with dumpctl, stop the daemon. kernel.core_pattern is restored on every
# exit path, and changed only under the lock the tests use, so it never races a test run.
set -euo pipefail
cd "$(dirname "$0")/.."

SOCKET=/run/coredumpd/coredump.socket
STORE=/var/lib/coredumpd
LOCK=/run/lock/coredumpd-core_pattern.lock
PATTERN_FILE=/proc/sys/kernel/core_pattern
BUILD=build/release

# True while PID runs; an exited child not yet reaped (a zombie) counts as gone.
running() { [[ -e /proc/$1 && $(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null) != Z* ]]; }
say() { printf '\n==> %s\n' "$*"; }
die() { echo "quickstart: $*" >&2; exit 1; }

((EUID == 0)) || die "run as root (coredumpd reads other processes' /proc and sets core_pattern)"
grep -qw socket /proc/sys/kernel/core_modes 2>/dev/null ||
  die "this kernel ($(uname -r)) has no socket core_pattern support; coredumpd needs Linux 6.17+"

say "Installing build dependencies"
scripts/install-deps.sh

say "Building the release preset"
# -Werror only where asked (scripts/test.sh sets COREDUMPD_WERROR=ON): a newer compiler's new
# warning must not stop a newcomer's first build.
cmake --preset release -DCOREDUMPD_WERROR="${COREDUMPD_WERROR:-OFF}" >/dev/null
cmake --build --preset release --target coredumpd dumpctl crasher

# A daemon already serving the default socket (e.g. coredumpd.socket) must not be displaced:
# coredumpd replaces a stale socket file, which would steal the live one. /proc/net/unix lists
# listening sockets by path without connecting to them.
if grep -q " $SOCKET\$" /proc/net/unix; then
  die "something already listens on $SOCKET (systemctl status coredumpd.socket); stop it first"
fi

daemon_pid="" previous="" log=$(mktemp /tmp/coredumpd-quickstart.XXXXXX.log)
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  if [[ -n $daemon_pid ]] && running "$daemon_pid"; then
    kill -TERM "$daemon_pid"
    for _ in $(seq 250); do running "$daemon_pid" || break; sleep 0.1; done
    kill -KILL "$daemon_pid" 2>/dev/null || true
    wait "$daemon_pid" 2>/dev/null || true
  fi
  # coredumpd restores the pattern itself on SIGTERM; this covers SIGKILL and failures to start.
  if [[ -n $previous && $(cat "$PATTERN_FILE") != "$previous" ]]; then
    printf '%s\n' "$previous" >"$PATTERN_FILE" || true
  fi
  [[ -z $previous ]] || echo "quickstart: kernel.core_pattern is '$(cat "$PATTERN_FILE")' again"
  exec 9>&-  # release the lock
  rm -f "$log"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

say "Taking $LOCK (waits while tests use core_pattern)"
exec 9>"$LOCK"
flock -w 300 9 || die "core_pattern lock still busy after 5 minutes"
previous=$(cat "$PATTERN_FILE")

say "Starting coredumpd (socket $SOCKET, store $STORE)"
# 9>&-: the daemon must not inherit (and so keep holding) the lock.
"$BUILD/daemon/coredumpd" --install-pattern --log-level info >"$log" 2>&1 9>&- &
daemon_pid=$!
for _ in $(seq 300); do
  [[ $(cat "$PATTERN_FILE") == "@@$SOCKET" ]] && break
  running "$daemon_pid" || { cat "$log"; die "coredumpd exited at startup"; }
  sleep 0.1
done
[[ $(cat "$PATTERN_FILE") == "@@$SOCKET" ]] || { cat "$log"; die "coredumpd did not install core_pattern in 30 s"; }
echo "kernel.core_pattern = $(cat "$PATTERN_FILE")"

say "Crashing tests/programs/crasher (SIGSEGV)"
# The kernel ignores RLIMIT_CORE for socket dumps, and so does coredumpd unless honor_rlimit_core
# is set; the raised limit keeps the demo the same either way.
set +e
(ulimit -c unlimited && exec "$BUILD/tests/programs/crasher" --mode segv -- "hello world" second) 9>&- &
crasher_pid=$!
wait "$crasher_pid"
status=$?
set -e
echo "crasher (pid $crasher_pid) exited with status $status (139 = SIGSEGV)"

say "Waiting for the dump to be indexed"
indexed() {
  "$BUILD/cli/dumpctl" info "$crasher_pid" --json=pretty 2>/dev/null |
    python3 -c 'import json,sys; sys.exit(json.load(sys.stdin).get("state") != "complete")' 2>/dev/null
}
for _ in $(seq 300); do indexed && break; sleep 0.1; done
indexed || { cat "$log"; die "no complete dump for pid $crasher_pid after 30 s"; }

say "dumpctl list"
"$BUILD/cli/dumpctl" list
say "dumpctl info $crasher_pid"
"$BUILD/cli/dumpctl" info "$crasher_pid"

say "Stopping coredumpd"
kill -TERM "$daemon_pid"
for _ in $(seq 250); do running "$daemon_pid" || break; sleep 0.1; done
running "$daemon_pid" && die "coredumpd still running 25 s after SIGTERM"
wait "$daemon_pid" || die "coredumpd exited with status $?"
daemon_pid=""
echo "--- coredumpd log"
cat "$log"
say "Done. Cores stay in $STORE; try: $BUILD/cli/dumpctl debug $crasher_pid"
