#!/usr/bin/env bash
# Builds the `tsan` preset (g++ -fsanitize=thread, build/tsan) and runs the threaded tests under it:
#   build/tsan/tests/fake_kernel/fake_kernel_test
#   build/tsan/tests/integration/fake_kernel_daemon_test   (starts build/tsan/daemon/coredumpd; root)
#   build/tsan/tests/integration/reload_test               (SIGHUP while a dump is in flight)
#   build/tsan/tests/integration/forward_test              (a host coredumpd relaying to a receiver; root)
#   build/tsan/tests/integration/storm_test                (crashes waiting for the dump budget; root)
#   build/tsan/tests/unit/spool_test, core_writer_test     (drain/compressor and compressor/writer threads)
#   build/tsan/tests/unit/index_test, dump_budget_test     (the index's group commit; the budget's waiters)
#   build/tsan/tests/e2e/upload_e2e_test                   (the uploader's workers beside the dump path; root,
#                                                            a real radosgw and PostgreSQL, real crashes)
#   build/tsan/tests/integration/uploader_test             (the workers' back-off on a full store, a dump
#                                                            deleted mid-upload; root for the tmpfs)
#
#   scripts/tsan.sh [GTEST_FILTER]
#
# Every TSan-instrumented process (the tests, the daemons and fake kernels they start) writes its
# reports to <work dir>/tsan.<pid> (TSAN_OPTIONS log_path), so a race inside a daemon fails the run
# even when the test itself passes. Exits non-zero if a test fails or any TSan report was written;
# the reports are printed and kept in the work directory.
#
# Environment: TSAN_SKIP_DEPS=1 (do not run scripts/install-deps.sh), TSAN_JOBS (build parallelism),
# COREDUMPD_BUILD_ONLY=1 (build, run nothing).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
filter=${1:-*}
cd "$root"

if [[ ${TSAN_SKIP_DEPS:-0} != 1 ]]; then
  scripts/install-deps.sh
fi
cmake --preset tsan >/dev/null
cmake --build --preset tsan --target fake_kernel_test fake_kernel_daemon_test reload_test forward_test storm_test spool_test arena_pool_test core_writer_test \
  index_test dump_budget_test journal_queue_test upload_e2e_test uploader_test ${TSAN_JOBS:+-j "$TSAN_JOBS"}
[[ ${COREDUMPD_BUILD_ONLY:-0} != 1 ]] || exit 0  # scripts/test.sh builds this beside the ASan tests

work=$(mktemp -d "${TMPDIR:-/tmp}/coredumpd-tsan.XXXXXX")
# second_deadlock_stack: both stacks of a lock-order inversion; halt_on_error=0: keep going, report all.
export TSAN_OPTIONS="log_path=$work/tsan second_deadlock_stack=1 halt_on_error=0 ${TSAN_OPTIONS:-}"

failed=0
for t in tests/fake_kernel/fake_kernel_test tests/integration/fake_kernel_daemon_test tests/integration/reload_test \
         tests/integration/forward_test tests/integration/storm_test tests/unit/spool_test tests/unit/arena_pool_test \
         tests/unit/core_writer_test tests/unit/index_test tests/unit/dump_budget_test tests/unit/journal_queue_test \
         tests/e2e/upload_e2e_test tests/integration/uploader_test; do
  name=$(basename "$t")
  echo "=== $name"
  if build/tsan/"$t" --gtest_filter="$filter" --gtest_brief=1 >"$work/$name.log" 2>&1; then
    echo "$name: passed"
  else
    echo "$name: FAILED (log $work/$name.log)"
    grep -E '^\[  FAILED  \]|Failure' "$work/$name.log" | head -40 || true
    failed=1
  fi
  grep -E '^\[  PASSED  \]|^\[  FAILED  \]|tests? ran' "$work/$name.log" | tail -3 || true
done

reports=$(find "$work" -maxdepth 1 -name 'tsan.*' -type f | sort)
if [[ -n $reports ]]; then
  echo
  echo "=== ThreadSanitizer reports ($(echo "$reports" | wc -l) processes)"
  for r in $reports; do
    pid=${r##*.}
    exe=$(grep -m1 -oE '\((coredumpd|dumpctl|fake-kernel|[A-Za-z_]+_test)\+0x' "$r" | sed -E 's/^\((.*)\+0x$/\1/' || true)
    echo "--- $r (pid $pid${exe:+, $exe})"
    grep -E '^WARNING: ThreadSanitizer|^SUMMARY: ThreadSanitizer' "$r" | sort | uniq -c
  done
  echo
  echo "first report:"
  sed -n '1,80p' "$(echo "$reports" | head -1)"
  failed=1
fi

if ((failed)); then
  echo "tsan.sh: FAILED; logs and reports in $work"
  exit 1
fi
rm -rf "$work"
echo "tsan.sh: all passed, no ThreadSanitizer reports"
