#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz with clang (build/fuzz) and runs each for SECONDS
# (default 60) on a temporary copy of its seed corpus; the repository is never written to.
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]        e.g. scripts/fuzz.sh 10 fuzz_records
#
# Before fuzzing, each target replays tests/fuzz/regressions/<target>/* (inputs that once crashed).
# Prints one summary line per target (executions from libFuzzer's stat::number_of_executed_units)
# and exits non-zero if any target crashed, leaked, timed out or failed a regression; the crash
# input and the full log then stay in the printed work directory.
#
# Environment: COREDUMPD_BUILD_ONLY=1 (build, run nothing), FUZZ_BUILD_DIR (default build/fuzz), FUZZ_JOBS (build parallelism),
#              FUZZ_SKIP_DEPS=1 (do not run scripts/install-deps.sh), FUZZ_KEEP=1 (keep the work dir).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
seconds=${1:-60}
[[ $seconds =~ ^[0-9]+$ ]] || { echo "usage: $0 [SECONDS] [TARGET...]" >&2; exit 2; }
shift $(($# > 0 ? 1 : 0))
all_targets=(fuzz_request_ack fuzz_records fuzz_core_notes fuzz_config fuzz_proc_text fuzz_crash_report fuzz_analyzer fuzz_query_request fuzz_time_spec fuzz_s3_xml)
if (($#)); then targets=("$@"); else targets=("${all_targets[@]}"); fi
build=${FUZZ_BUILD_DIR:-$root/build/fuzz}
fuzz_src=$root/tests/fuzz

# ---- build ----
if [[ ${FUZZ_SKIP_DEPS:-0} != 1 ]]; then
  "$root/scripts/install-deps.sh"
fi
CC=clang CXX=clang++ cmake -S "$root" -B "$build" -G Ninja -DCOREDUMPD_FUZZ=ON -DCOREDUMPD_TESTS=OFF \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" --target "${targets[@]}" ${FUZZ_JOBS:+-j "$FUZZ_JOBS"}
[[ ${COREDUMPD_BUILD_ONLY:-0} != 1 ]] || exit 0  # scripts/test.sh builds this beside the ASan tests

# ---- run ----
work=$(mktemp -d "${TMPDIR:-/tmp}/coredumpd-fuzz.XXXXXX")
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1:symbolize=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}

failed=0
summary=()
for t in "${targets[@]}"; do
  bin=$build/tests/fuzz/$t
  [[ -x $bin ]] || { echo "fuzz.sh: no such target: $t" >&2; exit 2; }
  dir=$work/$t
  mkdir -p "$dir/corpus" "$dir/artifacts"
  [[ -d $fuzz_src/corpus/$t ]] && cp -r "$fuzz_src/corpus/$t/." "$dir/corpus/"
  seeds=$(find "$dir/corpus" -type f | wc -l)

  opts=(-max_total_time="$seconds" -print_final_stats=1 -timeout=10 -rss_limit_mb=2048
        -artifact_prefix="$dir/artifacts/")
  # Larger inputs let the core scanner reach notes after a few pages of memory.
  [[ $t == fuzz_core_notes ]] && opts+=(-max_len=16384)
  # A real core (the seed, ~180 KiB) with its notes and stack.
  [[ $t == fuzz_analyzer ]] && opts+=(-max_len=262144)
  if [[ -f $fuzz_src/$t.dict ]]; then
    cp "$fuzz_src/$t.dict" "$dir/dict"
    if [[ $t == fuzz_config ]]; then  # key names and values of the key tables, if new since the dictionary
      grep -ohE '"[a-z][a-z0-9_-]*"' "$root"/daemon/policy/config_keys.cc "$root"/daemon/policy/config_policy_keys.cc \
          "$root"/daemon/policy/config_retention.cc 2>/dev/null | tr -d '"' | sort -u |
        while read -r k; do
          grep -qF "\"\\\"$k\\\"\"" "$dir/dict" || printf '"\\"%s\\""\n' "$k" >>"$dir/dict"
        done || true
    fi
    opts+=(-dict="$dir/dict")
  fi

  status=ok
  # Regressions: each input must now pass.
  if [[ -d $fuzz_src/regressions/$t ]] && [[ -n $(ls -A "$fuzz_src/regressions/$t") ]]; then
    if ! "$bin" -artifact_prefix="$dir/artifacts/regression-" "$fuzz_src/regressions/$t"/* >"$dir/regressions.log" 2>&1; then
      status="REGRESSION (log $dir/regressions.log)"
    fi
  fi

  echo "=== $t: fuzzing for ${seconds}s from $seeds seeds"
  rc=0
  "$bin" "${opts[@]}" "$dir/corpus" >"$dir/log" 2>&1 || rc=$?
  execs=$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$dir/log" | grep -oE '[0-9]+$' | tail -1 || true)
  if [[ -z $execs ]]; then  # no final stats (e.g. killed): the last status line's counter
    execs=$(grep -oE '^#[0-9]+' "$dir/log" | tail -1 | tr -d '#' || true)
  fi
  cov=$(grep -oE 'cov: [0-9]+' "$dir/log" | tail -1 | grep -oE '[0-9]+' || true)
  units=$(find "$dir/corpus" -type f | wc -l)
  artifact=$(find "$dir/artifacts" -maxdepth 1 -type f ! -name 'regression-*' | head -1)
  if ((rc != 0)) || [[ -n $artifact ]]; then
    crash="CRASH rc=$rc input=${artifact:-?} log=$dir/log"
    if [[ $status == ok ]]; then status=$crash; else status="$status; $crash"; fi
    echo "--- $t: crash report (full log: $dir/log)"
    grep -E 'ERROR: |SUMMARY: |runtime error|fuzz_config: |deadly signal|Test unit written|^    #[0-9]+ ' "$dir/log" | head -40 || true
    if [[ -n $artifact ]]; then
      echo "input (hex, first 256 bytes):"
      head -c 256 "$artifact" | od -An -tx1 -v | sed 's/^/  /'
    fi
  fi
  [[ $status == ok ]] || failed=1
  summary+=("$(printf '%-18s execs=%-10s cov=%-6s corpus=%s->%s  %s' "$t" "${execs:-?}" "${cov:-?}" "$seeds" "$units" "$status")")
done

echo
echo "=== fuzz summary (${seconds}s per target)"
printf '%s\n' "${summary[@]}"
if ((failed)); then
  echo "fuzz.sh: FAILED; crash inputs and logs kept in $work"
  exit 1
fi
if [[ ${FUZZ_KEEP:-0} == 1 ]]; then
  echo "fuzz.sh: logs and grown corpora in $work"
else
  rm -rf "$work"
fi
echo "fuzz.sh: all targets passed"
