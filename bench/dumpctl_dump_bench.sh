#!/bin/bash
# `dumpctl dump -o` on a large, mostly-zero core: wall time, throughput and the disk the output
# takes, for one or more dumpctl binaries (e.g. before and after a change) on the same stored core.
#
#   bash bench/dumpctl_dump_bench.sh [--gib N] [--build DIR] DUMPCTL...
#
# Stores one core of N GiB (default 4) through coredumpd (DIR/daemon/coredumpd, default build/dev)
# fed by the fake kernel (DIR/tests/fake_kernel/fake-kernel: a pattern core with one data page per
# 64 Ki pages, i.e. per 256 MiB, the rest zeros), in a store under /var/tmp; then runs each DUMPCTL
# `dump -o` three times into /var/tmp and prints one line per run. No root needed.
set -euo pipefail
gib=4
build=build/dev
while [[ $# -gt 0 ]]; do
  case "$1" in
    --gib) gib=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    *) break ;;
  esac
done
[[ $# -ge 1 ]] || { echo "usage: $0 [--gib N] [--build DIR] DUMPCTL..." >&2; exit 2; }

work=$(mktemp -d /var/tmp/dumpctl-bench.XXXXXX)
daemon_pid=
cleanup() {
  [[ -n $daemon_pid ]] && kill "$daemon_pid" 2>/dev/null && wait "$daemon_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

ulimit -c unlimited  # the peer is this shell: coredumpd honours its RLIMIT_CORE
echo '{}' > "$work/config.json"
"$build/daemon/coredumpd" --socket "$work/s" --store "$work/store" --allow-unverified-peers \
  --config "$work/config.json" > "$work/daemon.log" 2>&1 &
daemon_pid=$!
for _ in $(seq 100); do [[ -S $work/s ]] && break; sleep 0.1; done

bytes=$((gib << 30))
"$build/tests/fake_kernel/fake-kernel" --socket "$work/s" --core-bytes "$bytes" --data-page-stride 65536 \
  --timeout-ms 600000 --expect-outcome dumped > "$work/fk.json"
# The record leaves InProgress once the core is durable.
for _ in $(seq 600); do
  "$1" --store "$work/store" list 2>/dev/null | grep -q present && break
  sleep 0.5
done
id=$("$1" --store "$work/store" list --json | python3 -c 'import json, sys; print(json.load(sys.stdin)[0]["id"])')
stored=$(du -k "$work/store" | tail -1 | cut -f1)
echo "core: $bytes bytes (one 4 KiB data page per 256 MiB); store: ${stored} KiB on disk"

for dumpctl in "$@"; do
  for run in 1 2 3; do
    out="$work/out.core"
    rm -f "$out"
    sync
    start=$(date +%s.%N)
    "$dumpctl" --store "$work/store" dump "$id" -o "$out"
    sync
    end=$(date +%s.%N)
    size=$(stat -c %s "$out")
    alloc=$(( $(stat -c %b "$out") * $(stat -c %B "$out") ))
    awk -v d="$dumpctl" -v r="$run" -v s="$start" -v e="$end" -v n="$size" -v a="$alloc" 'BEGIN {
      t = e - s; printf "%s run %d: %.2f s (incl. sync), %.0f MiB/s, size %.0f, allocated %.0f bytes\n", d, r, t, n / t / 1048576, n, a }'
  done
done
