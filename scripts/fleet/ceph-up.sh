#!/bin/bash
# A throw-away single-node Ceph 16 (one monitor, one memstore OSD, no mgr) and radosgw (S3) on
# 127.0.0.1, as plain processes in a temporary directory: for the upload tests and
# scripts/fleet-demo.sh. Debian 12 packages: ceph-mon ceph-osd radosgw ceph-common.
#
#   CEPH_DIR=DIR MON_PORT=P RGW_PORT=P OSD_PORT_MIN=P scripts/fleet/ceph-up.sh
#
#   CEPH_DIR      work directory, must not hold a running cluster (default /tmp/coredumpd-ceph)
#   MON_PORT      the monitor's msgr2 port (default 40300)
#   RGW_PORT      the S3 port (default 40080)
#   OSD_PORT_MIN  first of 100 ports for the OSD's and radosgw's messengers (default 40400)
#   S3_ACCESS_KEY, S3_SECRET_KEY  the S3 user's keys (test defaults)
# Writes $CEPH_DIR/s3.env (S3_ENDPOINT, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, CEPH_CONF) and
# prints it. About 1.5 s from nothing to a working S3 user; ~500 MiB of memory. Stop it with
# scripts/fleet/ceph-down.sh (same CEPH_DIR), from a trap. The monitor and the OSD run as long as
# the cluster; radosgw alone can be stopped and started again (RGW_ONLY=stop|start) for fault tests.
set -euo pipefail

CEPH_DIR=${CEPH_DIR:-/tmp/coredumpd-ceph}
MON_PORT=${MON_PORT:-40300}
RGW_PORT=${RGW_PORT:-40080}
OSD_PORT_MIN=${OSD_PORT_MIN:-40400}
S3_ACCESS_KEY=${S3_ACCESS_KEY:-TESTACCESSKEY0000001}
S3_SECRET_KEY=${S3_SECRET_KEY:-testsecretkey000000000000000000000000001}
export CEPH_CONF=$CEPH_DIR/ceph.conf  # there is no /etc/ceph/ceph.conf: every tool reads this

wait_http() {  # the S3 endpoint, not `ceph health` (warnings never block S3)
  timeout 60 bash -c "until curl -s -o /dev/null http://127.0.0.1:$RGW_PORT/; do sleep 0.1; done" ||
    { echo "ceph-up: radosgw does not answer on 127.0.0.1:$RGW_PORT (log: $CEPH_DIR/log)" >&2; exit 1; }
}

case "${RGW_ONLY:-}" in
  stop)
    pid=$(cat "$CEPH_DIR/run/client.rgw.a.pid" 2>/dev/null || true)
    if [ -n "$pid" ] && [ "$(cat /proc/$pid/comm 2>/dev/null)" = radosgw ]; then
      kill -TERM "$pid"
      for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -KILL "$pid" 2>/dev/null || true
      while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
    fi
    exit 0;;
  start) radosgw -n client.rgw.a; wait_http; exit 0;;
  "") ;;
  *) echo "ceph-up: RGW_ONLY is stop or start" >&2; exit 2;;
esac

for tool in ceph-mon ceph-osd radosgw ceph monmaptool radosgw-admin; do
  command -v "$tool" >/dev/null || { echo "ceph-up: $tool missing (apt-get install ceph-mon ceph-osd radosgw ceph-common)" >&2; exit 3; }
done
[ -e "$CEPH_DIR/run" ] && { echo "ceph-up: $CEPH_DIR holds a cluster; run ceph-down.sh first" >&2; exit 1; }
mkdir -p "$CEPH_DIR"/{run,log,mon,osd,rgw,crash}
FSID=$(cat /proc/sys/kernel/random/uuid)

# Pitfalls (measured, see bench/README.md "Uploads"): with auth none radosgw waits 300 s for a
# "secure" monitor session unless its mode is crc; each pool change waits a paxos interval (1 s)
# and radosgw makes 7 pools; 32 PGs per pool would put 7 pools near the per-OSD limit.
cat > "$CEPH_CONF" <<CONF
[global]
fsid = $FSID
mon host = [v2:127.0.0.1:$MON_PORT]
public network = 127.0.0.0/8
auth cluster required = none
auth service required = none
auth client required = none
run dir = $CEPH_DIR/run
admin socket = $CEPH_DIR/run/\$name.asok
pid file = $CEPH_DIR/run/\$name.pid
log file = $CEPH_DIR/log/\$name.log
crash dir = $CEPH_DIR/crash
log to stderr = false
err to stderr = false
ms bind ipv4 = true
ms bind ipv6 = false
ms bind port min = $OSD_PORT_MIN
ms bind port max = $((OSD_PORT_MIN + 99))
client mount timeout = 30
osd pool default size = 1
osd pool default min size = 1
osd crush chooseleaf type = 0
osd pool default pg num = 8
osd pool default pgp num = 8
osd pool default pg autoscale mode = off
mon allow pool size one = true
mon warn on pool no redundancy = false
mon max pg per osd = 1000
mon data avail warn = 2
mon data avail crit = 1
[mon]
paxos propose interval = 0.05
paxos min wait = 0.01
mon data = $CEPH_DIR/mon/\$cluster-\$id
mon initial members = a
[osd]
osd data = $CEPH_DIR/osd/\$cluster-\$id
osd objectstore = memstore
memstore device bytes = 2147483648
osd max object name len = 460
osd max object namespace len = 64
[client.rgw.a]
rgw frontends = beast endpoint=127.0.0.1:$RGW_PORT
rgw data = $CEPH_DIR/rgw
rgw thread pool size = 64
ms mon client mode = crc
CONF

monmaptool --create --fsid "$FSID" --addv a "[v2:127.0.0.1:$MON_PORT]" "$CEPH_DIR/monmap" >/dev/null
ceph-mon --mkfs -i a --monmap "$CEPH_DIR/monmap"
ceph-mon -i a
timeout 60 bash -c 'until ceph -s >/dev/null 2>&1; do sleep 0.1; done'
OSD_UUID=$(cat /proc/sys/kernel/random/uuid)
OSD_ID=$(ceph osd new "$OSD_UUID")
mkdir -p "$CEPH_DIR/osd/ceph-$OSD_ID"
ceph-osd -i "$OSD_ID" --mkfs --osd-uuid "$OSD_UUID" >"$CEPH_DIR/log/osd-mkfs.log" 2>&1 ||
  { cat "$CEPH_DIR/log/osd-mkfs.log" >&2; exit 1; }
ceph-osd -i "$OSD_ID"
timeout 120 bash -c "until ceph osd dump 2>/dev/null | grep -q '^osd.$OSD_ID up'; do sleep 0.1; done"
radosgw -n client.rgw.a
wait_http
radosgw-admin user create --uid=coredumpd-test --display-name="coredumpd tests" \
  --access-key="$S3_ACCESS_KEY" --secret-key="$S3_SECRET_KEY" >/dev/null

cat > "$CEPH_DIR/s3.env" <<ENV
export CEPH_CONF=$CEPH_CONF
export S3_ENDPOINT=http://127.0.0.1:$RGW_PORT
export AWS_ACCESS_KEY_ID=$S3_ACCESS_KEY
export AWS_SECRET_ACCESS_KEY=$S3_SECRET_KEY
ENV
cat "$CEPH_DIR/s3.env"
