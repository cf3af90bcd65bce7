#!/bin/bash
# Stops what scripts/fleet/ceph-up.sh started in CEPH_DIR (by the PIDs in its pid files, checked
# to be Ceph's daemons) and removes the directory (KEEP=1 keeps it, with its logs).
CEPH_DIR=${CEPH_DIR:-/tmp/coredumpd-ceph}
shopt -s nullglob
pids=()
for f in "$CEPH_DIR"/run/client.rgw.*.pid "$CEPH_DIR"/run/osd.*.pid "$CEPH_DIR"/run/mon.*.pid; do
  pid=$(cat "$f" 2>/dev/null) || continue
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || continue
  case "$(cat /proc/$pid/comm 2>/dev/null)" in
    radosgw|ceph-osd|ceph-mon) kill -TERM "$pid"; pids+=("$pid");;
  esac
done
for _ in $(seq 30); do  # 3 s, then SIGKILL: radosgw is slow to exit
  alive=0
  for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
  [ $alive = 0 ] && break
  sleep 0.1
done
for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && kill -KILL "$p"; done
for p in "${pids[@]}"; do while kill -0 "$p" 2>/dev/null; do sleep 0.05; done; done
[ "${KEEP:-0}" = 1 ] || rm -rf "$CEPH_DIR"
exit 0
