#!/usr/bin/env python3
"""Crash analysis end to end (issue 22): how long after a core is stored its analysis lands in the
index, with coredumpd and the real kernel.

Scenarios (each on a fresh coredumpd and store, analysis on, one crash at a time):
  - "<fill> <N> MiB": bench-crasher touching N MiB (default 512) of `fill` memory (random: stored
    raw, "none"; half-zero: stored zstd, so the analyzer decompresses it first);
  - "<T> threads": bench-crasher with T-1 idle threads besides the faulting main thread (default
    256), with analysis.max_threads T, so every thread is unwound.

Per crash, from the index polled every POLL_S: stored (the row is complete) -> analysis landed
(the `analysis` column is set), and the report's own elapsed_us (the analyzer's wall time) and
maxrss_kib (its peak RSS); "queue+spawn" = landed - elapsed: the queue wait, starting the analyzer
and writing the row (plus up to two polling periods). It reports; it never asserts a timing.

  sudo python3 bench/analysis_bench.py --coredumpd build/bench/daemon/coredumpd \\
      --crasher build/bench/bench/bench-crasher --analyzer build/bench/analyzer/coredumpd-analyze

Needs root and Linux 6.17+; reuses run_bench.py's core_pattern lock, server and crasher handling.
"""

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run_bench  # noqa: E402  (beside this file)
from run_bench import POLL_S, Coredumpd, CorePattern, Crasher, Crashers, log, mono_ns, ms  # noqa: E402

ANALYSIS_WAIT_S = 120  # bound on waiting for one analysis (the analyzer's own wall timeout is 30 s)


def analysis_config(path, analyzer, max_threads):
    """Writes the daemon's configuration for a scenario: analysis on, `max_threads` shown."""
    section = {"enabled": True, "max_threads": max_threads}
    if analyzer:
        section["analyzer"] = analyzer
    with open(path, "w") as f:
        json.dump({"analysis": section}, f)
    return path


