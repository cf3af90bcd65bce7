#!/usr/bin/env bash
# `coredumpd --pattern=install|restore|check` (coredumpd.socket's ExecStartPost=/ExecStopPost=) on
# the real /proc/sys/kernel/core_pattern, under the core_pattern lock: installs "@@SOCKET" only
# where a socket listens and the kernel has the protocol, saving the old pattern; a real crash then
# reaches the daemon; restore puts the saved pattern back only while the pattern is still ours. A
# simulated kernel without socket support (--enable-test-hooks --test-core-modes/--test-kernel-release)
# leaves the pattern alone and says why, for --pattern=install and the daemon's --install-pattern.
source "$(dirname "$0")/lib.sh"
((EUID == 0)) || skip_real_kernel "needs root (writes kernel.core_pattern)"
"$COREDUMPD" --pattern=check >/dev/null || skip_real_kernel "$("$COREDUMPD" --pattern=check)"

sock=$T/k.sock saved=$T/saved store=$T/store
sentinel="core.cdd-pattern-test"  # a value no one else sets: restore must put exactly it back
lock_core_pattern "@@$sock"
printf '%s\n' "$sentinel" >/proc/sys/kernel/core_pattern

# run_pattern MODE [ARGS...]: the command as the unit runs it; stderr in $msg, exit status checked.
run_pattern() {
  local mode=$1; shift
  msg=$("$COREDUMPD" "$@" --pattern="$mode" --pattern-saved "$saved" 2>&1 9>&-) || fail "--pattern=$mode $* failed: $msg"
}

# Nothing listens yet: pointing the kernel there would lose every dump.
run_pattern install --socket "$sock"
[[ $(pattern) == "$sentinel" && ! -e $saved ]] || fail "install without a socket changed the pattern to $(pattern)"
[[ $msg == *"no socket at $sock"* ]] || fail "install without a socket did not say why: $msg"
ok "no socket: pattern left alone ($msg)"

# A simulated kernel without the protocol: core_modes without "socket", or Debian 12's 6.1 release.
printf 'file pipe\n' >"$T/core_modes"
"$PYTHON" -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])' "$T/bound.sock"  # a socket file
hooks=(--enable-test-hooks --test-core-modes "$T/core_modes")
run_pattern install --socket "$T/bound.sock" "${hooks[@]}"
[[ $(pattern) == "$sentinel" && ! -e $saved ]] || fail "install on a kernel without socket mode changed the pattern"
[[ $msg == *"no socket core_pattern mode"*"file pipe"* ]] || fail "no reason given for a kernel without socket mode: $msg"
ok "core_modes without socket: pattern left alone ($msg)"
hooks=(--enable-test-hooks --test-core-modes "$T/missing" --test-kernel-release 6.1.0-18-amd64)
run_pattern install --socket "$T/bound.sock" "${hooks[@]}"
[[ $(pattern) == "$sentinel" && ! -e $saved ]] || fail "install on 6.1 changed the pattern"
[[ $msg == *"6.1.0-18-amd64"*"6.17"* ]] || fail "no reason given for 6.1: $msg"
rc=0; why=$("$COREDUMPD" "${hooks[@]}" --pattern=check 2>/dev/null) || rc=$?
((rc == 1)) && [[ $why == *"6.17"* ]] || fail "--pattern=check on 6.1 gave $rc: $why"
rc=0; "$COREDUMPD" --pattern=install 2>/dev/null --test-kernel-release 6.1 || rc=$?
((rc != 0)) || fail "--test-kernel-release was accepted without --enable-test-hooks"
ok "release 6.1 without core_modes: pattern left alone, check exits 1 ($why); hooks need --enable-test-hooks"

# The daemon's own --install-pattern makes the same check: it serves, and leaves the pattern alone.
"$COREDUMPD" "${hooks[@]}" --install-pattern --socket "$T/d.sock" --store "$T/store-d" >"$T/unsupported.log" 2>&1 9>&- &
PIDS+=($!)
wait_for 30 log_has "$T/unsupported.log" "core_pattern left unchanged" || fail "--install-pattern on 6.1 did not say why"
wait_for 10 test -S "$T/d.sock" || fail "--install-pattern on 6.1 kept the daemon from listening"
[[ $(pattern) == "$sentinel" ]] || fail "--install-pattern on 6.1 changed the pattern to $(pattern)"
kill -TERM "${PIDS[-1]}"
ok "--install-pattern on 6.1: daemon listens, pattern left alone"

# The real kernel and a real daemon: installed, saved, and a crash arrives.
"$COREDUMPD" --socket "$sock" --store "$store" >"$T/daemon.log" 2>&1 9>&- &
PIDS+=($!)
wait_for 30 test -S "$sock" || fail "daemon did not listen on $sock"
run_pattern install --socket "$sock"
[[ $(pattern) == "@@$sock" ]] || fail "install did not set the pattern: $(pattern) ($msg)"
[[ $(cat "$saved") == "$sentinel" ]] || fail "saved pattern is '$(cat "$saved")', expected '$sentinel'"
run_pattern install --socket "$sock"
[[ $msg == *already* && $(cat "$saved") == "$sentinel" ]] || fail "a second install overwrote the saved pattern: $msg"
ok "installed @@$sock, saved '$sentinel'; a second install keeps it"

rc=0
(ulimit -c unlimited && exec "$CRASHER" --mode segv) 9>&- 2>/dev/null || rc=$?
((rc == 128 + 11)) || fail "crasher exited with $rc, expected SIGSEGV"
complete() {
  "$DUMPCTL" --store "$store" info --json=pretty 2>/dev/null |
    "$PYTHON" -c 'import json,sys; sys.exit(json.load(sys.stdin).get("state") != "complete")' 2>/dev/null
}
wait_for 30 complete || fail "the crash did not reach the daemon through the installed pattern"
ok "a real crash was stored through the installed pattern"

run_pattern restore --socket "$sock"
[[ $(pattern) == "$sentinel" && ! -e $saved ]] || fail "restore left $(pattern) (saved file: $(ls "$saved" 2>&1))"
ok "restored '$sentinel' ($msg)"

# Someone else took the pattern after us: restore must not touch it.
run_pattern install --socket "$sock"
printf '%s\n' "core.someone-else" >/proc/sys/kernel/core_pattern
run_pattern restore --socket "$sock"
[[ $(pattern) == "core.someone-else" ]] || fail "restore overwrote someone else's pattern with $(pattern)"
[[ $msg == *"not ours"* ]] || fail "restore did not say why it left the pattern: $msg"
ok "restore leaves a pattern that is not ours ($msg)"

# Ours, but nothing saved (a pattern from an older package's sysctl.d): the kernel's default.
printf '%s\n' "$sentinel" >/proc/sys/kernel/core_pattern
run_pattern install --socket "$sock"
rm -f "$saved"
run_pattern restore --socket "$sock"
[[ $(pattern) == core ]] || fail "restore with nothing saved left $(pattern), expected core"
ok "restore with nothing saved: 'core' ($msg)"
