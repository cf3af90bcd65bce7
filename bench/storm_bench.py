"""Crash storms against coredumpd on the real kernel (issue 20 item 3), run by run_bench.py --storm.

Two scenarios, each on a fresh daemon and store, under the same core_pattern lock as the rest of
the benchmark:
  burst: N crashers (default 200) of M MiB (default 1) started at once;
  rate:  crashers started at R per second (default 1,000) for S seconds (default 10), paced by
         posix_spawn from this process (the rate actually reached is reported beside the target).
For each: how many crashes have a record, how many a core, the other records' states and reasons,
WCOREDUMP as the kernel reported it, the daemon's peak RSS (VmHWM) against the bound the
configuration sets (bench/README.md, "Crash storms"), its log lines, and how long the store took to
settle. Where the time went: the handshake steps and the wait for room (handshake_steps_us), and
how long dumps stayed in flight (the records' drain/compress timings), as percentiles.
"""

import json
import os
import resource
import sqlite3
import subprocess
import tempfile
import time

MIB = 1 << 20
DUMP_MEMORY_BYTES = 6 * MIB  # what each dump in flight reserves (Spool::kArenaBytes + a block)


def percentile(values, q):
    if not values:
        return None
    values = sorted(values)
    return values[min(len(values) - 1, int(q * (len(values) - 1) + 0.5))]


class Daemon:
    """coredumpd on a fresh store in `workdir`, with `config` (a dict) as its configuration file."""

    def __init__(self, binary, workdir, config):
        self.dir = workdir
        self.socket = os.path.join(workdir, "s.sock")
        self.store = os.path.join(workdir, "store")
        self.log_path = os.path.join(workdir, "coredumpd.log")
        cfg = os.path.join(workdir, "config.json")
        with open(cfg, "w") as f:
            json.dump(config, f)
        self.log_file = open(self.log_path, "w")
        self.proc = subprocess.Popen([binary, "--socket", self.socket, "--store", self.store, "--config", cfg],
                                     stdout=self.log_file, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 10
        while not os.path.exists(self.socket):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"coredumpd did not come up; see {self.log_path}")
            time.sleep(0.02)
        time.sleep(0.1)  # bind() comes before listen()

    def pattern(self):
        return "@@" + self.socket

    def core_pipe_limit(self):
        return None

    def status_kib(self, field):
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
        return None

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log_file.close()

    def records(self):
        """Every row of the index: (pid, state, reason, core_size, extra dict)."""
        path = os.path.join(self.store, "index.sqlite")
        if not os.path.exists(path):
            return []
        try:
            con = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
            rows = con.execute("SELECT pid, state, CAST(reason AS TEXT), core_size, extra FROM dumps").fetchall()
            con.close()
        except sqlite3.Error:
            return None
        return [(p, s, r, c, json.loads(e)) for p, s, r, c, e in rows]


def spawn_crasher(crasher, mib):
    return os.posix_spawn(crasher, [crasher, "--mode", "segv", "--touch-mib", str(mib), "--fill", "random"],
                          os.environ)


