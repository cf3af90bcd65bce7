#!/usr/bin/env bash
# The whole test suite, as CI runs it, on a fresh Debian 12 machine as root:
#   1. dependencies, the asan preset (ASan+UBSan, -Werror), every target, then ctest;
#   1b. the same tree's real-kernel tests (label e2e) under Debian's newest kernel (7.3) in a QEMU
#      guest (scripts/vm-test.sh): the version-skew matrix, one binary on 6.18 and 7.3;
#   2. a build against Debian's newest linux-libc-dev (6.17+ <linux/coredump.h>), unpacked privately,
#      and its unit tests (scripts/newer-headers.sh; needs the Debian archive);
#   3. the threaded tests under ThreadSanitizer (scripts/tsan.sh);
#   4. every libFuzzer target for FUZZ_SECONDS (default 20) each, after its regressions (scripts/fuzz.sh);
#   5. scripts/quickstart.sh as a newcomer runs it, and its verdict (scripts/check-quickstart.sh).
# Real-kernel tests need root and Linux 6.17+ (they skip otherwise, saying why; with
# COREDUMPD_REQUIRE_REAL_KERNEL=1, as .ci/run sets, they fail instead) and serialise themselves
# (ctest RESOURCE_LOCK core_pattern, and /run/lock/coredumpd-core_pattern.lock against other
# processes), so -j2 is safe. The summary counts the skipped tests and says why each skipped.
# Usage: scripts/test.sh [extra ctest arguments, e.g. -L systemd or -R notify]
# With ctest arguments, or SKIP_VM=1 / SKIP_NEWER_HEADERS=1 / SKIP_TSAN=1 / SKIP_FUZZ=1 / SKIP_QUICKSTART=1, the
# later stages are left out (quick local runs; SKIP_NEWER_HEADERS=1 also where the Debian archive
# cannot be reached).
set -euo pipefail
cd "$(dirname "$0")/.."

# Each stage's wall time goes into its verdict: CI's limit is 90 minutes for all of them.
stage_start=$SECONDS
# lap NAME: sets $took and says it at once, so a run cut off by the limit still shows where time went.
lap() {
  took=$(printf '%d min %02d s' $(((SECONDS - stage_start) / 60)) $(((SECONDS - stage_start) % 60)))
  stage_start=$SECONDS
  echo "=== test.sh: $1 took $took ($((SECONDS / 60)) min in all so far)"
}

# The release tree (the package, the quickstart) is built with -Werror here too.
export COREDUMPD_WERROR=ON

scripts/install-deps.sh
cmake --preset asan
cmake --build --preset asan
lap "asan build"

# The later stages' builds run beside the ASan tests at the lowest priority: those tests spend much
# of their time waiting (crashes, the daemon, sleeps, the core_pattern lock), and the CPUs would
# idle. Each stage still runs its own build afterwards (a no-op then), so a build failure is
# reported by its stage; the background's log is build/later-stages.log.
prebuild=""
if (($# == 0)); then
  (
    export COREDUMPD_BUILD_ONLY=1 TSAN_SKIP_DEPS=1 FUZZ_SKIP_DEPS=1
    # First the release tree: tests/e2e/nspawn_package_test packages it (and waits for its lock).
    nice -n 19 packaging/build-deb.sh || true
    # The e2e programs in the same release tree, for the VM stage: the binary users install, and
    # several times faster than ASan's under TCG.
    [[ ${SKIP_VM:-0} == 1 ]] || flock build/release.lock nice -n 19 cmake --build build/release --target e2e_tests || true
    [[ ${SKIP_NEWER_HEADERS:-0} == 1 ]] || nice -n 19 scripts/newer-headers.sh || true
    [[ ${SKIP_TSAN:-0} == 1 ]] || nice -n 19 scripts/tsan.sh || true
    [[ ${SKIP_FUZZ:-0} == 1 ]] || nice -n 19 scripts/fuzz.sh || true
  ) >build/later-stages.log 2>&1 &
  prebuild=$!
fi
# UBSan aborts on the first error already (-fno-sanitize-recover); a stack makes it actionable.
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}

log=build/asan/ctest.log
rc=0
ctest --preset asan -j2 --timeout 900 "$@" 2>&1 | tee "$log" || rc=$?  # pipefail: ctest's status

# No stage may build a tree the background job is still building.
[[ -z $prebuild ]] || wait "$prebuild" || true
skips=(scripts/ctest_skips.py "$log" build/asan/Testing/Temporary/LastTest.log)
lap "asan ctest (the later stages built beside it)"
verdicts=("ctest (asan): $( ((rc == 0)) && echo passed || echo "FAILED (exit $rc)"), $("${skips[@]}" --counts); $took")
# Its own stage, with both CPUs: under TCG the guest is slow enough that sharing them with the host
# ctest and the background builds pushed crashes past the daemon's 2 s handshake deadline.
if (($# == 0)) && [[ ${SKIP_VM:-0} != 1 ]]; then
  vrc=0
  VM_TIMEOUT=${VM_TIMEOUT:-1200} flock build/release.lock scripts/vm-test.sh build/release 2>&1 | tee build/vm-test.log || vrc=$?
  lap "e2e tests under Debian's newest kernel (QEMU)"
  verdicts+=("vm ($(sed -n 's/^kernel: //p' build/vm-test.log)): $(tail -n1 build/vm-test.log); $took")
  ((vrc == 0)) || rc=1
fi
if (($# == 0)) && [[ ${SKIP_NEWER_HEADERS:-0} != 1 ]]; then
  nrc=0
  scripts/newer-headers.sh || nrc=$?
  lap "newer kernel headers"
  verdicts+=("newer kernel headers: $( ((nrc == 0)) && echo passed || echo FAILED); $took")
  ((nrc == 0)) || rc=1
fi
if (($# == 0)) && [[ ${SKIP_TSAN:-0} != 1 ]]; then
  trc=0
  TSAN_SKIP_DEPS=1 scripts/tsan.sh || trc=$?
  lap tsan
  verdicts+=("tsan: $( ((trc == 0)) && echo passed || echo FAILED); $took")
  ((trc == 0)) || rc=1
fi
if (($# == 0)) && [[ ${SKIP_FUZZ:-0} != 1 ]]; then
  frc=0
  FUZZ_SKIP_DEPS=1 scripts/fuzz.sh "${FUZZ_SECONDS:-20}" || frc=$?
  lap fuzz
  verdicts+=("fuzz: $( ((frc == 0)) && echo passed || echo FAILED); $took")
  ((frc == 0)) || rc=1
fi
if (($# == 0)) && [[ ${SKIP_QUICKSTART:-0} != 1 ]]; then
  qrc=0
  scripts/check-quickstart.sh || qrc=$?
  lap quickstart
  verdicts+=("quickstart: $( ((qrc == 0)) && echo passed || echo FAILED); $took")
  ((qrc == 0)) || rc=1
fi

# The summaries again at the end, where they cannot scroll away.
echo
sed -n '/tests passed\|tests failed/,$p' "$log"
"${skips[@]}"
printf 'test.sh: %s\n' "${verdicts[@]}"
echo "test.sh: $((SECONDS / 60)) min $((SECONDS % 60)) s in all"
if ((rc != 0)); then echo "test.sh: FAILED"; else echo "test.sh: all stages passed"; fi
exit "$rc"
