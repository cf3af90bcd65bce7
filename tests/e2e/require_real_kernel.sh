#!/usr/bin/env bash
# COREDUMPD_REQUIRE_REAL_KERNEL=1 turns "no real kernel here" skips into failures that give the reason.
# Runs a real-kernel gtest and the sandboxed-crash shell test where they really cannot run: as nobody
# (setpriv) when we are root, as ourselves otherwise (then we are not root already). Without the
# variable each must skip (gtest: exit 0, reported skipped; shell: exit 77); with it each must fail,
# naming the reason ("needs root").
# Usage: require_real_kernel.sh REAL_KERNEL_TEST_BINARY SANDBOXED_CRASH_SCRIPT (environment as ctest's).
set -euo pipefail
gtest=$1 shell_test=$2
out=$(mktemp /tmp/cdd-require.XXXXXX)
trap 'rm -f "$out"' EXIT
fail() { echo "FAIL: $*" >&2; echo "--- its output:" >&2; cat "$out" >&2; exit 1; }

unprivileged=()
if ((EUID == 0)); then
  unprivileged=(setpriv --reuid=65534 --regid=65534 --clear-groups)
  # nobody must be able to reach the binaries through the build tree.
  "${unprivileged[@]}" test -x "$gtest" || { echo "SKIP: $gtest is not executable by nobody"; exit 77; }
fi

# run WANT_RC REQUIRE(0|1) COMMAND...: runs COMMAND unprivileged, output in $out; checks its exit status.
run() {
  local want=$1 require=$2 rc=0; shift 2
  env -u COREDUMPD_REQUIRE_REAL_KERNEL ${require:+COREDUMPD_REQUIRE_REAL_KERNEL=$require} \
    "${unprivileged[@]}" "$@" >"$out" 2>&1 </dev/null || rc=$?
  [[ $want == nonzero ]] && ((rc != 0)) && return 0
  [[ $rc == "$want" ]] || fail "$* (COREDUMPD_REQUIRE_REAL_KERNEL=${require:-unset}) exited $rc, expected $want"
}

filter=--gtest_filter=RealKernel.SegfaultIsStoredWithMetadataAndExactCore
run 0 "" "$gtest" "$filter"
grep -q '\[  SKIPPED \] 1 test' "$out" || fail "the real-kernel gtest did not report itself skipped"
grep -q 'needs root' "$out" || fail "the skip does not say why"
echo "ok: without COREDUMPD_REQUIRE_REAL_KERNEL the real-kernel gtest skips, saying why"

run nonzero 1 "$gtest" "$filter"
grep -q '\[  FAILED  \] 1 test' "$out" || fail "the real-kernel gtest did not report a failure"
grep -q 'COREDUMPD_REQUIRE_REAL_KERNEL=1, but the real-kernel tests cannot run: needs root' "$out" ||
  fail "the failure does not name the reason"
echo "ok: with COREDUMPD_REQUIRE_REAL_KERNEL=1 it fails: $(grep -m1 'cannot run' "$out")"

run 77 "" bash "$shell_test"
grep -q 'SKIP: needs root' "$out" || fail "the shell test's skip does not say why"
echo "ok: without the variable the sandboxed-crash shell test skips (77), saying why"
run 1 1 bash "$shell_test"
grep -q 'FAIL: COREDUMPD_REQUIRE_REAL_KERNEL=1, but the real-kernel tests cannot run: needs root' "$out" ||
  fail "the shell test's failure does not name the reason"
echo "ok: with COREDUMPD_REQUIRE_REAL_KERNEL=1 it fails, naming the reason"
