#!/usr/bin/env python3
"""1,000 queued records through coredumpd's uploader to a local radosgw and PostgreSQL (issue 26).

What `bench/fleet_bench.sh` does not: the whole way from the daemon's durable queue to the fleet
index, for a backlog, as after uploads were off or the engines were down. Each record goes
queued -> record (its JSON PUT to S3) -> fleet (the upsert) -> done, in the daemon's own
SCHED_IDLE workers, `upload.concurrency` at once.

  1. Starts a single-node Ceph with radosgw and a PostgreSQL 15 on loopback (scripts/fleet/).
  2. Seed store: coredumpd starts once with uploads configured (the store's upload origin is
     set: dumps after it are to be uploaded), then runs with upload.endpoint "" (nothing queued
     or sent) while N real crashes of bench-crasher (BATCH at once, rule "upload": "metadata",
     analysis as configured) are stored. The daemon is stopped.
  3. Each rep: a copy of the seed store, the fleet table emptied, coredumpd started with the
     endpoint and the fleet index; timed from the start until the index holds N rows in state
     "done" (the uploader's own done_us), and PostgreSQL's row count is checked against N.

Prints per rep: seconds to drain, records/s, the spread of queued->done; then medians. It
reports; it never asserts a timing.

  sudo python3 bench/fleet_drain_bench.py --coredumpd build/release/daemon/coredumpd \\
      --crasher build/release/bench/bench-crasher [--records 1000] [--reps 3] [--concurrency 1,2,4]
"""

import argparse
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run_bench  # noqa: E402
from run_bench import Coredumpd, CorePattern, Crasher, Crashers, log  # noqa: E402
from upload_bench import SCRIPTS, ceph_env, write_credentials  # noqa: E402


def write_config(path, workdir, endpoint, conninfo, concurrency, analysis):
    """A coredumpd configuration: rule "upload": "metadata"; endpoint "" pauses the uploader."""
    creds = write_credentials(workdir)
    with open(path, "w") as f:
        json.dump({"analysis": {"enabled": analysis}, "defaults": {"upload": "metadata"},
                   "upload": {"endpoint": endpoint, "bucket": "bench", "region": "default", "credentials_file": creds,
                              "host_id": "bench", "concurrency": concurrency, "fleet_conninfo": conninfo,
                              "max_backoff_s": 1}}, f)
    return path


def index_query(store, sql):
    """One row of `sql` on the store's index, read-only (None before the index exists)."""
    path = os.path.join(store, "index.sqlite")
    if not os.path.exists(path):
        return None
    db = sqlite3.connect("file:" + path + "?mode=ro", uri=True, timeout=5.0)
    try:
        return db.execute(sql).fetchone()
    except sqlite3.OperationalError:  # the table is not there yet
        return None
    finally:
        db.close()


def wait_for(what, pred, timeout_s, every_s=0.05):
    """Polls `pred` until it returns a true value (returned) or `timeout_s` passes (RuntimeError)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(every_s)
    raise RuntimeError(f"timed out after {timeout_s} s waiting for {what}")


def psql(pg_dir, port, sql):
    """One value from the fleet database, through psql on the cluster's unix socket."""
    out = subprocess.run(["psql", "-h", pg_dir, "-p", str(port), "-U", "postgres", "-d", "fleet", "-At", "-c", sql],
                         check=True, capture_output=True, text=True)
    return out.stdout.strip()


def seed(args, workdir, pattern, config_on, config_paused):
    """Stores args.records crashes that are to be uploaded but not queued; returns the store."""
    server = Coredumpd(workdir, args.coredumpd, name="seed", config=config_on)
    server.start()
    wait_for("the upload origin", lambda: index_query(server.store, "SELECT since_us FROM upload_origin"), 30)
    server.stop()
    server.config = config_paused
    server.start()
    pattern.set(server)
    t0 = time.monotonic()
    stored = 0
    try:
        with open(os.path.join(workdir, "crashers.log"), "ab") as stderr:
            while stored < args.records:
                n = min(args.batch, args.records - stored)
                crashers = [Crasher([args.crasher, "--mode", "segv", "--touch-mib", "1"], stderr) for _ in range(n)]
                facts, lost = run_bench.wait_crashers(crashers, server, (30, 60, 120))
                if lost:
                    raise RuntimeError(f"{len(lost)} crash(es) got no final record; see {server.log_path}")
                stored += len(facts)
        # Analysis (if on) ends after the row is final; the uploader would wait for it anyway,
        # but the seed should hold finished records, as a backlog does.
        if not args.no_analysis:
            wait_for("analyses to end", lambda: (index_query(
                server.store, "SELECT count(*) FROM dumps WHERE analysis IS NOT NULL") or [0])[0] >= args.records,
                     1800, 0.5)
        time.sleep(2)
    finally:
        server.stop()
        Crashers.kill_all()
    queued = index_query(server.store, "SELECT count(*) FROM uploads")
    if queued and queued[0]:
        raise RuntimeError(f"the paused daemon queued {queued[0]} upload(s)")
    log(f"seed: {stored} crashes stored in {time.monotonic() - t0:.0f} s")
    return server.store