def wait_analysis(server, dump_id, timeout_s):
    """Polls the index until dump `dump_id` has its analysis. Returns (mono ns when seen, report
    dict, signature) or (None, None, None) after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        row = server._connect().execute("SELECT analysis, signature FROM dumps WHERE id = ?", (dump_id,)).fetchone()
        if row is not None and row["analysis"] is not None:
            seen = mono_ns()
            text = row["analysis"].decode() if isinstance(row["analysis"], bytes) else row["analysis"]
            return seen, json.loads(text), row["signature"]
        time.sleep(POLL_S)
    return None, None, None


def one_crash(server, argv, pretouch_mib, pattern, stderr):
    """Crashes `argv` into `server` after warming `pretouch_mib` MiB of memory (as run_bench.py does)
    and returns the measurement (a dict; "error" says what failed)."""
    run_bench.pretouch(sys.executable, pretouch_mib, timeout=120)
    pattern.set(server)
    load = run_bench.loadavg1()
    crasher = Crasher(argv, stderr)
    facts, missing = run_bench.wait_crashers([crasher], server, (120, 120, 120))
    m = {"crash": crasher.result(), "loadavg1_before": load}
    f = facts.get(crasher.pid)
    if f is None:
        m["error"] = "no final record" + (f" ({crasher.error})" if crasher.error else "")
        return m
    m.update(state=f["state"], core_bytes=f["core_bytes"], stored_bytes=f["stored_bytes"],
             released_us=f["server"].get("released_us"), stored_us=f["server"].get("stored_us"))
    row = server._connect().execute("SELECT compression FROM dumps WHERE id = ?", (f["server"]["id"],)).fetchone()
    m["compression"] = row["compression"] if row else None
    seen_ns, report, signature = wait_analysis(server, f["server"]["id"], ANALYSIS_WAIT_S)
    if report is None:
        m["error"] = f"no analysis within {ANALYSIS_WAIT_S} s"
        return m
    crashed = next((t for t in report.get("threads", []) if t.get("crashed")), None)
    m.update(landed_ms=ms(seen_ns - f["stored_ns"]), elapsed_ms=report.get("elapsed_us", 0) / 1e3,
             maxrss_kib=report.get("maxrss_kib"), analysis_state=report.get("state"),
             reason=report.get("reason"), threads_shown=len(report.get("threads", [])),
             threads_total=report.get("threads_total"),
             crashed_frames=len(crashed["frames"]) if crashed else None, signature=signature)
    m["queue_spawn_ms"] = m["landed_ms"] - m["elapsed_ms"]
    return m


def run_scenario(name, argv, mib, max_threads, args, pattern, workdir):
    """`args.reps` crashes of `argv` (touching `mib` MiB) on a fresh coredumpd with
    analysis.max_threads `max_threads`."""
    sdir = os.path.join(workdir, name.replace(" ", "-"))
    os.makedirs(sdir)
    config = analysis_config(os.path.join(sdir, "config.json"), args.analyzer, max_threads)
    server = Coredumpd(sdir, args.coredumpd, name="coredumpd", config=config)
    out = []
    with open(os.path.join(sdir, "crashers.log"), "ab") as stderr:
        server.start()
        try:
            for rep in range(args.reps):
                log(f"[{name}] crash {rep + 1}/{args.reps}")
                m = one_crash(server, argv, 2 * mib + run_bench.PRETOUCH_EXTRA_MIB, pattern, stderr)
                m["rep"] = rep
                if "error" in m:
                    log(f"  ! {m['error']}")
                else:
                    log(f"  stored -> analysis {m['landed_ms']:.0f} ms (analyzer {m['elapsed_ms']:.0f} ms, "
                        f"{m['maxrss_kib'] / 1024:.0f} MiB RSS), {m['threads_shown']}/{m['threads_total']} threads, "
                        f"{m['analysis_state']}")
                out.append(m)
        finally:
            code = server.stop()
            Crashers.kill_all()
    return {"name": name, "argv": argv, "max_threads": max_threads, "daemon_exit": code, "measurements": out}


def fmt_ms(values):
    """'median (max)' of a list of milliseconds, or '-'."""
    values = [v for v in values if v is not None]
    if not values:
        return "-"
    return f"{statistics.median(values):.0f} ({max(values):.0f})"


def report(results, env):
    """The markdown table of every scenario."""
    def shown(m):
        return f"{m['threads_shown']}/{m['threads_total']}"

    lines = [f"# coredumpd analysis end to end ({env})", "",
             "Medians over the repetitions, the maximum in parentheses; times in ms.", "",
             "| scenario | stored | stored -> analysis landed | analyzer elapsed | queue+spawn | analyzer maxrss MiB "
             "| threads shown / total | crashing thread frames | state |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        ok = [m for m in r["measurements"] if "error" not in m]
        errors = [m["error"] for m in r["measurements"] if "error" in m]
        rss = [m["maxrss_kib"] / 1024 for m in ok if m.get("maxrss_kib") is not None]
        lines.append(
            f"| {r['name']} | {', '.join(sorted({str(m.get('compression')) for m in ok})) or '-'} "
            f"| {fmt_ms([m['landed_ms'] for m in ok])} | {fmt_ms([m['elapsed_ms'] for m in ok])} "
            f"| {fmt_ms([m['queue_spawn_ms'] for m in ok])} | {fmt_ms(rss)} "
            f"| {', '.join(sorted({shown(m) for m in ok})) or '-'} "
            f"| {', '.join(sorted({str(m['crashed_frames']) for m in ok})) or '-'} "
            f"| {', '.join(sorted({str(m['analysis_state']) for m in ok}))}{'; ' + '; '.join(errors) if errors else ''} |")
    loads = [m["loadavg1_before"] for r in results for m in r["measurements"]]
    lines += ["", f"1-min load average before the crashes: {min(loads):.1f} .. {max(loads):.1f} "
                  f"on {os.cpu_count()} CPUs (the analyzer runs at idle priority: other work delays it)."]
    return "\n".join(lines)


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--coredumpd", required=True, help="path of the coredumpd binary")
    p.add_argument("--crasher", required=True, help="path of bench-crasher (tests/programs/crasher.cc)")
    p.add_argument("--analyzer", help="coredumpd-analyze to run (default: the daemon's, analysis.analyzer \"\")")
    p.add_argument("--reps", type=int, default=3, help="crashes per scenario (default: 3)")
    p.add_argument("--mib", type=int, default=512, help="memory the large crasher touches, MiB (default: 512)")
    p.add_argument("--fills", default="random,half-zero", help="fills of the large core (default: random,half-zero)")
    p.add_argument("--threads", type=int, default=256, help="threads of the threaded crasher (default: 256; 0: skip)")
    p.add_argument("--json-out", help="write every measurement here as JSON")
    p.add_argument("--keep", action="store_true", help="keep the work directory (stores, logs)")
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(argv if argv is not None else sys.argv[1:])
    if os.geteuid() != 0:
        sys.exit("analysis_bench: needs root (writes kernel.core_pattern)")
    run_bench.allow_cores()
    for path in [args.coredumpd, args.crasher] + ([args.analyzer] if args.analyzer else []):
        if not os.access(path, os.X_OK):
            sys.exit(f"analysis_bench: {path} is not an executable")
    args.analyzer = os.path.abspath(args.analyzer) if args.analyzer else None
    scenarios = [(f"{fill} {args.mib} MiB", [args.crasher, "--mode", "segv", "--touch-mib", str(args.mib),
                                             "--fill", fill], args.mib, 64) for fill in args.fills.split(",") if fill]
    if args.threads > 0:
        scenarios.append((f"{args.threads} threads", [args.crasher, "--mode", "segv", "--threads",
                                                      str(args.threads - 1)], 0, args.threads))
    workdir = tempfile.mkdtemp(prefix="coredumpd-analysis-bench-", dir="/var/tmp")
    env = f"{os.uname().release}, {os.cpu_count()} CPUs"
    results = []
    try:
        with CorePattern() as pattern:
            for name, argv, mib, max_threads in scenarios:
                results.append(run_scenario(name, argv, mib, max_threads, args, pattern, workdir))
    finally:
        Crashers.kill_all()
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    print(report(results, env))
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump({"environment": env, "options": vars(args), "scenarios": results}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
