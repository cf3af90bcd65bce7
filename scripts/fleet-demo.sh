#!/usr/bin/env bash
# The fleet, end to end on one machine (issue 26 item 4): a single-node Ceph with radosgw (S3) and
# a PostgreSQL in a temporary directory, three coredumpd "hosts" (their own host id, store, socket
# and configuration) uploading to them, real crashes on each (hosts 1 and 2 crash the same way: one
# signature), then `dumpctl fleet` over the whole, and checks of the bucket's objects and the
# index's rows. Everything is torn down on every exit path; the exit status is 0 only if every
# check passed (77: it cannot run here, and says why).
#
#   scripts/fleet-demo.sh [BUILD_DIR]       (default: build/dev of this checkout; run as root)
#
# Needs: root and Linux 6.17+ (core_pattern "@@"), the packages of scripts/install-deps.sh (ceph-mon
# ceph-osd radosgw ceph-common postgresql), and coredumpd, coredumpd-analyze, dumpctl (with the
# dumpctl-fleet beside it, which `dumpctl fleet` runs) and tests/programs/crasher built in BUILD_DIR. KEEP=1 keeps the temporary directory (logs).
# core_pattern is global: it is changed only under /run/lock/coredumpd-core_pattern.lock, as the
# tests do, and restored on exit.
set -euo pipefail

SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=$(cd "${1:-$SRC/build/dev}" && pwd)
COREDUMPD=$BUILD/daemon/coredumpd
ANALYZER=$BUILD/analyzer/coredumpd-analyze
DUMPCTL=$BUILD/cli/dumpctl
DUMPCTL_FLEET=$BUILD/cli/dumpctl-fleet
CRASHER=$BUILD/tests/programs/crasher
WAIT_S=${WAIT_S:-180}  # the longest any one step may take (an analysis, an upload)

skip() { echo "fleet-demo: SKIP: $*"; [[ ${COREDUMPD_REQUIRE_REAL_KERNEL:-} == 1 ]] && exit 1; exit 77; }
((EUID == 0)) || skip "needs root (writes kernel.core_pattern)"
grep -qw socket /proc/sys/kernel/core_modes 2>/dev/null || skip "the kernel has no core_pattern \"@@\" (Linux 6.17+)"
for p in ceph-mon ceph-osd radosgw radosgw-admin /usr/lib/postgresql/15/bin/initdb psql; do
  command -v "$p" >/dev/null || skip "$p is missing (scripts/install-deps.sh)"
done
for b in "$COREDUMPD" "$ANALYZER" "$DUMPCTL" "$DUMPCTL_FLEET" "$CRASHER"; do [[ -x $b ]] || skip "$b is not built"; done

T=$(mktemp -d /tmp/cdfleet.XXXXXX)
chmod 755 "$T"  # the analyzer runs as nobody
DAEMONS=()
LOCKED=
t0=$SECONDS
say() { printf '\n[%3ds] == %s\n' $((SECONDS - t0)) "$*"; }
FAILS=0
check() {  # check DESCRIPTION COMMAND...: runs COMMAND, counts and reports the outcome
  local what=$1; shift
  if "$@"; then echo "  ok: $what"; else echo "  FAIL: $what" >&2; FAILS=$((FAILS + 1)); fi
}

