#!/bin/bash
# The fleet index's upsert step (issue 26): bench/fleet_bench.cc R times, each into a fresh
# database of a throw-away PostgreSQL 15 (scripts/fleet/pg-up.sh: fsync and synchronous_commit
# off, as in the tests), then the median of each figure. Needs postgresql-15; root or not.
#
#   bash bench/fleet_bench.sh [--records N] [--runs R] [--build DIR] [--durable]
#
# --durable turns fsync, synchronous_commit and full_page_writes back on (a production server's
# settings): each upsert, its own transaction, then waits for its WAL flush to the disk.
# DIR (default build/release) holds bench/fleet-bench. One line per run, then "median" and the
# medians. The PostgreSQL runs on 127.0.0.1:$PG_PORT (default 45433) and a socket in a temp dir.
set -euo pipefail
records=1000
runs=5
build=build/release
durable=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --records) records=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --durable) durable=1; shift ;;
    *) echo "usage: $0 [--records N] [--runs R] [--build DIR] [--durable]" >&2; exit 2 ;;
  esac
done
here=$(cd "$(dirname "$0")/.." && pwd)
bench="$build/bench/fleet-bench"
[[ -x $bench ]] || { echo "fleet_bench: no $bench (cmake --build $build --target fleet-bench)" >&2; exit 1; }

export PG_DIR
PG_DIR=$(mktemp -d /tmp/fleet-bench-pg.XXXXXX)
export PG_PORT=${PG_PORT:-45433}
trap 'bash "$here/scripts/fleet/pg-down.sh"' EXIT
bash "$here/scripts/fleet/pg-up.sh" >/dev/null
if [[ $(id -u) == 0 ]]; then as=(runuser -u postgres --); else as=(); fi
if [[ $durable == 1 ]]; then
  # All three take effect on a reload (PostgreSQL 15 docs, "Write Ahead Log": context sighup).
  printf 'fsync = on\nsynchronous_commit = on\nfull_page_writes = on\n' >>"$PG_DIR/data/postgresql.conf"
  "${as[@]}" /usr/lib/postgresql/15/bin/pg_ctl -D "$PG_DIR/data" reload >/dev/null
  sleep 1
  "${as[@]}" /usr/lib/postgresql/15/bin/psql -h "$PG_DIR" -p "$PG_PORT" -U postgres -Atc "SHOW fsync" fleet | grep -qx on \
    || { echo "fleet_bench: fsync is not on after the reload" >&2; exit 1; }
fi

out=$(mktemp /tmp/fleet-bench-out.XXXXXX)
trap 'rm -f "$out"; bash "$here/scripts/fleet/pg-down.sh"' EXIT
for ((run = 1; run <= runs; run++)); do
  db=bench$run  # a fresh, empty database each run: the first pass inserts, the second updates
  "${as[@]}" /usr/lib/postgresql/15/bin/createdb -h "$PG_DIR" -p "$PG_PORT" -U postgres "$db"
  "$bench" --conninfo "host=$PG_DIR port=$PG_PORT user=postgres dbname=$db" --records "$records" | tee -a "$out"
done
# The median of each key=value column over the runs.
python3 - "$out" <<'PY'
import statistics, sys
runs = [dict(f.split("=", 1) for f in line.split()) for line in open(sys.argv[1]) if line.strip()]
print("median " + " ".join(f"{k}={statistics.median(float(r[k]) for r in runs):g}" for k in runs[0]))
PY
