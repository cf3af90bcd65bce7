#!/usr/bin/env python3
"""coredumpd benchmark: real kernel crashes, coredumpd against a minimal raw-drain server.

For every repetition of every scenario (core size x memory content, plus many crashers at once)
the servers under test are started fresh and one program per server is crashed, alternating the
servers (the order rotates every repetition) so that drift in the machine hits all of them alike.
Repetitions run in rounds over all scenarios, so a time budget cuts repetitions, not scenarios.
kernel.core_pattern is pointed at the socket of the server whose turn it is, under the exclusive
flock every test of this project takes, and the previous pattern is put back on every exit path.

Per crash it measures: crash -> task released, crash -> stored, server CPU time, server peak RSS,
handshake time, stored size; per scenario a `zstd -3 -T0` reference size. It prints the
environment and markdown tables of medians with the ratio coredumpd / raw-drain, and writes every
raw measurement as JSON (--json-out). It reports; it never asserts a timing.

Builds nothing: bench/run.sh builds the binaries and passes their paths. Needs root and Linux 6.17+.
Python standard library only. See bench/README.md for how to read the output.
"""

import argparse
import atexit
import contextlib
import ctypes
import datetime
import fcntl
import json
import os
import platform
import resource
import select
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

LOCK_PATH = "/run/lock/coredumpd-core_pattern.lock"
PATTERN_PATH = "/proc/sys/kernel/core_pattern"
PIPE_LIMIT_PATH = "/proc/sys/kernel/core_pipe_limit"
LOCK_WAIT_S = 300          # the tests wait as long for the same lock
SERVER_START_S = 15        # socket must be listening by then
SERVER_STOP_S = 20         # SIGTERM, then SIGKILL
POLL_S = 0.005             # index / log polling period while waiting for "stored"
SETTLE_S = 0.1            # coredumpd's work after a dump's row is complete (Coredumpd.settle)
PRETOUCH_EXTRA_MIB = 256   # pre-touch 2N + this before every timed crash
SERVERS = ("coredumpd", "raw-drain", "raw-write", "systemd-coredump")
DEFAULT_SERVERS = ("coredumpd", "raw-drain", "systemd-coredump")  # raw-write on request (--servers)
FILLS = ("random", "half-zero", "pyheap")   # the default scenarios
EXTRA_FILLS = ("zero",)                      # on request: touched pages left zero (the kernel sends zeros)
TERMINAL_STATES = ("complete", "truncated", "failed", "interrupted", "metadata_only", "rejected")

# Touches N MiB (one write per page) and frees it on exit: warms the VM's memory before a crash.
PRETOUCH_CODE = ("import mmap, sys\n"
                 "n = int(sys.argv[1]) << 20\n"
                 "m = mmap.mmap(-1, n)\n"
                 "m[::4096] = b'\\x01' * (n // 4096)\n"
                 "m.close()\n")


def log(msg):
    """Progress goes to stderr; the report goes to stdout."""
    print(msg, file=sys.stderr, flush=True)


def mono_ns():
    """CLOCK_MONOTONIC in ns: the clock raw-drain-server logs with."""
    return time.monotonic_ns()


class BenchInterrupted(Exception):
    """Raised by the SIGINT/SIGTERM handler so that every `finally` runs."""


# ---------------------------------------------------------------------------------------------
# Child processes
# ---------------------------------------------------------------------------------------------

_libc = ctypes.CDLL(None, use_errno=True)
PR_SET_PDEATHSIG = 1


def die_with_parent():
    """preexec_fn: SIGKILL the child if the bench dies, so no crasher stays frozen in a dump."""
    _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


class Crashers:
    """Every crasher process started, so that each one can be killed if the run is cut short."""

    live = {}  # pid -> Crasher

    @classmethod
    def kill_all(cls):
        """SIGKILLs and reaps every crasher still alive."""
        for crasher in list(cls.live.values()):
            crasher.kill_and_reap()


class Crasher:
    """One program that will crash, with a pipe on which it says 'ready' just before the fault."""

    def __init__(self, argv, stderr):
        """Starts `argv` + ["--ready-fd", <fd>]; its stderr goes to the file object `stderr`."""
        r, w = os.pipe()
        try:
            self.proc = subprocess.Popen(argv + ["--ready-fd", str(w)], pass_fds=(w,), stdin=subprocess.DEVNULL,
                                         stdout=subprocess.DEVNULL, stderr=stderr, preexec_fn=die_with_parent)
        except BaseException:
            os.close(r)
            raise
        finally:
            os.close(w)
        self.pid = self.proc.pid
        self.ready_r = r
        self.pidfd = os.pidfd_open(self.pid)
        self.ready_ns = None   # when the ready byte arrived: the crash time
        self.exit_ns = None    # when the task was released (pidfd readable)
        self.status = None     # raw wait status
        self.error = None
        Crashers.live[self.pid] = self

    def on_ready_readable(self):
        """Reads the ready byte (or EOF if the crasher died before getting ready)."""
        now = mono_ns()
        data = os.read(self.ready_r, 1)
        os.close(self.ready_r)
        self.ready_r = None
        if data:
            self.ready_ns = now
        else:
            self.error = "exited before it was ready"

    def on_exit(self):
        """Called when the pidfd is readable: records the release time and reaps the process."""
        self.exit_ns = mono_ns()
        self.reap()

    def reap(self):
        """waitpid() the crasher (keeping the raw status: WCOREDUMP matters) and close its fds."""
        _, self.status = os.waitpid(self.pid, 0)
        self.proc.returncode = os.waitstatus_to_exitcode(self.status)
        os.close(self.pidfd)
        self.pidfd = None
        if self.ready_r is not None:
            os.close(self.ready_r)
            self.ready_r = None
        Crashers.live.pop(self.pid, None)

    def kill_and_reap(self):
        """SIGKILL (a task frozen in a dump only leaves on SIGKILL) and reap."""
        if self.pidfd is None:
            return
        try:
            signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.reap()

    def result(self):
        """The crash's facts as a JSON-ready dict (times in ns, CLOCK_MONOTONIC)."""
        st = self.status
        return {
            "pid": self.pid, "ready_ns": self.ready_ns, "exit_ns": self.exit_ns, "wait_status": st,
            "signal": os.WTERMSIG(st) if st is not None and os.WIFSIGNALED(st) else None,
            "wcoredump": bool(st is not None and os.WIFSIGNALED(st) and os.WCOREDUMP(st)),
            "release_ms": ms(self.exit_ns - self.ready_ns) if self.exit_ns and self.ready_ns else None,
            "error": self.error,
        }


def ms(ns):
    """Nanoseconds to milliseconds."""
    return ns / 1e6


def pretouch(python, mib, timeout):
    """Touches and frees `mib` MiB in a helper process (the VM gives freed memory back to its host
    within seconds, and touching returned memory again costs several times more)."""
    subprocess.run([python, "-c", PRETOUCH_CODE, str(mib)], check=True, timeout=timeout)


# ---------------------------------------------------------------------------------------------
# core_pattern ownership
# ---------------------------------------------------------------------------------------------

