#!/usr/bin/env python3
"""Handshake cost, A/B, with the fake kernel (no core_pattern, no root needed beyond the daemon's own).

For each NAME=BINARY given, starts that coredumpd (--allow-unverified-peers) on a fresh store,
runs --sequential crashes one after another and then --burst crashes at once (fake-kernel, 64 KiB
cores), and prints from the records' extras: handshake_us (accept -> ack ready) and the /proc
collection (collect_end - collect_start), median / p90 / max in microseconds. With
--stall-in NAME --stall-ms N (at most 5000), that collector stalls (config "testing") in every
handshake; the daemon then runs with --enable-test-hooks where it has that flag (older binaries
took the "testing" section without it).

  python3 bench/handshake_ab.py --fake-kernel build/dev/tests/fake_kernel/fake-kernel \\
      new=build/dev/daemon/coredumpd old=/path/to/old/coredumpd
"""
import argparse, json, os, sqlite3, statistics, subprocess, sys, tempfile, time
from concurrent.futures import ThreadPoolExecutor


def pct(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))] if values else 0


def run_one(fake_kernel, socket):
    # fake-kernel's exit status is its own expectations' (none given here); a lost crash shows as a
    # missing record.
    return subprocess.run([fake_kernel, "--socket", socket, "--core-bytes", str(64 << 10)],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode


def measure(name, binary, args):
    work = tempfile.mkdtemp(prefix="handshake-ab-")
    socket, store, config = f"{work}/s", f"{work}/store", f"{work}/config.json"
    # "test_delay" is the collector of its own that older binaries also have (no collector_delay_in).
    testing = {"collector_delay_ms": args.stall_ms} if args.stall_in else {}
    if args.stall_in and args.stall_in != "test_delay":
        testing["collector_delay_in"] = args.stall_in
    with open(config, "w") as f:
        json.dump({"handshake_timeout_ms": args.timeout_ms, **({"testing": testing} if testing else {})}, f)
    log = open(f"{work}/log", "w")
    hooks = []
    if testing and "--enable-test-hooks" in subprocess.run([binary, "--help"], capture_output=True, text=True).stdout:
        hooks = ["--enable-test-hooks"]  # without it a "testing" section stops the daemon at start
    daemon = subprocess.Popen([binary, "--socket", socket, "--store", store, "--config", config,
                               "--allow-unverified-peers", *hooks], stdout=log, stderr=log)
    try:
        for _ in range(100):
            if os.path.exists(socket):
                break
            time.sleep(0.05)
        for _ in range(args.sequential):
            run_one(args.fake_kernel, socket)
        with ThreadPoolExecutor(args.burst) as pool:
            list(pool.map(lambda _: run_one(args.fake_kernel, socket), range(args.burst)))
        time.sleep(1)
    finally:
        daemon.terminate()
        daemon.wait()
    rows = [dict(json.loads(e), _comm=c, _cwd=w) for (e, c, w) in sqlite3.connect(f"{store}/index.sqlite").execute(
        "SELECT extra, comm, cwd FROM dumps ORDER BY id")]
    if len(rows) != args.sequential + args.burst:
        print(f"{name}: {len(rows)} records for {args.sequential + args.burst} crashes (see {work}/log)")
    seq, burst = rows[:args.sequential], rows[args.sequential:]
    for label, part in (("sequential", seq), (f"{args.burst} at once", burst)):
        hs = [r.get("handshake_us", 0) for r in part]
        steps = [r.get("handshake_steps_us", {}) for r in part]
        col = [s["collect_end"] - s["collect_start"] for s in steps if "collect_end" in s]
        wait = [s["collect_start"] - s.get("request", 0) for s in steps if "collect_start" in s]
        # Acked at the deadline before the collection came back (older binaries: collect_errors.collect).
        incomplete = sum(1 for r in part if "metadata_incomplete" in r or "collect" in r.get("collect_errors", {}))
        no_comm = sum(1 for r in part if not r["_comm"])
        no_cwd = sum(1 for r in part if not r["_cwd"])
        print(f"{name:8} {label:12} n={len(part):3}  handshake_us median {statistics.median(hs) if hs else 0:8.0f}"
              f" p90 {pct(hs, 90):8.0f} max {max(hs, default=0):8.0f} | collect_us median "
              f"{statistics.median(col) if col else 0:7.0f} max {max(col, default=0):8.0f} | wait for a "
              f"collector thread max {max(wait, default=0):8.0f} | acked at the deadline {incomplete}, without comm {no_comm}, without cwd {no_cwd}")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--fake-kernel", required=True)
    p.add_argument("--sequential", type=int, default=100)
    p.add_argument("--burst", type=int, default=6)
    p.add_argument("--timeout-ms", type=int, default=2000, help="handshake_timeout_ms")
    p.add_argument("--stall-in", default="", help="collector that stalls (testing.collector_delay_in); "
                   "test_delay: the stall of its own, which older binaries have too")
    p.add_argument("--stall-ms", type=int, default=1000)
    p.add_argument("variants", nargs="+", metavar="NAME=BINARY")
    args = p.parse_args()
    for v in args.variants:
        name, binary = v.split("=", 1)
        measure(name, binary, args)


if __name__ == "__main__":
    sys.exit(main())