def reap(pids, statuses, block):
    """Collects exit statuses of `pids` (a set, emptied as they end) into `statuses`."""
    while pids:
        try:
            pid, st = os.waitpid(-1, 0 if block else os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        if pid in pids:
            pids.discard(pid)
            statuses[pid] = st


def run_scenario(args, pattern, name, schedule, mib, config):
    """Starts crashers at the offsets (s) of `schedule`, waits for all of them and their records."""
    workdir = tempfile.mkdtemp(prefix=f"storm-{name}-", dir=args.workdir)
    daemon = Daemon(args.coredumpd, workdir, config)
    pattern.set(daemon)
    idle_rss_kib = daemon.status_kib("VmRSS")
    live, statuses, started = set(), {}, []
    t0 = time.monotonic()
    try:
        for offset in schedule:
            delay = t0 + offset - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            pid = spawn_crasher(args.crasher, mib)
            live.add(pid)
            started.append(pid)
            reap(live, statuses, block=False)
        spawn_s = time.monotonic() - t0
        wait_deadline = time.monotonic() + 300
        while live and time.monotonic() < wait_deadline:
            reap(live, statuses, block=False)
            time.sleep(0.01)
        for pid in list(live):
            os.kill(pid, 9)
        reap(live, statuses, block=True)
        exited_s = time.monotonic() - t0
        rows = []
        settle_deadline = time.monotonic() + 300
        while time.monotonic() < settle_deadline:
            got = daemon.records()
            if got is not None:
                rows = got
                if len(rows) >= len(started) and all(r[1] != "in_progress" for r in rows):
                    break
            time.sleep(0.1)
        settled_s = time.monotonic() - t0
        peak_rss_kib = daemon.status_kib("VmHWM")
    finally:
        pattern.restore()
        daemon.stop()
    with open(daemon.log_path, errors="replace") as f:
        log_lines = f.read().splitlines()
    ours = {r[0]: r for r in rows}
    states, reasons = {}, {}
    with_core = 0
    for pid in started:
        r = ours.get(pid)
        state = r[1] if r else "no record"
        states[state] = states.get(state, 0) + 1
        if r and r[1] == "complete" and r[3] > 0:
            with_core += 1
        elif r and r[2]:
            key = r[2].split("(")[0].strip()[:80]
            reasons[key] = reasons.get(key, 0) + 1
    steps = [r[4].get("handshake_steps_us", {}) for r in rows]
    waited = [s["budget_admitted"] - s["budget_wait"] for s in steps if "budget_admitted" in s and "budget_wait" in s]
    handshake = [r[4].get("handshake_us") for r in rows if r[4].get("handshake_us") is not None]
    budget = config.get("dump_memory_budget", 256 * MIB)
    result = {
        "scenario": name,
        "crashes": len(started),
        "mib": mib,
        "spawn_s": round(spawn_s, 2),
        "rate_reached_per_s": round(len(started) / spawn_s, 1) if spawn_s > 0 else None,
        "wcoredump": sum(1 for st in statuses.values() if os.WCOREDUMP(st)),
        "records": sum(1 for p in started if p in ours),
        "with_core": with_core,
        "states": states,
        "reasons": reasons,
        "exited_s": round(exited_s, 2),
        "settled_s": round(settled_s, 2),
        "idle_rss_mib": round(idle_rss_kib / 1024, 1) if idle_rss_kib else None,
        "peak_rss_mib": round(peak_rss_kib / 1024, 1) if peak_rss_kib else None,
        "memory_budget_mib": budget // MIB,
        "log_lines": len(log_lines),
        "log_lines_suppressed_summaries": sum(1 for line in log_lines if "suppressed" in line and "flood" in line),
        "waited_for_room": len(waited),
        "wait_us_p50": percentile(waited, 0.5),
        "wait_us_p99": percentile(waited, 0.99),
        "handshake_us_p50": percentile(handshake, 0.5),
        "handshake_us_p99": percentile(handshake, 0.99),
        "workdir": workdir,
    }
    return result


def report(results, notes):
    out = ["## Crash storms (run_bench.py --storm)", ""]
    out.append("| scenario | crashes | rate reached /s | WCOREDUMP | records | with core | other states | "
               "peak RSS MiB (idle) | memory budget MiB | log lines (summaries) | waited for room | wait p50/p99 ms | "
               "handshake p50/p99 ms | all exited s | store settled s |")
    out.append("|" + "---|" * 15)
    for r in results:
        others = ", ".join(f"{k} {v}" for k, v in r["states"].items() if k != "complete") or "none"
        ms = lambda us: "-" if us is None else f"{us / 1000:.0f}"
        out.append(f"| {r['scenario']} ({r['mib']} MiB) | {r['crashes']} | {r['rate_reached_per_s']} | {r['wcoredump']} | "
                   f"{r['records']} | {r['with_core']} | {others} | {r['peak_rss_mib']} ({r['idle_rss_mib']}) | "
                   f"{r['memory_budget_mib']} | {r['log_lines']} ({r['log_lines_suppressed_summaries']}) | "
                   f"{r['waited_for_room']} | {ms(r['wait_us_p50'])}/{ms(r['wait_us_p99'])} | "
                   f"{ms(r['handshake_us_p50'])}/{ms(r['handshake_us_p99'])} | {r['exited_s']} | {r['settled_s']} |")
    for r in results:
        if r["reasons"]:
            out.append(f"- {r['scenario']}: reasons of records without a core: {r['reasons']}")
    out += [f"- {n}" for n in notes]
    return "\n".join(out)


def main(args, core_pattern_cls):
    """Runs the burst and rate scenarios; prints a Markdown report. Returns the exit status."""
    resource.setrlimit(resource.RLIMIT_CORE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    args.workdir = args.workdir or tempfile.mkdtemp(prefix="coredumpd-storm-", dir="/var/tmp")
    os.makedirs(args.workdir, exist_ok=True)
    config = json.loads(args.storm_config) if args.storm_config else {}
    results = []
    with core_pattern_cls() as pattern:
        if args.storm_burst > 0:
            results.append(run_scenario(args, pattern, "burst", [0.0] * args.storm_burst, args.storm_burst_mib,
                                        config))
        if args.storm_rate > 0 and args.storm_seconds > 0:
            n = int(args.storm_rate * args.storm_seconds)
            results.append(run_scenario(args, pattern, "rate", [i / args.storm_rate for i in range(n)],
                                        args.storm_rate_mib, config))
    load = os.getloadavg()[0]
    notes = [f"{os.cpu_count()} CPUs; 1-min load average {load:.1f} after the run (other processes share the machine)",
             f"configuration: {config or 'defaults'}"]
    print(report(results, notes))
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump({"storm": results, "notes": notes}, f, indent=1)
    return 0