class CorePattern:
    """Exclusive use of kernel.core_pattern (and kernel.core_pipe_limit, which only pipe helpers such
    as systemd-coredump see): flock, save, set, and restore on every exit path.

    Restoring is done in __exit__ and, for SIGINT/SIGTERM, in the signal handler itself before it
    raises BenchInterrupted (so the pattern is back even if the cleanup that follows is cut short).
    """

    def __init__(self):
        self.lock_fd = None
        self.saved = None
        self.saved_pipe_limit = None
        self.old_handlers = {}

    def __enter__(self):
        """Takes the lock (waiting at most LOCK_WAIT_S), saves the pattern, installs the handlers."""
        os.makedirs(os.path.dirname(LOCK_PATH), exist_ok=True)
        self.lock_fd = os.open(LOCK_PATH, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        deadline = time.monotonic() + LOCK_WAIT_S
        while True:
            try:
                fcntl.flock(self.lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    os.close(self.lock_fd)
                    raise RuntimeError(f"{LOCK_PATH} still locked by someone else after {LOCK_WAIT_S} s")
                time.sleep(0.2)
        with open(PATTERN_PATH) as f:
            self.saved = f.read().rstrip("\n")
        with open(PIPE_LIMIT_PATH) as f:
            self.saved_pipe_limit = f.read().strip()
        for signo in (signal.SIGINT, signal.SIGTERM):
            self.old_handlers[signo] = signal.signal(signo, self._on_signal)
        return self

    def _on_signal(self, signo, _frame):
        self.restore()
        raise BenchInterrupted(signal.Signals(signo).name)

    def set(self, server):
        """Points core_pattern at `server` (Server.pattern()), with its core_pipe_limit if it names
        one, else the saved one."""
        limit = server.core_pipe_limit()
        write_sysctl(PIPE_LIMIT_PATH, str(limit) if limit is not None else self.saved_pipe_limit)
        write_pattern(server.pattern())

    def restore(self):
        """Puts the saved pattern and pipe limit back (idempotent)."""
        if self.saved is not None:
            write_pattern(self.saved)
        if self.saved_pipe_limit is not None:
            write_sysctl(PIPE_LIMIT_PATH, self.saved_pipe_limit)

    def __exit__(self, *exc):
        self.restore()
        for signo, handler in self.old_handlers.items():
            signal.signal(signo, handler)
        os.close(self.lock_fd)
        return False


def write_pattern(pattern):
    """Writes kernel.core_pattern (EINVAL if the kernel refuses the pattern, docs/PROTOCOL.md §2.2)."""
    write_sysctl(PATTERN_PATH, pattern)


def write_sysctl(path, value):
    """Writes one /proc/sys file."""
    with open(path, "w") as f:
        f.write(value)


def read_pattern():
    """Current kernel.core_pattern without its newline."""
    with open(PATTERN_PATH) as f:
        return f.read().rstrip("\n")


# ---------------------------------------------------------------------------------------------
# Servers under test
# ---------------------------------------------------------------------------------------------

class Server:
    """A server under test, started fresh for one scenario in its own directory."""

    name = "?"

    def __init__(self, workdir):
        self.dir = os.path.join(workdir, self.name)
        os.makedirs(self.dir)
        self.socket = os.path.join(self.dir, "s.sock")
        self.log_path = os.path.join(self.dir, "server.log")
        self.proc = None

    def command(self):
        """argv of the server process."""
        raise NotImplementedError

    def pattern(self):
        """kernel.core_pattern that sends cores to this server (socket mode, docs/PROTOCOL.md §2.1)."""
        return "@@" + self.socket

    def core_pipe_limit(self):
        """kernel.core_pipe_limit to run with, or None to keep the machine's (sockets ignore it)."""
        return None

    def settle(self):
        """Called once a run's crashes are all accounted for, before its CPU time is read."""

    def awaits(self, crasher):
        """False if `crasher` will never get a record here (waiting for one would only time out)."""
        return True

    def why_lost(self, crasher):
        """The anomaly line of a crash that got no final record."""
        return "LOST: no final record from the server"

    def start(self):
        """Starts the server and waits (bounded) until its socket is listening."""
        with open(self.log_path, "ab") as out:
            # Own session: a Ctrl-C at the terminal reaches the bench, which then stops the servers
            # in order (crashers first), instead of every server at once.
            self.proc = subprocess.Popen(self.command(), stdin=subprocess.DEVNULL, stdout=out, stderr=out,
                                         preexec_fn=die_with_parent, start_new_session=True)
        deadline = time.monotonic() + SERVER_START_S
        while not is_listening(self.socket):
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited with {self.proc.returncode} at start; see {self.log_path}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.name} not listening on {self.socket} after {SERVER_START_S} s")
            time.sleep(0.01)

    def alive(self):
        """True while the server process runs."""
        return self.proc is not None and self.proc.poll() is None

    def stop(self):
        """SIGTERM, bounded wait, then SIGKILL. Returns the exit code."""
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else None
        self.proc.terminate()
        try:
            return self.proc.wait(timeout=SERVER_STOP_S)
        except subprocess.TimeoutExpired:
            log(f"  ! {self.name} ignored SIGTERM for {SERVER_STOP_S} s; killing it")
            self.proc.kill()
            return self.proc.wait(timeout=SERVER_STOP_S)

    # Fields of /proc/PID/stat (after the comm) that cpu_seconds() adds up: utime, stime.
    CPU_FIELDS = slice(11, 13)
    # ... and that minor_faults() adds up: minflt.
    FAULT_FIELDS = slice(7, 8)

    def cpu_seconds(self):
        """CPU_FIELDS of the server process (utime + stime: all threads, also exited ones), in seconds."""
        with open(f"/proc/{self.proc.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return sum(int(x) for x in fields[self.CPU_FIELDS]) / os.sysconf("SC_CLK_TCK")

    def minor_faults(self):
        """FAULT_FIELDS of the server process (minor page faults: all threads, also exited ones). On
        this VM each is a host fault when the page was given back to the host: they cost CPU."""
        with open(f"/proc/{self.proc.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return sum(int(x) for x in fields[self.FAULT_FIELDS])

    def vm_hwm_kib(self):
        """Peak resident set size so far (VmHWM), KiB."""
        return self._status_kib("VmHWM:")

    def vm_rss_kib(self):
        """Resident set size now (VmRSS), KiB: what the server keeps once its dumps are done."""
        return self._status_kib("VmRSS:")

    def _status_kib(self, field):
        """A KiB field of the server's /proc/<pid>/status, or None."""
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith(field):
                    return int(line.split()[1])
        return None

    def poll_stored(self, pids):
        """Returns {pid: facts} for the dumps of `pids` that reached a final state since the last
        call. facts: stored_ns, state, core_bytes, stored_bytes, handshake_ms, server (raw details)."""
        raise NotImplementedError

    def stored_file(self, facts):
        """Path of the stored core for these facts, or None if this server keeps none."""
        return None


def is_listening(path):
    """True once a listening AF_UNIX socket is bound to `path` (/proc/net/unix flag __SO_ACCEPTCON)."""
    with open("/proc/net/unix") as f:
        next(f)
        for line in f:
            parts = line.split()
            if len(parts) >= 8 and parts[7] == path and int(parts[3], 16) & 0x10000:
                return True
    return False


class Coredumpd(Server):
    """coredumpd with a fresh store; 'stored' = its index row reaches state 'complete'. A variant
    (--variant NAME=CONFIG[:BINARY]) is coredumpd (or another build) under another name, started
    with --config CONFIG."""

    def __init__(self, workdir, binary, name="coredumpd", config=None):
        self.name = name
        super().__init__(workdir)
        self.binary = binary
        self.config = config
        self.store = os.path.join(self.dir, "store")
        os.makedirs(self.store)
        self.db = None

    def command(self):
        cmd = [self.binary, "--socket", self.socket, "--store", self.store, "--log-level", "info"]
        return cmd + ["--config", self.config] if self.config else cmd

    def _connect(self):
        """Read-only connection to the index (opened once the daemon has created it)."""
        if self.db is None:
            uri = "file:" + os.path.join(self.store, "index.sqlite") + "?mode=ro"
            self.db = sqlite3.connect(uri, uri=True, timeout=1.0)
            self.db.row_factory = sqlite3.Row
        return self.db

    def poll_stored(self, pids):
        now = mono_ns()
        marks = ",".join("?" * len(pids))
        rows = self._connect().execute(f"SELECT * FROM dumps WHERE pid IN ({marks})", list(pids)).fetchall()
        done = {}
        for row in rows:
            row = {k: v.decode("utf-8", "replace") if isinstance(v, bytes) else v for k, v in dict(row).items()}
            if row["state"] not in TERMINAL_STATES:
                continue
            extra = json.loads(row.get("extra") or "{}")
            done[row["pid"]] = {
                "stored_ns": now, "state": row["state"], "core_bytes": row.get("core_size"),
                "stored_bytes": row.get("stored_size"),
                "handshake_ms": extra["handshake_us"] / 1e3 if "handshake_us" in extra else None,
                "server": {"id": row.get("id"), "path": row.get("path"), "reason": row.get("reason"),
                           **{k: extra.get(k) for k in ("handshake_us", "released_us", "stored_us",
                                                         "spool_page_cache_blocks", "handshake_steps_us",
                                                         "drain_start_us", "stream_us")}},
            }
        return done

    def stored_file(self, facts):
        path = facts["server"].get("path")
        return os.path.join(self.store, path) if path else None

    def settle(self):
        """A row is complete before the dump's last steps (retention; after the last dump of a burst,
        malloc_trim(): daemon/dump/compress_stage.cc): they get SETTLE_S, so that the CPU time counts them and
        the RSS read next is what the daemon keeps while idle."""
        time.sleep(SETTLE_S)

    def stop(self):
        if self.db is not None:
            self.db.close()
            self.db = None
        return super().stop()


class RawServer(Server):
    """raw-drain-server; 'stored' = connection closed (drain) or file fsynced (--write-file)."""

    def __init__(self, workdir, binary, write_file):
        self.name = "raw-write" if write_file else "raw-drain"
        super().__init__(workdir)
        self.binary = binary
        self.cores = os.path.join(self.dir, "cores") if write_file else None
        if self.cores:
            os.makedirs(self.cores)
        self.lines_path = os.path.join(self.dir, "dumps.jsonl")
        self.offset = 0
        self.seen = {}  # pid -> parsed line, not yet returned

    def command(self):
        cmd = [self.binary, "--socket", self.socket, "--log", self.lines_path]
        return cmd + ["--write-file", self.cores] if self.cores else cmd

    def _read_new_lines(self):
        """Parses the complete lines appended to the server's log since the last call."""
        if not os.path.exists(self.lines_path):
            return
        with open(self.lines_path, "rb") as f:
            f.seek(self.offset)
            data = f.read()
        complete = data[:data.rfind(b"\n") + 1]
        self.offset += len(complete)
        for raw in complete.splitlines():
            line = json.loads(raw)
            self.seen[line["pid"]] = line

    def poll_stored(self, pids):
        self._read_new_lines()
        done = {}
        for pid in pids:
            line = self.seen.pop(pid, None)
            if line is None:
                continue
            done[pid] = {
                "stored_ns": line["stored_mono_ns"], "state": "complete" if not line["error"] else "failed",
                "core_bytes": line["bytes"], "stored_bytes": line["bytes"] if self.cores else 0,
                "handshake_ms": ms(line["ack_mono_ns"] - line["accept_mono_ns"]) if line["ack_mono_ns"] else None,
                "server": line,
            }
        return done

    def stored_file(self, facts):
        return os.path.join(self.cores, f"{facts['server']['seq']}.core") if self.cores else None


class SystemdCoredump(Server):
    """Debian 12's systemd-coredump 252, run as on a systemd host but without systemd as PID 1.

    core_pattern pipes the core to `systemd-coredump %P ...` (the pattern and core_pipe_limit=16 of
    its /usr/lib/sysctl.d/50-coredump.conf); that helper collects metadata and hands the pipe over
    /run/systemd/coredump to an instance of the service, here spawned per connection by
    `systemd-socket-activate --seqpacket --accept` (systemd-coredump.socket's Accept=yes). The
    instance copies the core into a file in /var/lib/systemd/coredump, compresses that with zstd,
    extracts a backtrace and logs to the journal; only then does it close the pipe, and with a
    nonzero core_pipe_limit the kernel keeps the task until every reader of the pipe is gone.
    'stored' = the core.*.PID.*.zst file appears (linked when written and synced); CPU time counts
    the instances (children of systemd-socket-activate, reaped by it), not the kernel-spawned helper.
    Its ProcessSizeMax/ExternalSizeMax (2 GiB by default) are raised for the run with a drop-in in
    /run/systemd/coredump.conf.d, so a 2 GiB scenario's core is stored whole, as ours is."""

    name = "systemd-coredump"
    SOCKET = "/run/systemd/coredump"          # fixed in systemd-coredump
    STORAGE = "/var/lib/systemd/coredump"     # fixed in systemd-coredump
    DROP_IN = "/run/systemd/coredump.conf.d/90-coredumpd-bench.conf"

    def __init__(self, workdir, binary):
        super().__init__(workdir)
        self.socket = self.SOCKET
        self.binary = binary
        self.files = []  # what it stored during our runs: removed by stop()

    def command(self):
        return ["systemd-socket-activate", "--seqpacket", "--accept", "-l", self.SOCKET, self.binary]

    def pattern(self):
        return f"|{self.binary} %P %u %g %s %t 9223372036854775808 %h %d"

    def core_pipe_limit(self):
        return 16

    def start(self):
        if is_listening(self.SOCKET):
            raise RuntimeError(f"{self.SOCKET} is already served (systemd-coredump.socket running?)")
        os.makedirs(self.STORAGE, mode=0o755, exist_ok=True)
        os.makedirs(os.path.dirname(self.DROP_IN), exist_ok=True)
        with open(self.DROP_IN, "w") as f:
            f.write("# coredumpd bench (bench/run_bench.py): cores up to 64 GiB, removed when the run ends\n"
                    "[Coredump]\nProcessSizeMax=64G\nExternalSizeMax=64G\n")
        super().start()

    def _instances(self):
        """PIDs of the service instances still running."""
        try:
            with open(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children") as f:
                return f.read().split()
        except OSError:
            return []

    def settle(self):
        """Waits (bounded) for the instances to exit, so that their CPU time is counted."""
        deadline = time.monotonic() + SERVER_STOP_S
        while self.alive() and self._instances() and time.monotonic() < deadline:
            time.sleep(POLL_S)

    # systemd-socket-activate and the instances it reaped: utime, stime, cutime, cstime.
    CPU_FIELDS = slice(11, 15)
    FAULT_FIELDS = slice(7, 9)  # minflt, cminflt

    def vm_hwm_kib(self):
        return None  # the work is done in short-lived instances

    def vm_rss_kib(self):
        return None

    def poll_stored(self, pids):
        now = mono_ns()
        done = {}
        for name in os.listdir(self.STORAGE):
            # core.COMM.UID.BOOT_ID.PID.USEC.zst; COMM may hold dots, the rest cannot.
            parts = name.split(".")
            if len(parts) < 7 or parts[0] != "core" or not parts[-3].isdigit() or int(parts[-3]) not in pids:
                continue
            path = os.path.join(self.STORAGE, name)
            self.files.append(path)
            done[int(parts[-3])] = {"stored_ns": now, "state": "complete", "core_bytes": None,
                                    "stored_bytes": os.path.getsize(path), "handshake_ms": None,
                                    "server": {"path": path}}
        return done

    def stored_file(self, facts):
        return facts["server"]["path"]

    def awaits(self, crasher):
        """A task the kernel dumped into no helper (core_pipe_limit reached: it exits without
        WCOREDUMP) leaves no file behind."""
        st = crasher.status
        return st is None or (os.WIFSIGNALED(st) and os.WCOREDUMP(st))

    def why_lost(self, crasher):
        if self.awaits(crasher):
            return super().why_lost(crasher)
        return (f"NOT DUMPED: the kernel gave it to no helper (over core_pipe_limit {self.core_pipe_limit()}; "
                "expected for systemd-coredump with more crashes at once)")

    def stop(self):
        try:
            return super().stop()
        finally:
            for path in self.files:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(path)
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.DROP_IN)
            with contextlib.suppress(FileNotFoundError):  # systemd-socket-activate leaves it bound
                os.unlink(self.SOCKET)


# ---------------------------------------------------------------------------------------------
# Scenarios and one measured crash
# ---------------------------------------------------------------------------------------------

class Scenario:
    """What to crash: `count` programs of `mib` MiB with memory content `fill`."""

    def __init__(self, fill, mib, count=1):
        self.fill, self.mib, self.count = fill, mib, count

    @property
    def name(self):
        """e.g. "random 512 MiB" or "20 x random 64 MiB"."""
        base = f"{self.fill} {self.mib} MiB"
        return f"{self.count} x {base}" if self.count > 1 else base

    @property
    def total_mib(self):
        """Memory of all the scenario's crashers together."""
        return self.mib * self.count

    def argv(self, args):
        """Command line of one crasher, without its --ready-fd argument (added by Crasher)."""
        if self.fill == "pyheap":
            return [args.python, os.path.join(os.path.dirname(os.path.abspath(__file__)), "pyheap_crasher.py"),
                    "--mib", str(self.mib)]
        return [args.crasher, "--mode", "segv", "--touch-mib", str(self.mib), "--fill", self.fill]

    def timeouts(self):
        """(ready, release, stored) bounds in seconds: generous, scaled with the size."""
        ready = 60 + self.mib * (0.05 if self.fill == "pyheap" else 0.01) * max(1, self.count / 2)
        release = 60 + self.total_mib * 0.05
        return ready, release, release


def wait_crashers(crashers, server, timeouts):
    """Event loop until every crasher got ready, was released and has a final record at `server`.

    While dumps are pending the server is polled every POLL_S, so a dump stored while others are
    still streaming gets its own time. Every wait is bounded (`timeouts` = ready, release, stored
    in seconds): a crasher not ready in time, or not released in time after its crash (a handshake
    never answered freezes it until SIGKILL), is killed and marked with an error; polling for
    records stops `stored` seconds after the last release. Returns (facts by pid, pids never
    recorded)."""
    ready_t, release_t, stored_t = timeouts
    start = time.monotonic()
    facts = {}
    last_exit = None
    while True:
        live = [c for c in crashers if c.pidfd is not None]
        pending = {c.pid for c in crashers if c.ready_ns is not None} - set(facts)
        # A crasher we had to kill may never get a record: do not wait for it once the rest is in.
        awaited = {c.pid for c in crashers if c.pid in pending and c.error is None and server.awaits(c)}
        if not live:
            last_exit = last_exit or time.monotonic()
            if not awaited or time.monotonic() - last_exit > stored_t:
                return facts, pending
        fds = {}
        for c in live:
            if c.ready_r is not None:
                fds[c.ready_r] = c.on_ready_readable
            else:
                fds[c.pidfd] = c.on_exit
        readable, _, _ = select.select(list(fds), [], [], POLL_S if pending else 0.1)
        for fd in readable:
            fds[fd]()
        if pending:
            facts.update(server.poll_stored(pending))
        enforce_deadlines(crashers, start, ready_t, release_t)


def enforce_deadlines(crashers, start, ready_timeout, release_timeout):
    """Kills (and marks) each crasher that overstays: see wait_crashers()."""
    now = time.monotonic()
    for c in crashers:
        if c.pidfd is None:
            continue
        if c.ready_ns is not None:
            if now - c.ready_ns / 1e9 <= release_timeout:
                continue
            c.error = f"HANG: not released {release_timeout:.0f} s after the crash; killed"
        elif now - start <= ready_timeout:
            continue
        elif c.ready_r is not None:
            c.error = f"not ready after {ready_timeout:.0f} s; killed"
        else:
            c.error = (c.error or "") + "; did not exit; killed"
        c.kill_and_reap()


def run_crash(server, scenario, args, pattern, stderr):
    """One repetition of `scenario` against `server`: pre-touch, crash, wait, measure."""
    ready_t, release_t, stored_t = scenario.timeouts()
    load = loadavg1()
    t0 = time.monotonic()
    pretouch(args.python, 2 * scenario.total_mib + PRETOUCH_EXTRA_MIB, timeout=ready_t)
    t1 = time.monotonic()
    pattern.set(server)
    cpu0 = server.cpu_seconds() if server.alive() else None
    faults0 = server.minor_faults() if server.alive() else None
    crashers = [Crasher(scenario.argv(args), stderr) for _ in range(scenario.count)]
    facts, missing = wait_crashers(crashers, server, (ready_t, release_t, stored_t))
    server.settle()
    cpu1 = server.cpu_seconds() if server.alive() and cpu0 is not None else None
    faults1 = server.minor_faults() if server.alive() and faults0 is not None else None
    m = assemble(server, crashers, facts, missing, cpu0, cpu1)
    m["minor_faults"] = faults1 - faults0 if faults1 is not None else None
    m["vm_rss_after_kib"] = server.vm_rss_kib() if server.alive() else None
    readies = [c.ready_ns / 1e9 for c in crashers if c.ready_ns]
    m.update(loadavg1_before=load, pretouch_s=t1 - t0, seconds=time.monotonic() - t0,
             prepare_s=max(readies) - t1 if readies else None)
    return m


def loadavg1():
    """1-minute load average: other work on the machine makes every number noisier."""
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def assemble(server, crashers, facts, missing, cpu0, cpu1):
    """Joins what the bench saw with what the server recorded, per crash and for the batch."""
    crashes = []
    for c in crashers:
        rec = c.result()
        f = facts.get(c.pid)
        if f:
            rec.update({k: v for k, v in f.items() if k != "stored_ns"})
            rec["stored_ms"] = ms(f["stored_ns"] - c.ready_ns)
        elif c.ready_ns is not None:
            rec["error"] = rec["error"] or server.why_lost(c)
        crashes.append(rec)
    readies = [c.ready_ns for c in crashers if c.ready_ns]
    stores = [f["stored_ns"] for f in facts.values()]
    return {
        "server": server.name, "server_alive": server.alive(), "crashes": crashes,
        "cpu_s": cpu1 - cpu0 if cpu1 is not None else None,
        "vm_hwm_kib": server.vm_hwm_kib() if server.alive() else None,
        "batch_ms": ms(max(stores) - min(readies)) if stores and readies else None,
        "accounted": sum(1 for r in crashes if r.get("state") == "complete"),
        "lost_pids": sorted(missing),
    }


# ---------------------------------------------------------------------------------------------
# Running the scenarios
# ---------------------------------------------------------------------------------------------

def make_servers(names, workdir, args):
    """Server objects (not started yet) for the `--servers` names, each in its own directory."""
    servers = []
    for name in names:
        if name == "coredumpd":
            servers.append(Coredumpd(workdir, args.coredumpd))
        elif name in args.variants:
            config, binary = args.variants[name]
            servers.append(Coredumpd(workdir, binary, name, config))
        elif name == "systemd-coredump":
            servers.append(SystemdCoredump(workdir, args.systemd_coredump))
        else:
            servers.append(RawServer(workdir, args.raw_server, write_file=(name == "raw-write")))
    return servers


class Budget:
    """Wall-clock budget of the whole run: a repetition predicted not to fit is skipped (and listed
    with the report). A scenario's first repetition runs while any time is left."""

    def __init__(self, seconds):
        self.deadline = time.monotonic() + seconds if seconds > 0 else None

    def allows(self, predicted_s):
        """True if something taking `predicted_s` seconds would still end within the budget."""
        return self.deadline is None or time.monotonic() + predicted_s <= self.deadline


def run_repetition(scenario, rep, args, pattern, workdir, want_zstd_ref):
    """One repetition of one scenario: fresh servers, one crash per server in an order that rotates
    with `rep`, then (if asked) the zstd reference. Returns (measurements, zstd_ref or None)."""
    rdir = os.path.join(workdir, f"{scenario.name.replace(' ', '_')}-rep{rep}")
    os.makedirs(rdir)
    names = [x for x in args.servers if x != "systemd-coredump" or scenario.mib <= args.systemd_coredump_max_mib]
    servers = make_servers(names, rdir, args)
    measurements = []
    zstd_ref = None
    try:
        for server in servers:
            server.start()
        k = rep % len(servers)
        with open(os.path.join(rdir, "crashers.stderr"), "ab") as stderr:
            for order, server in enumerate(servers[k:] + servers[:k]):
                m = run_crash(server, scenario, args, pattern, stderr)
                m.update(scenario=scenario.name, rep=rep, order=order)
                measurements.append(m)
                log_progress(m)
        if want_zstd_ref:
            zstd_ref = reference_compression(servers, measurements)
    finally:
        Crashers.kill_all()  # a crasher frozen in a dump would hold up the server's stop
        for server in servers:
            server.stop()
        if not args.keep:
            shutil.rmtree(rdir, ignore_errors=True)
    return measurements, zstd_ref


def log_progress(m):
    """One progress line per run on stderr, plus its errors."""
    rel = [c["release_ms"] for c in m["crashes"] if c.get("release_ms") is not None]
    sto = [c["stored_ms"] for c in m["crashes"] if c.get("stored_ms") is not None]
    errors = [c["error"] for c in m["crashes"] if c.get("error")]
    text = (f"  {m['scenario']:<22} rep {m['rep']} {m['server']:<10} "
            f"release {fmt(median_or_none(rel))} ms, stored {fmt(median_or_none(sto))} ms, "
            f"cpu {fmt(m['cpu_s'], 2)} s, {m['accounted']}/{len(m['crashes'])} complete")
    log(text)
    for e in sorted(set(errors)):
        log(f"    ! {e}")


def reference_compression(servers, measurements):
    """zstd -3 -T0 size of one core of this scenario (the first stored core of the first server that
    keeps cores, decompressed if it is a .zst). Done after the timed crashes."""
    for server in servers:
        for m in measurements:
            for c in m["crashes"] if m["server"] == server.name else []:
                path = server.stored_file(c) if c.get("state") == "complete" else None
                if path and os.path.exists(path):
                    ref = zstd3_size(path, path + ".zstd3", timeout=600)
                    ref.update({"from": server.name, "core_bytes": c.get("core_bytes")})
                    ref.update(single_thread_zstd3(servers, measurements))
                    return ref
    return None


def single_thread_zstd3(servers, measurements):
    """Seconds `zstd -3 -T1` takes on one core of this scenario, uncompressed in the page cache:
    the compression step of systemd-coredump 252 (it copies the core into a file, then compresses
    that with single-threaded zstd at its default level, 3). The core is one a server kept
    uncompressed (raw-write; coredumpd for an incompressible core), else coredumpd's .zst
    decompressed next to it first. {} if no server kept one."""
    for server in servers:
        if server.name == "systemd-coredump":
            continue  # its .zst is the same core; the daemons' come first anyway
        for m in measurements:
            for c in m["crashes"] if m["server"] == server.name else []:
                path = server.stored_file(c) if c.get("state") == "complete" else None
                if not path or not os.path.exists(path):
                    continue
                raw = path[:-len(".zst")] + ".bench-raw" if path.endswith(".zst") else path
                try:
                    if raw != path:
                        subprocess.run(["zstd", "-dqf", path, "-o", raw], check=True, timeout=600)
                    subprocess.run(["cat", raw], stdout=subprocess.DEVNULL, check=True, timeout=600)  # into the cache
                    t0 = time.monotonic()
                    subprocess.run(["zstd", "-3", "-T1", "-cq", raw], stdout=subprocess.DEVNULL, check=True,
                                   timeout=600)
                    return {"zstd3_t1_seconds": time.monotonic() - t0, "zstd3_t1_from": server.name}
                finally:
                    if raw != path:
                        with contextlib.suppress(FileNotFoundError):
                            os.unlink(raw)
    return {}


def zstd3_size(path, scratch, timeout):
    """Compresses the core in `path` (decompressing it first if it ends in .zst) with
    `zstd -3 -T0` into `scratch`; returns the compressed size and the time taken."""
    t0 = time.monotonic()
    src = None
    if path.endswith(".zst"):
        src = subprocess.Popen(["zstd", "-dcq", path], stdout=subprocess.PIPE)
        stdin = src.stdout
    else:
        stdin = open(path, "rb")
    try:
        with open(scratch, "wb") as out:
            subprocess.run(["zstd", "-3", "-T0", "-cq"], stdin=stdin, stdout=out, check=True, timeout=timeout)
    finally:
        stdin.close()
        if src:
            src.wait(timeout=timeout)
    size = os.path.getsize(scratch)
    os.unlink(scratch)
    return {"zstd3_bytes": size, "seconds": time.monotonic() - t0}


# ---------------------------------------------------------------------------------------------
# Summary
# ---------------------------------------------------------------------------------------------

def median_or_none(values):
    """Median of the values that are not None; None if there are none."""
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def fmt(value, digits=1):
    """A number for the tables ("-" when missing)."""
    return "-" if value is None else f"{value:,.{digits}f}"


def per_crash(measurements, server, key):
    """Every crash's `key` for `server`, pooled over the repetitions."""
    return [c.get(key) for m in measurements if m["server"] == server for c in m["crashes"]]


def per_run(measurements, server, key):
    """`key` of every run (one crash, or one batch) of `server`."""
    return [m.get(key) for m in measurements if m["server"] == server]


def summarize(result, servers):
    """Medians per server for one scenario: {server: {metric: value}} plus the zstd reference."""
    ms_ = result["measurements"]
    out = {}
    for s in servers:
        core = median_or_none(per_crash(ms_, s, "core_bytes"))
        stored = median_or_none(per_crash(ms_, s, "stored_bytes"))
        hwm = [v for v in per_run(ms_, s, "vm_hwm_kib") if v is not None]
        after = [v for v in per_run(ms_, s, "vm_rss_after_kib") if v is not None]
        out[s] = {
            "release_ms": median_or_none(per_crash(ms_, s, "release_ms")),
            "stored_ms": median_or_none(per_crash(ms_, s, "stored_ms")),
            "cpu_s": median_or_none(per_run(ms_, s, "cpu_s")),
            "peak_rss_mib": max(hwm) / 1024 if hwm else None,
            "rss_after_mib": max(after) / 1024 if after else None,
            "handshake_ms": median_or_none(per_crash(ms_, s, "handshake_ms")),
            "core_mib": core / 2**20 if core else None,
            "stored_mib": stored / 2**20 if stored is not None else None,
            "stored_ratio": stored / core if core and stored else None,
            "batch_ms": median_or_none(per_run(ms_, s, "batch_ms")),
            "max_release_ms": max((v for v in per_crash(ms_, s, "release_ms") if v is not None), default=None),
            "complete": sum(per_run(ms_, s, "accounted")),
            "crashes": sum(len(m["crashes"]) for m in ms_ if m["server"] == s),
            "runs": sum(1 for m in ms_ if m["server"] == s),
        }
    return out


def ratio(a, b):
    """a / b, or None when either is missing or b is zero."""
    return a / b if a is not None and b else None


def daemons(servers):
    """The servers that are coredumpd: "coredumpd" and the --variant names."""
    return [x for x in servers if x not in ("raw-drain", "raw-write", "systemd-coredump")]


def compared(servers):
    """The servers whose ratio over raw-drain the tables show: the daemons and systemd-coredump."""
    return [x for x in servers if x not in ("raw-drain", "raw-write")]


def paired_ratio(measurements, server, key, base="raw-drain"):
    """Median over repetitions of (server's median `key` in the rep) / (base's in the same rep):
    the two ran back to back, so slow drift of the machine cancels out. None without pairs."""
    ratios = []
    for rep in sorted({m["rep"] for m in measurements}):
        a, b = (median_or_none(per_crash([m for m in measurements if m["rep"] == rep], x, key))
                for x in (server, base))
        if a is not None and b:
            ratios.append(a / b)
    return median_or_none(ratios)


def metric_table(title, key, results, servers, digits=1, paired=False):
    """Markdown table of one metric: a row per scenario, a column per server, and the ratio
    coredumpd / raw-drain (of the medians; with `paired`, also the median of the per-repetition
    ratios, see paired_ratio) for coredumpd and each variant."""
    cols = list(servers)
    ratios = compared(cols) if "raw-drain" in cols else []
    head = ["scenario"] + cols + [f"{x} / raw-drain" for x in ratios]
    head += [f"{x} / raw-drain, paired" for x in ratios] if paired else []
    head.append("n")
    lines = [f"### {title}", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in results:
        s = r["summary"]
        cells = [r["name"]] + [fmt(s[c][key], digits) for c in cols]
        cells += [fmt(ratio(s[x][key], s["raw-drain"][key]), 2) for x in ratios]
        if paired:
            cells += [fmt(paired_ratio(r["measurements"], x, key), 2) for x in ratios]
        cells.append("/".join(str(s[c]["runs"]) for c in cols))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def percentile(values, q):
    """The q-th percentile (0..100, linear between the order statistics) of the values that are not
    None; None if there are none."""
    values = sorted(v for v in values if v is not None)
    if not values:
        return None
    at = (len(values) - 1) * q / 100
    lo = int(at)
    hi = min(lo + 1, len(values) - 1)
    return values[lo] + (values[hi] - values[lo]) * (at - lo)


def handshake_table(results, servers):
    """Handshake accept → ack sent per server: median, p99 and max over every crash of the scenario
    (all repetitions pooled; with few crashes p99 is close to the max)."""
    lines = ["### Handshake accept → ack sent (ms, every crash pooled)", "",
             "| scenario | server | median | p99 | max | crashes |", "|---|---|---|---|---|---|"]
    for r in results:
        for x in servers:
            v = [h for h in per_crash(r["measurements"], x, "handshake_ms") if h is not None]
            if not v:
                continue  # systemd-coredump has no handshake
            lines.append(f"| {r['name']} | {x} | {fmt(median_or_none(v), 2)} | {fmt(percentile(v, 99), 2)} "
                         f"| {fmt(max(v, default=None), 2)} | {len(v)} |")
    return "\n".join(lines) + "\n"


def size_table(results, servers):
    """Core size, what coredumpd stored, and the zstd -3 -T0 reference."""
    lines = ["### Sizes (MiB, median) and compression", "",
             "| scenario | core | coredumpd stored | stored / core | zstd -3 | zstd -3 / core | coredumpd / zstd -3 |",
             "|---|---|---|---|---|---|---|"]
    for r in results:
        s = r["summary"]
        cd = s.get("coredumpd", {})
        any_core = next((s[x]["core_mib"] for x in servers if s[x]["core_mib"]), None)
        ref = r.get("zstd_ref")
        z = ref["zstd3_bytes"] / 2**20 if ref else None
        core_ref = ref["core_bytes"] / 2**20 if ref and ref.get("core_bytes") else any_core
        lines.append("| " + " | ".join([
            r["name"], fmt(any_core), fmt(cd.get("stored_mib")), fmt(cd.get("stored_ratio"), 3), fmt(z),
            fmt(ratio(z, core_ref), 3), fmt(ratio(cd.get("stored_mib"), z), 2)]) + " |")
    return "\n".join(lines) + "\n"


def systemd_model_table(results, servers):
    """Crash → stored against a lower bound for systemd-coredump 252's pipeline on the same core:
    draining it (raw-drain's crash → stored) plus compressing it with `zstd -3 -T1` afterwards (it
    compresses only once the whole core is in a file). It also copies the core into that file
    first, which the bound leaves out. One row per scenario and coredumpd (or variant)."""
    lines = ["### Crash → stored against systemd-coredump 252's pipeline (lower bound)", "",
             "| scenario | server | server, ms | raw-drain, ms | zstd -3 -T1, ms | systemd-coredump ≥, ms "
             "| bound / server |",
             "|---|---|---|---|---|---|---|"]
    rows = 0
    for r in results:
        s, ref = r["summary"], r.get("zstd_ref") or {}
        t1 = ref.get("zstd3_t1_seconds")
        if r["count"] > 1 or t1 is None or "raw-drain" not in s:
            continue
        drain = s["raw-drain"]["stored_ms"]
        bound = drain + t1 * 1000 if drain is not None else None
        for x in daemons(servers):
            cd = s[x]["stored_ms"]
            lines.append("| " + " | ".join([r["name"], x, fmt(cd), fmt(drain), fmt(t1 * 1000), fmt(bound),
                                             fmt(ratio(bound, cd), 2)]) + " |")
            rows += 1
    return "\n".join(lines) + "\n" if rows else ""


def systemd_table(results, servers):
    """systemd-coredump 252 measured in the same run: its crash → released and crash → stored over
    each daemon's, as ratios of the medians and paired per repetition (paired_ratio)."""
    if "systemd-coredump" not in servers:
        return ""
    lines = ["### systemd-coredump 252 against coredumpd, measured in the same run", "",
             "| scenario | server | released, systemd-coredump / server | paired "
             "| stored, systemd-coredump / server | paired | complete, systemd-coredump / server |",
             "|---|---|---|---|---|---|---|"]
    for r in results:
        s, sd = r["summary"], r["summary"]["systemd-coredump"]
        if not sd["runs"]:
            continue  # above --systemd-coredump-max-mib
        for x in daemons(servers):
            cells = [r["name"], x]
            for key in ("release_ms", "stored_ms"):
                cells += [fmt(ratio(sd[key], s[x][key]), 2),
                          fmt(paired_ratio(r["measurements"], "systemd-coredump", key, base=x), 2)]
            cells.append(f"{sd['complete']}/{sd['crashes']} : {s[x]['complete']}/{s[x]['crashes']}")
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def batch_table(results, servers):
    """For scenarios with many crashers: how many were stored and how long the whole batch took."""
    rows = [r for r in results if r["count"] > 1]
    if not rows:
        return ""
    lines = ["### Concurrent crashers", "",
             "| scenario | server | complete / crashes | first crash → last stored, ms (median) | max release, ms |",
             "|---|---|---|---|---|"]
    for r in rows:
        for s in servers:
            v = r["summary"][s]
            lines.append(f"| {r['name']} | {s} | {v['complete']} / {v['crashes']} | {fmt(v['batch_ms'])} "
                         f"| {fmt(v['max_release_ms'])} |")
    return "\n".join(lines) + "\n"


def anomalies(results):
    """Every crash that did not end as a complete dump with WCOREDUMP, and dead servers."""
    out = []
    for r in results:
        for m in r["measurements"]:
            if not m["server_alive"]:
                out.append(f"{r['name']} rep {m['rep']}: {m['server']} was not running after the crash")
            for c in m["crashes"]:
                problems = []
                if c.get("error"):
                    problems.append(c["error"])
                if c.get("state") not in (None, "complete"):
                    problems.append(f"state {c['state']}: {c.get('server', {}).get('reason')}")
                if c.get("ready_ns") and not c.get("wcoredump"):
                    problems.append(f"no WCOREDUMP (wait status {c.get('wait_status')})")
                if problems:
                    out.append(f"{r['name']} rep {m['rep']} {m['server']} pid {c['pid']}: " + "; ".join(problems))
    return out


def report(env, results, servers, skipped, notes):
    """The human report: environment, tables, skipped scenarios, anomalies."""
    parts = ["## Environment", ""] + [f"- {k}: {v}" for k, v in env.items()] + [""]
    parts.append("## Results (medians; ratio = coredumpd / raw-drain; n = runs per server)\n")
    parts.append(metric_table("Crash → task released (ms)", "release_ms", results, servers, paired=True))
    parts.append(metric_table("Crash → stored (ms)", "stored_ms", results, servers, paired=True))
    parts.append(metric_table("Server CPU time per run (s, utime+stime)", "cpu_s", results, servers, 2))
    parts.append(metric_table("Server peak RSS (MiB, VmHWM, max over the scenario)", "peak_rss_mib", results,
                              servers))
    parts.append(metric_table("Server RSS once the dumps are stored (MiB, VmRSS, max over the scenario)",
                              "rss_after_mib", results, servers))
    parts.append(handshake_table(results, servers))
    parts.append(size_table(results, servers))
    parts.append(systemd_table(results, servers))
    parts.append(systemd_model_table(results, servers))
    parts.append(batch_table(results, servers))
    if skipped:
        parts.append("## Skipped\n\n" + "\n".join(f"- {s}" for s in skipped) + "\n")
    found = anomalies(results)
    parts.append("## Anomalies\n\n" + ("\n".join(f"- {a}" for a in found) if found else "none") + "\n")
    if notes:
        parts.append("## Notes\n\n" + "\n".join(f"- {n}" for n in notes) + "\n")
    return "\n".join(parts)


# ---------------------------------------------------------------------------------------------
# Environment, options, main
# ---------------------------------------------------------------------------------------------

def environment(args):
    """What the numbers depend on: machine, kernel, load, tool versions, binaries."""
    def first_line(cmd):
        try:
            return subprocess.run(cmd, capture_output=True, text=True, timeout=10).stdout.splitlines()[0]
        except (OSError, IndexError, subprocess.SubprocessError):
            return "?"

    def fields(path):
        with open(path) as f:
            return {k.strip(): v.strip() for k, v in (line.split(":", 1) for line in f if ":" in line)}

    def page_reporting():
        # Free page reporting (virtio-balloon) hands freed memory back to the host; with
        # min_free_ms 0 it does so at once, and the pre-touch can no longer keep it in the guest.
        params = "/sys/module/page_reporting/parameters"
        try:
            return ", ".join(f"{n} {open(os.path.join(params, n)).read().strip()}"
                             for n in ("page_reporting_order", "min_free_ms") if os.path.exists(os.path.join(params, n)))
        except OSError:
            return "?"

    with open("/proc/loadavg") as f:
        load = f.read().split()[:3]
    return {
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "kernel": platform.release(),
        "nproc": os.cpu_count(),
        "cpu": fields("/proc/cpuinfo").get("model name", "?"),
        "MemTotal": fields("/proc/meminfo")["MemTotal"],
        "load average at start": " ".join(load),
        "free page reporting": page_reporting() or "not present",
        "core_pattern before": read_pattern(),
        "zstd": first_line(["zstd", "--version"]),
        "python": platform.python_version(),
        "coredumpd": args.coredumpd,
        "raw-drain-server": args.raw_server,
        "systemd-coredump": args.systemd_coredump or "not measured (bench/run.sh unpacks it)",
        "reps": args.reps,
    }


def csv_ints(text):
    """argparse type: "64,512" -> [64, 512]."""
    return [int(x) for x in text.split(",") if x]


def csv_names(allowed):
    """argparse type: a comma-separated subset of `allowed`."""
    def parse(text):
        names = [x for x in text.split(",") if x]
        bad = [x for x in names if x not in allowed]
        if bad:
            raise argparse.ArgumentTypeError(f"unknown {bad}; choose from {', '.join(allowed)}")
        return names
    return parse


def parse_args(argv):
    """Command line; --quick narrows the sizes and repetitions (and says what it dropped)."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--coredumpd", required=True, help="path of the coredumpd binary")
    p.add_argument("--raw-server", required=True, help="path of raw-drain-server")
    p.add_argument("--crasher", required=True, help="path of the crasher (tests/programs/crasher.cc)")
    p.add_argument("--python", default=sys.executable,
                   help="python3 for the heap crasher and pre-touch helper (default: this one)")
    p.add_argument("--reps", type=int, default=3, help="repetitions per scenario and server (default: 3)")
    p.add_argument("--sizes", type=csv_ints, default=[64, 512, 2048],
                   help="core sizes, MiB of touched memory (default: 64,512,2048)")
    p.add_argument("--fills", type=csv_names(FILLS + EXTRA_FILLS), default=list(FILLS),
                   help="memory contents, of random,half-zero,pyheap,zero (default: random,half-zero,pyheap)")
    p.add_argument("--pyheap-max-mib", type=int, default=512,
                   help="skip pyheap sizes above this (default: 512; building a Python heap takes ~10 s per GiB)")
    p.add_argument("--concurrent", type=int, default=20, help="crashers started at once (default: 20; 0: skip)")
    p.add_argument("--concurrent-mib", type=int, default=64, help="size of each concurrent crasher, MiB (default: 64)")
    p.add_argument("--servers", type=csv_names(SERVERS), default=None,
                   help="servers under test, of " + ",".join(SERVERS) + " (default: coredumpd,raw-drain, "
                        "and systemd-coredump with --systemd-coredump)")
    # Absolute: the kernel runs the pipe helper named in core_pattern, and refuses a relative path
    # ("pipe failed" in dmesg; the crash is then not dumped at all).
    p.add_argument("--systemd-coredump", metavar="BINARY", type=os.path.abspath,
                   help="systemd-coredump 252 to measure as a server (bench/run.sh unpacks Debian's package; "
                        "it is not installed, which would change core_pattern)")
    p.add_argument("--systemd-coredump-max-mib", type=int, default=512,
                   help="measure systemd-coredump only up to this core size (default: 512; at 2048 MiB it needs "
                        "~20 s per crash here, which would push the full run past 10 minutes)")
    p.add_argument("--variant", action="append", default=[], metavar="NAME=CONFIG[:BINARY]",
                   help="also run coredumpd (or BINARY, another build of it) as server NAME with --config CONFIG: "
                        "an A/B in the same interleaved run (repeatable)")
    p.add_argument("--analysis-ab", action="store_true",
                   help="also run coredumpd with analysis off as server 'no-analysis' (coredumpd analyses each "
                        "stored core by default): the released and stored figures with and without it, same run")
    p.add_argument("--budget-s", type=float, default=540,
                   help="skip repetitions that would end after this many seconds of run time "
                        "(default: 540; 0: no limit)")
    p.add_argument("--no-zstd-ref", dest="zstd_ref", action="store_false", help="skip the zstd -3 reference")
    p.add_argument("--quick", action="store_true", help="1 rep, 64 and 512 MiB only (3-5 minutes with systemd-coredump)")
    p.add_argument("--json-out", help="write every measurement here as JSON")
    p.add_argument("--workdir", help="where sockets and stores go (default: a new directory in /var/tmp)")
    p.add_argument("--keep", action="store_true", help="keep the stores and logs after the run")
    p.add_argument("--storm", action="store_true",
                   help="run the crash-storm scenarios (bench/storm_bench.py) instead of the size scenarios")
    p.add_argument("--storm-burst", type=int, default=200, help="--storm: crashers started at once (0: skip)")
    p.add_argument("--storm-burst-mib", type=int, default=1, help="--storm: MiB each burst crasher touches")
    p.add_argument("--storm-rate", type=float, default=1000, help="--storm: crashers started per second (0: skip)")
    p.add_argument("--storm-seconds", type=float, default=10, help="--storm: for how long")
    p.add_argument("--storm-rate-mib", type=int, default=0, help="--storm: MiB each paced crasher touches")
    p.add_argument("--storm-config", help="--storm: coredumpd configuration (JSON text); default: built-in defaults")
    args = p.parse_args(argv)
    if args.servers is None:
        args.servers = [x for x in DEFAULT_SERVERS if x != "systemd-coredump" or args.systemd_coredump]
    if "systemd-coredump" in args.servers and not args.systemd_coredump:
        p.error("--servers systemd-coredump needs --systemd-coredump BINARY")
    args.variants = {}
    for v in args.variant:
        name, _, rest = v.partition("=")
        config, _, binary = rest.partition(":")
        binary = binary or args.coredumpd
        if (not name or name in SERVERS or name in args.variants or not os.path.isfile(config)
                or not os.access(binary, os.X_OK)):
            p.error(f"--variant {v!r}: want NAME=CONFIG[:BINARY], a new name, an existing file and an executable")
        args.variants[name] = (os.path.abspath(config), os.path.abspath(binary))
        args.servers.append(name)
    if args.analysis_ab:
        if "no-analysis" in args.variants:
            p.error("--analysis-ab: the name no-analysis is taken by a --variant")
        fd, config = tempfile.mkstemp(prefix="coredumpd-bench-no-analysis-", suffix=".json", dir="/var/tmp")
        with os.fdopen(fd, "w") as f:
            json.dump({"analysis": {"enabled": False}}, f)
        atexit.register(os.unlink, config)
        args.variants["no-analysis"] = (config, os.path.abspath(args.coredumpd))
        args.servers.append("no-analysis")
    args.quick_skipped = []
    if args.quick:
        args.quick_skipped = [f"{s} MiB scenarios (--quick)" for s in args.sizes if s > 512]
        if args.reps > 1:
            args.quick_skipped.append(f"repetitions 2..{args.reps} (--quick)")
        args.reps = 1
        args.sizes = [s for s in args.sizes if s <= 512] or [64]
    if args.reps < 1:
        p.error("--reps must be at least 1")
    return args


def plan(args):
    """The scenarios to run and the list of what was skipped (printed with the report)."""
    scenarios, skipped = [], list(args.quick_skipped)
    for mib in sorted(args.sizes):  # smallest first: the time budget cuts the largest
        for fill in args.fills:
            if fill == "pyheap" and mib > args.pyheap_max_mib:
                skipped.append(f"pyheap {mib} MiB (above --pyheap-max-mib {args.pyheap_max_mib})")
                continue
            scenarios.append(Scenario(fill, mib))
            if "systemd-coredump" in args.servers and mib > args.systemd_coredump_max_mib:
                skipped.append(f"systemd-coredump at {fill} {mib} MiB (above --systemd-coredump-max-mib "
                               f"{args.systemd_coredump_max_mib})")
    if args.concurrent > 1:
        at = sum(1 for s in scenarios if s.mib <= args.concurrent_mib)
        scenarios.insert(at, Scenario("random", args.concurrent_mib, args.concurrent))
    if not args.zstd_ref:
        skipped.append("zstd -3 reference (--no-zstd-ref)")
    return scenarios, skipped


def allow_cores():
    """RLIMIT_CORE = unlimited for us and so for every crasher. The kernel ignores the limit for
    socket dumps (docs/PROTOCOL.md §7.1), but coredumpd's default policy honours it and rejects a dump whose
    limit is 0 — the usual shell default — which would measure a rejection, not a dump."""
    resource.setrlimit(resource.RLIMIT_CORE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))


def preflight(args):
    """Refuses to start where the benchmark cannot work."""
    if os.geteuid() != 0:
        sys.exit("run_bench: needs root (writes kernel.core_pattern)")
    allow_cores()
    with open("/proc/sys/kernel/core_modes") as f:
        if "socket" not in f.read():
            sys.exit("run_bench: kernel lacks socket core_pattern support (needs Linux 6.17+)")
    binaries = [args.coredumpd, args.raw_server, args.crasher]
    binaries += [args.systemd_coredump] if "systemd-coredump" in args.servers else []
    for path in binaries:
        if not os.access(path, os.X_OK):
            sys.exit(f"run_bench: {path} is not an executable")
    if "pyheap" in args.fills and not os.access(args.python, os.X_OK):
        sys.exit(f"run_bench: {args.python} is not an executable")
    if "systemd-coredump" in args.servers and not shutil.which("systemd-socket-activate"):
        sys.exit("run_bench: systemd-socket-activate not found (package systemd; needed for systemd-coredump)")
    if not shutil.which("zstd") and args.zstd_ref:
        sys.exit("run_bench: zstd not found (needed for the reference; or pass --no-zstd-ref)")


def run_all(args, scenarios, workdir, skipped):
    """Runs the scenarios under one core_pattern lock, in rounds: round r is repetition r of every
    scenario (smallest first), so when the time budget runs out the repetitions beyond the first
    are cut, not whole scenarios. Returns (results, interrupted reason); appends what was not run
    to `skipped`."""
    results = {s.name: {"name": s.name, "fill": s.fill, "mib": s.mib, "count": s.count, "seconds": 0.0,
                        "measurements": [], "zstd_ref": None} for s in scenarios}
    cut = {s.name: [] for s in scenarios}
    interrupted = None
    budget = Budget(args.budget_s)
    with CorePattern() as pattern:
        try:
            for rep in range(args.reps):
                for i, scenario in enumerate(scenarios, 1):
                    r = results[scenario.name]
                    done = len({m["rep"] for m in r["measurements"]})
                    if not budget.allows(r["seconds"] / done if done else 0):
                        cut[scenario.name].append(rep + 1)
                        continue
                    log(f"[rep {rep + 1}/{args.reps}, {i}/{len(scenarios)}] {scenario.name}")
                    t0 = time.monotonic()
                    measurements, zstd_ref = run_repetition(scenario, rep, args, pattern, workdir,
                                                            args.zstd_ref and r["zstd_ref"] is None)
                    r["measurements"] += measurements
                    r["zstd_ref"] = r["zstd_ref"] or zstd_ref
                    r["seconds"] += time.monotonic() - t0
        except BenchInterrupted as e:
            interrupted = f"interrupted by {e}"
            log(f"! {interrupted}; reporting what was measured")
        finally:
            Crashers.kill_all()
    for name, reps in cut.items():
        if reps:
            which = "all repetitions" if len(reps) == args.reps else "repetition(s) " + ", ".join(map(str, reps))
            skipped.append(f"{name}: {which} of {args.reps} (--budget-s {args.budget_s:.0f} would be exceeded)")
    return [r for r in results.values() if r["measurements"]], interrupted


def main(argv=None):
    """Plan, run under the core_pattern lock, report. Exit status 1 only if interrupted."""
    args = parse_args(argv if argv is not None else sys.argv[1:])
    if args.storm:
        if os.geteuid() != 0:
            sys.exit("run_bench: needs root (writes kernel.core_pattern)")
        import storm_bench  # beside this file
        return storm_bench.main(args, CorePattern)
    preflight(args)
    scenarios, skipped = plan(args)
    env = environment(args)
    workdir = args.workdir or tempfile.mkdtemp(prefix="coredumpd-bench-", dir="/var/tmp")
    os.makedirs(workdir, exist_ok=True)
    started = time.monotonic()
    log(f"coredumpd bench: {len(scenarios)} scenarios x {len(args.servers)} servers x {args.reps} reps; "
        f"work dir {workdir}")
    try:
        results, interrupted = run_all(args, scenarios, workdir, skipped)
    finally:
        Crashers.kill_all()
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    elapsed = time.monotonic() - started
    for r in results:
        r["summary"] = summarize(r, args.servers)
    with open(PIPE_LIMIT_PATH) as f:
        pipe_limit = f.read().strip()
    notes = [f"total run time {elapsed:.0f} s",
             f"core_pattern after the run: {read_pattern()!r}, core_pipe_limit {pipe_limit}"]
    busy = max((m["loadavg1_before"] for r in results for m in r["measurements"]), default=0)
    if busy > os.cpu_count() / 2:
        notes.append(f"the machine was busy: 1-min load average up to {busy:.1f} on {os.cpu_count()} CPUs "
                     "before some crashes (other processes competed; expect noisy numbers)")
    if interrupted:
        notes.insert(0, interrupted)
    print(report(env, results, args.servers, skipped, notes))
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump({"environment": env, "options": vars(args), "skipped": skipped, "interrupted": interrupted,
                       "elapsed_s": elapsed, "scenarios": results}, f, indent=1)
        log(f"measurements written to {args.json_out}")
    return 1 if interrupted else 0


if __name__ == "__main__":
    sys.exit(main())
