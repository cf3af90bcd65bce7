#!/usr/bin/env python3
"""Uploads to a local radosgw (issue 26): upload throughput in MB/s, measured inside coredumpd.

Starts a single-node Ceph and radosgw (scripts/fleet/ceph-up.sh) in a temporary directory, runs
coredumpd with uploads on (rule "upload": "core", analysis off), crashes bench-crasher touching
MIB MiB of `fill` memory, one crash at a time, and reads the upload's own times from the index
(table uploads): throughput = core_bytes / (done_us - queued_us), i.e. from the row being queued
(after the store) to the core, the record and (none here) the fleet row being confirmed. Also
prints released/stored times of those crashes (as run_bench.py measures them). It reports; it
never asserts a timing.

  sudo python3 bench/upload_bench.py --coredumpd build/bench/daemon/coredumpd \\
      --crasher build/bench/bench/bench-crasher [--mib 256] [--fills random,half-zero] [--reps 3]

For the released/stored A/B with uploads on and off, run run_bench.py with a --variant whose
configuration turns uploads on (--print-config prints one for a running cluster; see
bench/README.md "Uploads").
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run_bench  # noqa: E402
from run_bench import Coredumpd, CorePattern, Crasher, Crashers, log  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPTS = os.path.join(ROOT, "scripts", "fleet")
ACCESS, SECRET = "TESTACCESSKEY0000001", "testsecretkey000000000000000000000000001"


def ceph_env(ceph_dir, port_base):
    return dict(os.environ, CEPH_DIR=ceph_dir, MON_PORT=str(port_base), RGW_PORT=str(port_base + 1),
                OSD_PORT_MIN=str(port_base + 100), S3_ACCESS_KEY=ACCESS, S3_SECRET_KEY=SECRET)


def write_credentials(workdir):
    """The cluster's S3 key in an AWS credentials file (root only, as coredumpd requires); its path."""
    creds = os.path.join(workdir, "s3-credentials")
    with open(creds, "w") as f:
        f.write(f"[default]\naws_access_key_id = {ACCESS}\naws_secret_access_key = {SECRET}\n")
    os.chmod(creds, 0o600)
    return creds


def upload_config(path, endpoint, workdir, concurrency, bandwidth):
    creds = write_credentials(workdir)
    with open(path, "w") as f:
        json.dump({"analysis": {"enabled": False}, "defaults": {"upload": "core"},
                   "upload": {"endpoint": endpoint, "bucket": "bench", "region": "default", "credentials_file": creds,
                              "host_id": "bench", "concurrency": concurrency, "max_bytes_per_second": bandwidth}}, f)
    return path


def wait_upload(server, dump_id, timeout_s=600):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        row = server._connect().execute(
            "SELECT state, core_bytes, queued_us, done_us, last_error FROM uploads WHERE id = ?", (dump_id,)).fetchone()
        if row is not None and row["state"] == "done":
            return dict(row)
        time.sleep(0.05)
    return None


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--coredumpd", required=True)
    p.add_argument("--crasher", required=True)
    p.add_argument("--mib", type=int, default=256)
    p.add_argument("--fills", default="random,half-zero")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--concurrency", type=int, default=2)
    p.add_argument("--bandwidth", default="0", help="upload.max_bytes_per_second (default 0: unbounded)")
    p.add_argument("--port-base", type=int, default=43600)
    p.add_argument("--print-config", action="store_true", help="start the cluster, print an upload config, wait")
    args = p.parse_args()
    if os.geteuid() != 0:
        sys.exit("upload_bench: needs root (writes kernel.core_pattern)")
    run_bench.allow_cores()
    workdir = tempfile.mkdtemp(prefix="coredumpd-upload-bench-", dir="/var/tmp")
    ceph_dir = os.path.join(workdir, "ceph")
    env = ceph_env(ceph_dir, args.port_base)
    endpoint = f"http://127.0.0.1:{args.port_base + 1}"
    results = []
    try:
        subprocess.run([os.path.join(SCRIPTS, "ceph-up.sh")], env=env, check=True, stdout=subprocess.DEVNULL)
        config = upload_config(os.path.join(workdir, "config.json"), endpoint, workdir, args.concurrency, args.bandwidth)
        if args.print_config:
            print(config)
            input("cluster up; press Enter to stop it")
            return 0
        with CorePattern() as pattern:
            for fill in [f for f in args.fills.split(",") if f]:
                sdir = os.path.join(workdir, fill)
                os.makedirs(sdir)
                server = Coredumpd(sdir, args.coredumpd, name="coredumpd", config=config)
                server.start()
                try:
                    with open(os.path.join(sdir, "crashers.log"), "ab") as stderr:
                        for rep in range(args.reps):
                            run_bench.pretouch(sys.executable, 2 * args.mib + run_bench.PRETOUCH_EXTRA_MIB, timeout=120)
                            pattern.set(server)
                            crasher = Crasher([args.crasher, "--mode", "segv", "--touch-mib", str(args.mib), "--fill", fill], stderr)
                            facts, _ = run_bench.wait_crashers([crasher], server, (120, 120, 120))
                            f = facts.get(crasher.pid)
                            if f is None:
                                log(f"[{fill}] no record")
                                continue
                            u = wait_upload(server, f["server"]["id"])
                            if u is None:
                                log(f"[{fill}] upload not done in time")
                                continue
                            secs = (u["done_us"] - u["queued_us"]) / 1e6
                            m = {"fill": fill, "stored_bytes": f["stored_bytes"], "upload_s": secs,
                                 "mb_s": u["core_bytes"] / 1e6 / secs if secs > 0 else None,
                                 "released_us": f["server"].get("released_us"), "stored_us": f["server"].get("stored_us")}
                            log(f"[{fill}] {u['core_bytes'] / 2**20:.0f} MiB stored, uploaded in {secs:.2f} s: {m['mb_s']:.0f} MB/s")
                            results.append(m)
                finally:
                    server.stop()
                    Crashers.kill_all()
    finally:
        subprocess.run([os.path.join(SCRIPTS, "ceph-down.sh")], env=env)
        shutil.rmtree(workdir, ignore_errors=True)
    print(f"| fill | stored MiB | upload s (median) | MB/s (median, min..max) |")
    print("|---|---|---|---|")
    for fill in sorted({m["fill"] for m in results}):
        ms_ = [m for m in results if m["fill"] == fill]
        rates = [m["mb_s"] for m in ms_ if m["mb_s"]]
        print(f"| {fill} | {statistics.median(m['stored_bytes'] for m in ms_) / 2**20:.0f} "
              f"| {statistics.median(m['upload_s'] for m in ms_):.2f} "
              f"| {statistics.median(rates):.0f} ({min(rates):.0f}..{max(rates):.0f}) |")
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