def drain(args, workdir, rep, seed_store, config_on, pg_dir, pg_port, concurrency):
    """One rep: a copy of the seed store drained to S3 and PostgreSQL; returns the figures."""
    psql(pg_dir, pg_port, "DO $$ BEGIN IF to_regclass('fleet_crashes') IS NOT NULL THEN TRUNCATE fleet_crashes; END IF; END $$")
    server = Coredumpd(workdir, args.coredumpd, name=f"c{concurrency}-rep{rep}", config=config_on)
    shutil.copytree(seed_store, server.store, dirs_exist_ok=True)
    start_us = time.time_ns() // 1000
    server.start()
    try:
        wait_for(f"{args.records} uploads done", lambda: (index_query(
            server.store, "SELECT count(*) FROM uploads WHERE state = 'done'") or [0])[0] >= args.records, 1800, 0.2)
        row = index_query(server.store, "SELECT min(queued_us), max(done_us), count(*) FROM uploads")
        spans = [r[0] for r in sqlite3.connect("file:" + os.path.join(server.store, "index.sqlite") + "?mode=ro",
                                                uri=True).execute("SELECT done_us - queued_us FROM uploads")]
        errors = index_query(server.store, "SELECT count(*) FROM uploads WHERE attempts > 0")[0]
        cpu_s = server.cpu_seconds()
    finally:
        server.stop()
    rows = int(psql(pg_dir, pg_port, "SELECT count(*) FROM fleet_crashes WHERE host_id = 'bench'"))
    secs = (row[1] - start_us) / 1e6
    m = {"rep": rep, "concurrency": concurrency, "records": row[2], "fleet_rows": rows, "drain_s": secs, "per_s": row[2] / secs,
         "first_queued_s": (row[0] - start_us) / 1e6, "retried": errors,
         "queued_to_done_median_s": statistics.median(spans) / 1e6, "queued_to_done_max_s": max(spans) / 1e6, "cpu_s": cpu_s, "load": os.getloadavg()[0]}
    log(f"concurrency {concurrency}, rep {rep}: {m['records']} records done {secs:.2f} s after the start ({m['per_s']:.0f}/s), "
        f"{rows} fleet rows, {errors} retried, daemon CPU {cpu_s:.2f} s, load {m['load']:.1f}")
    if rows != args.records:
        raise RuntimeError(f"PostgreSQL holds {rows} rows, not {args.records}")
    shutil.rmtree(server.dir, ignore_errors=True)
    return m


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--coredumpd", required=True)
    p.add_argument("--crasher", required=True)
    p.add_argument("--records", type=int, default=1000)
    p.add_argument("--batch", type=int, default=8, help="crashes at once while seeding")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--concurrency", default="2", help="upload.concurrency, or a list (1,2,4) run on the same seed")
    p.add_argument("--no-analysis", action="store_true", help="records without stack trace or signature")
    p.add_argument("--port-base", type=int, default=43700)
    p.add_argument("--tmp", default="/var/tmp", help="where the stores and engines live (/dev/shm: no disk flushes)")
    args = p.parse_args()
    if os.geteuid() != 0:
        sys.exit("fleet_drain_bench: needs root (writes kernel.core_pattern)")
    run_bench.allow_cores()
    workdir = tempfile.mkdtemp(prefix="coredumpd-drain-bench-", dir=args.tmp)
    os.chmod(workdir, 0o755)  # PostgreSQL runs as postgres, below it
    ceph = ceph_env(os.path.join(workdir, "ceph"), args.port_base)
    pg_dir, pg_port = os.path.join(workdir, "pg"), args.port_base + 50
    pg = dict(os.environ, PG_DIR=pg_dir, PG_PORT=str(pg_port), PG_DB="fleet")
    results = []
    try:
        subprocess.run([os.path.join(SCRIPTS, "ceph-up.sh")], env=ceph, check=True, stdout=subprocess.DEVNULL)
        subprocess.run([os.path.join(SCRIPTS, "pg-up.sh")], env=pg, check=True, stdout=subprocess.DEVNULL)
        conninfo = f"host={pg_dir} port={pg_port} user=postgres dbname=fleet"
        endpoint = f"http://127.0.0.1:{args.port_base + 1}"
        levels = [int(c) for c in args.concurrency.split(",") if c]
        on = {c: write_config(os.path.join(workdir, f"on-{c}.json"), workdir, endpoint, conninfo, c,
                              not args.no_analysis) for c in levels}
        paused = write_config(os.path.join(workdir, "paused.json"), workdir, "", conninfo, levels[0],
                              not args.no_analysis)
        with CorePattern() as pattern:
            seed_store = seed(args, workdir, pattern, on[levels[0]], paused)
        for rep in range(args.reps):  # interleaved: each level meets the same machine
            for c in levels:
                results.append(drain(args, workdir, rep, seed_store, on[c], pg_dir, pg_port, c))
    finally:
        Crashers.kill_all()
        subprocess.run([os.path.join(SCRIPTS, "pg-down.sh")], env=pg)
        subprocess.run([os.path.join(SCRIPTS, "ceph-down.sh")], env=ceph)
        shutil.rmtree(workdir, ignore_errors=True)
    print(f"{args.records} records, analysis {'off' if args.no_analysis else 'on'}, {args.reps} reps")
    print("| upload.concurrency | drain s (median, min..max) | records/s | queued->done median s | max s | daemon CPU s |")
    print("|---|---|---|---|---|---|")
    for c in sorted({m["concurrency"] for m in results}):
        ms_ = [m for m in results if m["concurrency"] == c]
        med = lambda k: statistics.median(m[k] for m in ms_)  # noqa: E731
        print(f"| {c} | {med('drain_s'):.2f} ({min(m['drain_s'] for m in ms_):.2f}..{max(m['drain_s'] for m in ms_):.2f}) "
              f"| {med('per_s'):.0f} | {med('queued_to_done_median_s'):.2f} | {med('queued_to_done_max_s'):.2f} "
              f"| {med('cpu_s'):.2f} |")
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
