#!/usr/bin/env bash
# (b) Socket activation as coredumpd.socket does it, with systemd-socket-activate standing in for
# PID 1: it listens, and on the first connection execs coredumpd with LISTEN_FDS=1. A plain client
# is not a crashing task, so the daemon must accept it on the passed socket, refuse it, log that,
# and keep serving. It must neither bind its own --socket path nor unlink systemd's socket.
source "$(dirname "$0")/lib.sh"
command -v systemd-socket-activate >/dev/null || fail "systemd-socket-activate missing (package systemd)"

sock=$T/activation.sock own=$T/own.sock log=$T/daemon.log
systemd-socket-activate -l "$sock" "$COREDUMPD" --socket "$own" --query-socket "" --store "$T/store" --log-level debug \
  >"$log" 2>&1 &
PIDS+=($!)
pid=$!
wait_for 10 test -S "$sock" || fail "systemd-socket-activate did not listen on $sock"
[[ ! -e $T/store ]] || fail "the daemon started before any connection"

# connect_and_read: connects, and returns once the daemon hung up (bounded by a 10 s timeout).
connect_and_read() {
  "$PYTHON" - "$sock" <<'PY'
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(10)
s.connect(sys.argv[1])
data = s.recv(64)  # the daemon refuses impostors by closing without an ack
sys.exit(0 if data == b"" else f"expected EOF, got {data!r}")
PY
}

connect_and_read || fail "first client was not hung up on"
wait_for 10 log_has "$log" "listening on the socket passed by systemd" || fail "daemon did not use the passed socket"
wait_for 10 log_has "$log" "not a crashing task" || fail "daemon did not log refusing the client"
ok "activated on first connection; accepted on the passed socket; refused the non-crashing client"

# Same PID: systemd-socket-activate execs the daemon (as PID 1 would start the service).
connect_and_read || fail "second client was not hung up on"
refusals() { (($(grep -c 'not a crashing task' "$log") >= $1)); }
wait_for 10 refusals 2 || fail "second client not refused"
alive "$pid" || fail "daemon died after refusing clients"
[[ ! -e $own ]] || fail "daemon bound its own --socket path despite LISTEN_FDS"
ok "still serving after refusals; did not bind $own"

kill -TERM "$pid"
wait_for 25 eval '! alive "$pid"' || fail "daemon did not exit within 25 s of SIGTERM"
rc=0; wait "$pid" || rc=$?
((rc == 0)) || fail "daemon exited with status $rc after SIGTERM"
[[ -S $sock ]] || fail "daemon unlinked the socket it was passed (it belongs to systemd)"
ok "clean exit on SIGTERM; passed socket left in place"

# Two passed sockets are a configuration error (the daemon expects exactly one).
set +e
timeout 20 systemd-socket-activate -l "$T/a.sock" -l "$T/b.sock" "$COREDUMPD" --socket "$own" --query-socket "" \
  --store "$T/store2" >"$T/two.log" 2>&1 &
two=$!
PIDS+=($two)
set -e
wait_for 10 test -S "$T/a.sock" || fail "second systemd-socket-activate did not listen"
"$PYTHON" -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.settimeout(10); s.connect(sys.argv[1])' "$T/a.sock"
rc=0; wait "$two" || rc=$?
((rc != 0 && rc != 124)) || fail "daemon given two sockets exited with $rc, expected an error"
grep -q "cannot be told apart" "$T/two.log" || fail "no 'cannot be told apart' error for two unnamed sockets"
ok "two unnamed passed sockets are refused with an error"
