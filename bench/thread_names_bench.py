#!/usr/bin/env python3
"""Cost of the thread_names handshake collector, on real kernel crashes (root, Linux 6.17+).

Starts coredumpd (default configuration, fresh store), points core_pattern at it under the global
lock /run/lock/coredumpd-core_pattern.lock (restored at the end), and crashes
tests/programs/crash_many_threads with 1, 64, 256 and 2000 threads in all (--threads), --reps
times each. From every record's extras it prints, median and max in microseconds:
collect_timings_us.thread_names (the comm reads this collector adds to the handshake),
collect_timings_us.threads (the task/*/status reads whose NSpid lines map the TIDs into the task's
pid namespace; that collector ran before thread_names existed) and handshake_us (accept -> ack).

  sudo python3 bench/thread_names_bench.py --coredumpd build/dev/daemon/coredumpd \\
      --crasher build/dev/tests/programs/crash_many_threads
"""
import argparse, fcntl, json, os, resource, sqlite3, statistics, subprocess, sys, tempfile, time

PATTERN = "/proc/sys/kernel/core_pattern"
LOCK = "/run/lock/coredumpd-core_pattern.lock"


def crash(crasher, threads):
    def unlimited_core():
        resource.setrlimit(resource.RLIMIT_CORE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    # crash_many_threads N starts N threads beside its main one.
    p = subprocess.run([crasher, str(threads - 1)], preexec_fn=unlimited_core, timeout=120)
    return p.returncode


def records(store):
    db = sqlite3.connect(f"file:{store}/index.sqlite?mode=ro", uri=True)
    try:
        return [(pid, json.loads(extra)) for (pid, extra) in db.execute("SELECT pid, extra FROM dumps ORDER BY id")]
    finally:
        db.close()


def summary(values):
    return f"{statistics.median(values):8.0f} {max(values):8.0f}" if values else "       -        -"


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--coredumpd", default="build/dev/daemon/coredumpd")
    p.add_argument("--crasher", default="build/dev/tests/programs/crash_many_threads")
    p.add_argument("--threads", default="1,64,256,2000", help="threads in all, comma-separated")
    p.add_argument("--reps", type=int, default=5)
    args = p.parse_args()
    work = tempfile.mkdtemp(prefix="thread-names-bench-")
    socket, store = f"{work}/s", f"{work}/store"
    lock = open(LOCK, "a+")
    fcntl.flock(lock, fcntl.LOCK_EX)  # other tests and benches that write core_pattern wait
    saved = open(PATTERN).read().rstrip("\n")
    log = open(f"{work}/log", "w")
    daemon = subprocess.Popen([args.coredumpd, "--socket", socket, "--store", store], stdout=log, stderr=log)
    pids = {}
    try:
        for _ in range(100):
            if os.path.exists(socket):
                break
            time.sleep(0.05)
        with open(PATTERN, "w") as f:
            f.write(f"@@{socket}")
        for _ in range(args.reps):  # interleaved: a slow moment of the machine hits every size alike
            for n in map(int, args.threads.split(",")):
                before = {pid for pid, _ in records(store)} if os.path.exists(f"{store}/index.sqlite") else set()
                crash(args.crasher, n)
                for _ in range(200):
                    new = [pid for pid, _ in records(store) if pid not in before]
                    if new:
                        pids[new[0]] = n
                        break
                    time.sleep(0.05)
        time.sleep(1)
    finally:
        with open(PATTERN, "w") as f:
            f.write(saved)
        fcntl.flock(lock, fcntl.LOCK_UN)
        daemon.terminate()
        daemon.wait()
    by_n = {}
    for pid, extra in records(store):
        if pid in pids:
            by_n.setdefault(pids[pid], []).append(extra)
    print(f"{'threads':>7} {'n':>3} | thread_names us median max | threads (NSpid) us median max | handshake_us median max | names stored")
    for n in sorted(by_n):
        rows = by_n[n]
        tn = [r.get("collect_timings_us", {}).get("thread_names") for r in rows]
        th = [r.get("collect_timings_us", {}).get("threads") for r in rows]
        hs = [r.get("handshake_us") for r in rows]
        stored = [len(r.get("thread_names", {})) for r in rows]
        print(f"{n:7} {len(rows):3} | {summary([v for v in tn if v is not None]):>26} | "
              f"{summary([v for v in th if v is not None]):>30} | {summary([v for v in hs if v is not None]):>23} | "
              f"{min(stored)}..{max(stored)}")
    print(f"(store and daemon log in {work})")


if __name__ == "__main__":
    sys.exit(main())
