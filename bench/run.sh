#!/usr/bin/env bash
# Builds coredumpd, raw-drain-server and the crasher (RelWithDebInfo, build/bench) and runs the
# benchmark. Arguments go to run_bench.py: bash bench/run.sh [--quick] [--reps N] [--json-out F] ...
# Needs root (the benchmark points kernel.core_pattern at the servers under test, and the
# packages it builds with are installed with apt-get when missing).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
build="$root/build/bench"

# Quiet unless something fails: then show the build's output.
quietly() {
  local out
  if ! out="$("$@" 2>&1)"; then
    printf '%s\n' "$out" >&2
    echo "bench/run.sh: build step failed: $*" >&2
    exit 1
  fi
}
# The packages it builds with (idempotent; prints one line when all are present).
bash "$root/scripts/install-deps.sh" >&2
quietly cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCOREDUMPD_TESTS=OFF
quietly ninja -C "$build" coredumpd raw-drain-server bench-crasher

exec python3 "$here/run_bench.py" \
  --coredumpd "$build/daemon/coredumpd" \
  --raw-server "$build/bench/raw-drain-server" \
  --crasher "$build/bench/bench-crasher" \
  "$@"
