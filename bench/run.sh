#!/usr/bin/env bash
# Builds coredumpd, raw-drain-server and the crasher (RelWithDebInfo, build/bench) and runs the
# benchmark. Arguments go to run_bench.py: bash bench/run.sh [--quick] [--reps N] [--json-out F] ...
# (bash bench/run.sh --analysis-e2e [ARGS...] runs bench/analysis_bench.py with ARGS instead.)
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
# The analyzer coredumpd runs on each stored core (analysis.analyzer "": the build tree's), once
# the tree has it (issue 22).
analyzer="$build/analyzer/coredumpd-analyze"
if ninja -C "$build" -t targets all 2>/dev/null | grep -q '^coredumpd-analyze:'; then
  quietly ninja -C "$build" coredumpd-analyze
fi
# --analysis-e2e [ARGS...]: the analysis end-to-end figures (bench/analysis_bench.py) instead.
if [[ "${1:-}" == "--analysis-e2e" ]]; then
  shift
  exec python3 "$here/analysis_bench.py" --coredumpd "$build/daemon/coredumpd" \
    --crasher "$build/bench/bench-crasher" --analyzer "$analyzer" "$@"
fi

# systemd-coredump 252, measured beside coredumpd: Debian's package unpacked into the build
# directory, not installed (its postinst would point core_pattern at it for good). It runs with the
# systemd package's libsystemd-shared. Without network it is left out, and the report says so.
sd_dir="$build/systemd-coredump"
sd_bin="$sd_dir/root/lib/systemd/systemd-coredump"
sd_args=()
if [[ ! -x "$sd_bin" ]]; then
  rm -rf "$sd_dir" && mkdir -p "$sd_dir"
  if (cd "$sd_dir" && apt-get download -q systemd-coredump >/dev/null 2>&1); then
    dpkg-deb -x "$sd_dir"/systemd-coredump_*.deb "$sd_dir/root"
  else
    echo "bench/run.sh: could not download systemd-coredump (apt-get download); not measuring it" >&2
  fi
fi
[[ -x "$sd_bin" ]] && sd_args=(--systemd-coredump "$sd_bin")

exec python3 "$here/run_bench.py" \
  --coredumpd "$build/daemon/coredumpd" \
  --raw-server "$build/bench/raw-drain-server" \
  --crasher "$build/bench/bench-crasher" \
  "${sd_args[@]}" "$@"
