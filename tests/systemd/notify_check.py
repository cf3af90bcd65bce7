"""(c) The sd_notify protocol as PID 1 would see it, from a datagram socket we own.

Usage: notify_check.py COREDUMPD CONFIG TMPDIR. Runs coredumpd twice with NOTIFY_SOCKET set:
  1. WATCHDOG_USEC=4 s, WATCHDOG_PID=<its own pid>: READY=1 and STATUS= arrive, then WATCHDOG=1
     keeps arriving with gaps under WATCHDOG_USEC (else systemd would kill it), and SIGTERM yields
     STOPPING=1 and exit status 0. Every message must come from the daemon's PID (NotifyAccess=main).
     The daemon pings every WATCHDOG_USEC/2 (2 s), so a gap must grow by 2 s of scheduling delay
     (ours or the daemon's, e.g. under ASan on a loaded machine) before this fails.
  2. WATCHDOG_PID=1 (another process): READY=1 but no WATCHDOG=1 (sd_watchdog_enabled says no).
     A short WATCHDOG_USEC there: a wrong ping would come soon, and a late one cannot fail the test.
The shipped config file is used, so a config that fails to parse fails here too.
"""
import os
import signal
import socket
import struct
import subprocess
import sys
import time

COREDUMPD, CONFIG, TMP = sys.argv[1:4]
WATCHDOG_USEC = 4_000_000
# The contract: a ping within WATCHDOG_USEC. We measure arrival times here, so a gap includes our
# own scheduling delay; the daemon's interval (WATCHDOG_USEC/2) leaves half of it for that.
MAX_GAP = WATCHDOG_USEC / 1e6
# Pings to see in phase 1 (each gap checked), and the bound on waiting for them, far beyond
# PINGS * WATCHDOG_USEC/2 = 8 s.
PINGS = 4
PINGS_BOUND = 60
# Phase 2: WATCHDOG_USEC for a daemon that must not ping, and how long we listen (10 intervals).
OTHER_WATCHDOG_USEC = 200_000


def fail(msg):
    print(f"FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


class Listener:
    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(path)
        # The kernel attaches the sender's credentials, so we know which PID sent each message.
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)

    def recv(self, deadline):
        """Next (time, pid, {key: value}) or None at the deadline."""
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return None
        self.sock.settimeout(remaining)
        try:
            data, anc, _, _ = self.sock.recvmsg(4096, socket.CMSG_SPACE(12))
        except socket.timeout:
            return None
        pid = None
        for level, kind, cdata in anc:
            if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS:
                pid = struct.unpack("iII", cdata[:12])[0]
        fields = dict(line.split("=", 1) for line in data.decode().splitlines() if "=" in line)
        return time.monotonic(), pid, fields


def start(tag, listener_path, watchdog_pid_expr, watchdog_usec):
    env = {k: v for k, v in os.environ.items()
           if k not in ("LISTEN_FDS", "LISTEN_PID", "LISTEN_FDNAMES", "JOURNAL_STREAM", "WATCHDOG_PID")}
    env.update(NOTIFY_SOCKET=listener_path, WATCHDOG_USEC=str(watchdog_usec))
    log = open(os.path.join(TMP, f"{tag}.log"), "w")
    # sh sets WATCHDOG_PID and execs, so the daemon keeps the shell's PID ($$).
    cmd = ["sh", "-c", f'WATCHDOG_PID={watchdog_pid_expr} exec "$@"', "sh", COREDUMPD,
           "--config", CONFIG, "--socket", os.path.join(TMP, f"{tag}.sock"),
           "--store", os.path.join(TMP, f"{tag}-store"), "--log-level", "debug"]
    return subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)


def wait_for(listener, proc, key, seconds, value=None):
    deadline = time.monotonic() + seconds
    while True:
        m = listener.recv(deadline)
        if m is None:
            return None
        _, pid, fields = m
        if pid != proc.pid:
            fail(f"notification from PID {pid}, not the daemon's {proc.pid}: {fields}")
        if key in fields and (value is None or fields[key] == value):
            return m


def stop(proc, listener):
    proc.send_signal(signal.SIGTERM)
    if wait_for(listener, proc, "STOPPING", 10, "1") is None:
        fail("no STOPPING=1 within 10 s of SIGTERM")
    try:
        rc = proc.wait(timeout=25)
    except subprocess.TimeoutExpired:
        fail("daemon did not exit within 25 s of SIGTERM")
    if rc != 0:
        fail(f"daemon exited with status {rc}")


def run(procs):
    # Phase 1: watchdog for us.
    l1 = Listener(os.path.join(TMP, "notify1.sock"))
    p = start("watchdog", os.path.join(TMP, "notify1.sock"), "$$", WATCHDOG_USEC)
    procs.append(p)
    ready = wait_for(l1, p, "READY", 30, "1")
    if ready is None:
        fail(f"no READY=1 within 30 s (daemon {'exited ' + str(p.poll()) if p.poll() is not None else 'running'})")
    if "STATUS" not in ready[2]:
        fail(f"READY=1 without STATUS=: {ready[2]}")
    print(f"ok: READY=1 from PID {p.pid}, STATUS={ready[2]['STATUS']!r}")

    # Wait for PINGS pings (not for a fixed time): each gap, READY=1 to the first included, must stay
    # under WATCHDOG_USEC.
    pings, last = 0, ready[0]
    max_gap, deadline = 0.0, time.monotonic() + PINGS_BOUND
    while pings < PINGS and (m := l1.recv(deadline)) is not None:
        t, pid, fields = m
        if pid != p.pid:
            fail(f"notification from PID {pid}, not the daemon's {p.pid}: {fields}")
        if fields.get("WATCHDOG") == "1":
            max_gap, last, pings = max(max_gap, t - last), t, pings + 1
    if pings < PINGS:
        fail(f"only {pings} WATCHDOG=1 in {PINGS_BOUND} s with WATCHDOG_USEC={WATCHDOG_USEC}")
    if max_gap > MAX_GAP:
        fail(f"{max_gap * 1000:.0f} ms between WATCHDOG=1 pings; WATCHDOG_USEC is {WATCHDOG_USEC // 1000} ms")
    print(f"ok: {pings} WATCHDOG=1, largest gap {max_gap * 1000:.0f} ms (WATCHDOG_USEC {WATCHDOG_USEC // 1000} ms)")
    stop(p, l1)
    print("ok: SIGTERM -> STOPPING=1, exit status 0")

    # Phase 2: WATCHDOG_PID names another process, so the watchdog is not ours to feed.
    l2 = Listener(os.path.join(TMP, "notify2.sock"))
    p = start("other-pid", os.path.join(TMP, "notify2.sock"), "1", OTHER_WATCHDOG_USEC)
    procs.append(p)
    if wait_for(l2, p, "READY", 30, "1") is None:
        fail("no READY=1 within 30 s (WATCHDOG_PID=1)")
    if wait_for(l2, p, "WATCHDOG", OTHER_WATCHDOG_USEC / 1e6 * 5) is not None:
        fail("WATCHDOG=1 sent although WATCHDOG_PID is another process")
    print("ok: no WATCHDOG=1 when WATCHDOG_PID is another process")
    stop(p, l2)


procs = []
try:
    run(procs)
finally:
    for p in procs:  # only our own children, by PID
        if p.poll() is None:
            p.kill()
            p.wait()
