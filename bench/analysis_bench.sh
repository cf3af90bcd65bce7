#!/usr/bin/env bash
# Analysis figures of coredumpd-analyze (issue 22): wall time and peak RSS for a 512 MiB core (raw
# and zstd) and a 256-thread process, from cores gdb writes of tests/programs/analyzer_target at its
# fault. Prints one line per case; not a test (bench/README.md, "Analysis").
#
#   bench/analysis_bench.sh [BUILD_DIR]      (default build/dev; needs gdb and zstd)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$root/build/dev}
analyzer=$build/analyzer/coredumpd-analyze
target=$build/tests/programs/analyzer_target
work=$(mktemp -d "${TMPDIR:-/var/tmp}/coredumpd-analysis-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT

core_of() {  # NAME ARGS...: the core of analyzer_target ARGS at its fault
  local name=$1; shift
  gdb -batch -nx -q -ex run -ex "gcore $work/$name.core" -ex kill --args "$target" "$@" >"$work/$name.log" 2>&1
}
measure() {  # NAME CORE COMPRESSION [CRASHING_TID]
  local tid=${4:-null}
  printf '{"signal":11,"compression":"%s","temp_dir":"%s","crashing_tid":%s,"memory_bytes":1073741824}' \
    "$3" "$work" "$tid" >"$work/req.json"
  "$analyzer" --request "$work/req.json" --core "$2" | python3 -c '
import json, sys
r = json.load(sys.stdin)
t = r["threads"][0] if r["threads"] else {"frames": []}
print("%-22s state=%-11s threads=%d/%d crashing_frames=%d elapsed=%.3f s maxrss=%d MiB" % (
    sys.argv[1], r["state"], len(r["threads"]), r["threads_total"], len(t["frames"]),
    r["elapsed_us"] / 1e6, r["maxrss_kib"] // 1024))' "$1"
}

core_of big touch 512 0
tid=$(grep -oP '^TID \K[0-9]+' "$work/big.log")
zstd -q -T0 "$work/big.core" -o "$work/big.core.zst"
echo "512 MiB process: core $(du -h --apparent-size "$work/big.core" | cut -f1), zstd $(du -h "$work/big.core.zst" | cut -f1)"
measure "512MiB raw" "$work/big.core" none "$tid"
measure "512MiB zstd" "$work/big.core.zst" zstd "$tid"
rm -f "$work/big.core" "$work/big.core.zst"

core_of threads threads 256
tid=$(grep -oP '^TID \K[0-9]+' "$work/threads.log")
measure "256 threads raw" "$work/threads.core" none "$tid"
printf '{"signal":11,"crashing_tid":%s,"max_threads":300}' "$tid" >"$work/req.json"
"$analyzer" --request "$work/req.json" --core "$work/threads.core" | python3 -c '
import json, sys
r = json.load(sys.stdin)
print("%-22s state=%-11s threads=%d/%d elapsed=%.3f s maxrss=%d MiB" % ("256 threads, all", r["state"],
      len(r["threads"]), r["threads_total"], r["elapsed_us"] / 1e6, r["maxrss_kib"] // 1024))'
