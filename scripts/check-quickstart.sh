#!/usr/bin/env bash
# The newcomer's run, as CI does it (scripts/test.sh): scripts/quickstart.sh on this checkout, then
# its verdict checked independently of its own messages where possible: the crasher died of SIGSEGV
# with a core, `dumpctl list` printed its pid, the stored dump is complete and `dumpctl dump` gives
# back an ELF core of it, and kernel.core_pattern no longer points at the quickstart's socket.
# Exit 0 only if all of that holds; otherwise says which part failed and shows the run's tail.
set -euo pipefail
cd "$(dirname "$0")/.."

SOCKET=/run/coredumpd/coredump.socket  # as in scripts/quickstart.sh
DUMPCTL=build/release/cli/dumpctl
log=$(mktemp /tmp/coredumpd-quickstart-check.XXXXXX.log)
core=$(mktemp /var/tmp/coredumpd-quickstart-core.XXXXXX)
trap 'rm -f "$log" "$core"' EXIT

fail() {
  echo "check-quickstart: FAILED: $*" >&2
  echo "--- the end of quickstart.sh's output:" >&2
  tail -n 60 "$log" >&2
  exit 1
}

started=$SECONDS
rc=0
scripts/quickstart.sh >"$log" 2>&1 || rc=$?
echo "check-quickstart: scripts/quickstart.sh took $((SECONDS - started)) s and exited with status $rc"
((rc == 0)) || fail "scripts/quickstart.sh exited with status $rc"

[[ $(cat /proc/sys/kernel/core_pattern) != "@@$SOCKET" ]] || fail "core_pattern still points at $SOCKET"

# 139 = 128 + SIGSEGV: the shell saw the crasher killed by the signal.
pid=$(sed -n 's/^crasher (pid \([0-9][0-9]*\)) exited with status 139 .*/\1/p' "$log")
[[ -n $pid ]] || fail "the crasher did not die of SIGSEGV (no 'exited with status 139' line)"

# `dumpctl list`'s output, as printed by the quickstart: one row with the crasher's pid and comm.
listed=$(sed -n '/^==> dumpctl list$/,/^==> dumpctl info/p' "$log")
grep -Eq "[[:space:]]$pid[[:space:]].*crasher" <<<"$listed" || fail "dumpctl list did not show pid $pid"

info=$("$DUMPCTL" info "$pid" --json=pretty) || fail "dumpctl info $pid failed"
python3 -c '
import json, signal, sys
r = json.load(sys.stdin)
want = {"pid": int(sys.argv[1]), "comm": "crasher", "signal": int(signal.SIGSEGV), "state": "complete"}
bad = {k: r.get(k) for k in want if r.get(k) != want[k]}
sys.exit(f"expected {want}, got {bad}" if bad else 0)
' "$pid" <<<"$info" || fail "the stored dump of pid $pid is not what the crash was"
"$DUMPCTL" dump "$pid" -o "$core" || fail "dumpctl dump $pid failed"
file -b "$core" | grep -q "ELF 64-bit LSB core file" || fail "dumpctl dump gave no ELF core: $(file -b "$core")"
echo "check-quickstart: passed (pid $pid crashed, stored complete, listed, core retrieved; core_pattern restored)"