cleanup() {
  local rc=$?
  set +e
  if [[ -n $LOCKED ]]; then
    printf '%s\n' "$previous_pattern" >/proc/sys/kernel/core_pattern
    rm -f /run/coredumpd-test/core_pattern.state
    exec 9>&-
  fi
  for pid in "${DAEMONS[@]}"; do kill -TERM "$pid" 2>/dev/null; done
  for pid in "${DAEMONS[@]}"; do
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
  done
  CEPH_DIR=$T/ceph "$SRC/scripts/fleet/ceph-down.sh" >/dev/null 2>&1
  PG_DIR=$T/pg "$SRC/scripts/fleet/pg-down.sh" >/dev/null 2>&1
  if ((rc != 0 && rc != 77)); then
    for f in "$T"/h*/daemon.log; do [[ -f $f ]] && { echo "--- $f (last lines)"; tail -n 25 "$f"; }; done
  fi
  if [[ ${KEEP:-0} == 1 ]]; then echo "kept $T"; else rm -rf "$T"; fi
  echo "fleet-demo: $((SECONDS - t0)) s, exit $rc"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

# wait_for SECONDS COMMAND...: polls COMMAND every 0.2 s until it succeeds; false on timeout.
wait_for() {
  local deadline=$((SECONDS + $1)); shift
  until "$@"; do ((SECONDS < deadline)) || return 1; sleep 0.2; done
}
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# ---- the engines -------------------------------------------------------------------------------
say "Ceph (one monitor, one memstore OSD, radosgw on 127.0.0.1) and PostgreSQL 15 in $T"
# Ports apart from the tests' (tests/support/ceph_cluster.cc: 42000-49999).
base=$((50000 + ($$ % 20) * 200))
CEPH_DIR=$T/ceph MON_PORT=$base RGW_PORT=$((base + 1)) OSD_PORT_MIN=$((base + 100)) \
  "$SRC/scripts/fleet/ceph-up.sh" >"$T/ceph-up.log" 2>&1 || { cat "$T/ceph-up.log"; exit 1; }
# shellcheck disable=SC1091
source "$T/ceph/s3.env"  # S3_ENDPOINT, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, CEPH_CONF
PG_DIR=$T/pg PG_PORT=$(free_port) PG_DB=fleet "$SRC/scripts/fleet/pg-up.sh" >"$T/pg-up.log" 2>&1 ||
  { cat "$T/pg-up.log"; exit 1; }
# shellcheck disable=SC1091
source "$T/pg/pg.env"  # PG_CONNINFO
echo "S3 at $S3_ENDPOINT, fleet index at \"$PG_CONNINFO\""
BUCKET=coredumpd-demo

# ---- three hosts -------------------------------------------------------------------------------
say "three coredumpd hosts: demo-host-1, demo-host-2, demo-host-3"
for h in 1 2 3; do
  d=$T/h$h
  mkdir -p "$d/store" "$d/tmp"
  chmod 1777 "$d/tmp"
  # A root-only credentials file, as the daemon wants it.
  install -m 600 /dev/null "$d/credentials"
  printf '[default]\naws_access_key_id = %s\naws_secret_access_key = %s\n' "$AWS_ACCESS_KEY_ID" \
    "$AWS_SECRET_ACCESS_KEY" >"$d/credentials"
  python3 - "$d" "$h" "$ANALYZER" "$S3_ENDPOINT" "$BUCKET" "$PG_CONNINFO" >"$d/coredumpd.json" <<'EOF'
import json, sys
d, h, analyzer, endpoint, bucket, conninfo = sys.argv[1:]
print(json.dumps({
    "socket": f"{d}/coredump.socket", "store": f"{d}/store", "query_socket": "",
    "pending_dir": f"{d}/pending", "fallback_dir": f"{d}/fallback",
    "analysis": {"analyzer": analyzer, "temp_dir": f"{d}/tmp"},
    "journal": {"enabled": False},
    "upload": {"endpoint": endpoint, "bucket": bucket, "region": "default",
               "credentials_file": f"{d}/credentials", "host_id": f"demo-host-{h}",
               "fleet_conninfo": conninfo, "max_backoff_s": 5},
    # the core of a signature only once for the whole fleet
    "defaults": {"upload": "core-if-new-signature"},
}, indent=2))
EOF
  "$COREDUMPD" --config "$d/coredumpd.json" >"$d/daemon.log" 2>&1 9>&- &
  DAEMONS+=($!)
  wait_for 20 test -S "$d/coredump.socket" || { echo "demo-host-$h did not start"; exit 1; }
done

# ---- crashes -----------------------------------------------------------------------------------
exec 9>/run/lock/coredumpd-core_pattern.lock
flock -w 600 9 || { echo "could not lock /run/lock/coredumpd-core_pattern.lock in 10 minutes"; exit 1; }
previous_pattern=$(cat /proc/sys/kernel/core_pattern)
LOCKED=1
ulimit -c unlimited  # coredumpd honours RLIMIT_CORE, as systemd-coredump does

# crash_on HOST MODE: points core_pattern at HOST's daemon, crashes the crasher there and waits
# until the crash is in HOST's store, analysed, and in the fleet index.
crash_on() {
  local h=$1 mode=$2 d=$T/h$1
  mkdir -p /run/coredumpd-test
  printf 'pid %s\nstart %s\nset %s\nprevious %s\n' $$ "$(cut -d' ' -f22 /proc/$$/stat)" \
    "@@$d/coredump.socket" "$previous_pattern" >/run/coredumpd-test/core_pattern.state
  printf '@@%s\n' "$d/coredump.socket" >/proc/sys/kernel/core_pattern
  local rc=0
  (cd "$d/tmp" && exec "$CRASHER" --mode "$mode" 9>&-) 2>/dev/null || rc=$?
  echo "  demo-host-$h: crasher --mode $mode died with status $rc"
  wait_for "$WAIT_S" host_has_analysed "$d" || { echo "  demo-host-$h: no analysed dump in its store"; return 1; }
  wait_for "$WAIT_S" fleet_has "demo-host-$h" || { echo "  demo-host-$h: no final row in the fleet index"; return 1; }
}
host_has_analysed() {
  "$DUMPCTL" --store "$1/store" -q --json=short list 2>/dev/null |
    python3 -c 'import json,sys; d=json.load(sys.stdin); sys.exit(0 if d and d[-1].get("signature") else 1)'
}
psql_q() { psql -X -qAt -v ON_ERROR_STOP=1 "$PG_CONNINFO" -c "$1"; }
fleet_has() { [[ $(psql_q "SELECT count(*) FROM fleet_crashes WHERE host_id = '$1' AND state IN ('uploaded','skipped','metadata')" 2>/dev/null) -ge 1 ]]; }

say "crashes: a segfault on demo-host-1, the same on demo-host-2, an abort on demo-host-3"
crash_on 1 segv || exit 1
crash_on 2 segv || exit 1  # the fleet has this signature's core already: record only
crash_on 3 abort || exit 1
printf '%s\n' "$previous_pattern" >/proc/sys/kernel/core_pattern
rm -f /run/coredumpd-test/core_pattern.state
exec 9>&-
LOCKED=

# ---- what the fleet shows ----------------------------------------------------------------------
say "dumpctl fleet top"
"$DUMPCTL" fleet --database "$PG_CONNINFO" top
sig=$(psql_q "SELECT signature FROM fleet_crashes WHERE host_id = 'demo-host-1'")
say "dumpctl fleet crashes ${sig:0:12}"
"$DUMPCTL" fleet --database "$PG_CONNINFO" crashes "${sig:0:12}"
say "the fleet index (PostgreSQL)"
psql -X "$PG_CONNINFO" -c "SELECT host_id, dump_id, signal, left(signature, 12) AS signature, state, object_key, core_bytes FROM fleet_crashes ORDER BY host_id"
say "the bucket (radosgw-admin bucket list)"
radosgw-admin bucket list --bucket="$BUCKET" >"$T/bucket.json"
python3 -c 'import json,sys; [print("  %-70s %10d" % (o["name"], o["meta"]["size"])) for o in json.load(open(sys.argv[1]))]' "$T/bucket.json"

# ---- checks ------------------------------------------------------------------------------------
say "checks"
rows=$(psql_q "SELECT count(*) FROM fleet_crashes")
check "three rows in the fleet index (got $rows)" test "$rows" = 3
check "three distinct host ids" test "$(psql_q "SELECT count(DISTINCT host_id) FROM fleet_crashes")" = 3
check "hosts 1 and 2 share a signature, host 3 has another" test "$(psql_q "SELECT
  (SELECT signature FROM fleet_crashes WHERE host_id='demo-host-1') = (SELECT signature FROM fleet_crashes WHERE host_id='demo-host-2')
  AND (SELECT signature FROM fleet_crashes WHERE host_id='demo-host-1') <> (SELECT signature FROM fleet_crashes WHERE host_id='demo-host-3')
  AND (SELECT bool_and(signature <> '') FROM fleet_crashes)")" = t
check "demo-host-1's core uploaded, demo-host-2's skipped (its signature has a core), demo-host-3's uploaded" \
  test "$(psql_q "SELECT string_agg(state, ',' ORDER BY host_id) FROM fleet_crashes")" = "uploaded,skipped,uploaded"
top=$("$DUMPCTL" fleet --database "$PG_CONNINFO" top --json=short)
check "fleet top: the shared signature first, 2 crashes on 2 hosts" python3 -c '
import json, sys; t = json.loads(sys.argv[1])
sys.exit(0 if len(t) == 2 and t[0]["signature"] == sys.argv[2] and t[0]["count"] == 2 and t[0]["hosts"] == 2 else 1)' "$top" "$sig"
# Every row's record, and every uploaded core, is an object of the bucket with the row's size.
psql_q "SELECT record_key, object_key, core_bytes FROM fleet_crashes" >"$T/rows.txt"
check "every row's record and core are objects in the bucket, cores of the indexed size" python3 -c '
import json, sys
objects = {o["name"]: o["meta"]["size"] for o in json.load(open(sys.argv[1]))}
ok = True
for line in open(sys.argv[2]):
    record, core, size = line.rstrip("\n").split("|")
    if record not in objects: print("    missing record object", record); ok = False
    if core and objects.get(core) != int(size): print("    core object", core, objects.get(core), "!=", size); ok = False
sys.exit(0 if ok else 1)' "$T/bucket.json" "$T/rows.txt"
check "the bucket holds 2 cores and 3 records, nothing else" test "$(python3 -c '
import json, sys; print(len(json.load(open(sys.argv[1]))))' "$T/bucket.json")" = 5
id1=$(psql_q "SELECT dump_id FROM fleet_crashes WHERE host_id = 'demo-host-1'")
"$DUMPCTL" fleet --config "$T/h1/coredumpd.json" fetch "$id1" -o "$T/fetched.core" 2>&1 | sed 's/^/  /'
"$DUMPCTL" --store "$T/h1/store" dump "$id1" -o "$T/local.core"
check "dumpctl fleet fetch gives the core byte for byte as the host stored it" cmp -s "$T/fetched.core" "$T/local.core"
check "the fetched core is an ELF core gdb can open" bash -c "gdb -batch -ex bt '$CRASHER' '$T/fetched.core' 2>&1 | grep -q '^#0'"

if ((FAILS)); then echo "fleet-demo: $FAILS check(s) failed" >&2; exit 1; fi
echo "fleet-demo: all checks passed"
