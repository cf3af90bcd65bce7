#!/usr/bin/env bash
# Both sockets as coredumpd.socket and coredumpd-query.socket pass them to coredumpd.service
# (Sockets=), told apart by FileDescriptorName= "kernel" and "query", with systemd-socket-activate
# standing in for PID 1. The query socket comes first, so a daemon taking the kernel's socket by
# position instead of by name would treat query clients as crashing tasks and refuse them.
# Needs the daemon to pick its sockets by name (sd_listen_fds_with_names; helper "query-server").
source "$(dirname "$0")/lib.sh"
command -v systemd-socket-activate >/dev/null || fail "systemd-socket-activate missing (package systemd)"

# The names the units give, read from them, so the test follows the units.
fdname() { sed -n 's/^FileDescriptorName=//p' "$SOURCE_DIR/systemd-units/$1"; }
kname=$(fdname coredumpd.socket.in) qname=$(fdname coredumpd-query.socket)
[[ $kname == kernel && $qname == query ]] || fail "unit fd names are '$kname'/'$qname', expected kernel/query"

ksock=$T/k.sock qsock=$T/q.sock log=$T/daemon.log
systemd-socket-activate -l "$qsock" -l "$ksock" --fdname="$qname:$kname" "$COREDUMPD" --socket "$T/own.sock" \
  --store "$T/store" --log-level debug >"$log" 2>&1 &
pid=$!
PIDS+=($pid)
wait_for 10 test -S "$ksock" || fail "systemd-socket-activate did not listen on $ksock"

# A plain client on the kernel's socket: accepted there and refused as not a crashing task.
"$PYTHON" - "$ksock" <<'PY' || fail "client on the kernel socket was not hung up on (log: $(tail -n 3 "$log"))"
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(10)
s.connect(sys.argv[1])
sys.exit(0 if s.recv(64) == b"" else "expected EOF")
PY
wait_for 10 log_has "$log" "not a crashing task" || fail "daemon did not refuse the kernel-socket client (log: $(tail -n 5 "$log"))"
alive "$pid" || fail "daemon exited with both sockets passed: $(tail -n 5 "$log")"
ok "kernel socket found by name (passed second); plain client refused there"

# A client on the query socket is not taken for a crashing task.
"$PYTHON" -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.settimeout(10); s.connect(sys.argv[1]); s.close()' "$qsock" ||
  fail "could not connect to the query socket"
sleep 0.5
(($(grep -c 'not a crashing task' "$log") == 1)) || fail "the query socket's client was handled as a kernel connection"
alive "$pid" || fail "daemon died after a query client: $(tail -n 5 "$log")"
[[ ! -e $T/own.sock ]] || fail "daemon bound its own --socket path despite LISTEN_FDS"
ok "query socket served apart from the kernel's; no own socket bound"

kill -TERM "$pid"
wait_for 25 eval '! alive "$pid"' || fail "daemon did not exit within 25 s of SIGTERM"
rc=0; wait "$pid" || rc=$?
((rc == 0)) || fail "daemon exited with status $rc after SIGTERM"
ok "clean exit on SIGTERM"
