#!/usr/bin/env bash
# The whole test suite, as CI runs it, on a fresh Debian 12 machine as root:
#   1. dependencies, the asan preset (ASan+UBSan, -Werror), every target, then ctest;
#   2. a build against Debian's newest linux-libc-dev (6.17+ <linux/coredump.h>), unpacked privately,
#      and its unit tests (scripts/newer-headers.sh; needs the Debian archive);
#   3. the threaded tests under ThreadSanitizer (scripts/tsan.sh);
#   4. every libFuzzer target for FUZZ_SECONDS (default 60) each, after its regressions (scripts/fuzz.sh);
#   5. scripts/quickstart.sh as a newcomer runs it, and its verdict (scripts/check-quickstart.sh).
# Real-kernel tests need root and Linux 6.17+ (they skip otherwise, saying why; with
# COREDUMPD_REQUIRE_REAL_KERNEL=1, as .ci/run sets, they fail instead) and serialise themselves
# (ctest RESOURCE_LOCK core_pattern, and /run/lock/coredumpd-core_pattern.lock against other
# processes), so -j2 is safe. The summary counts the skipped tests and says why each skipped.
# Usage: scripts/test.sh [extra ctest arguments, e.g. -L systemd or -R notify]
# With ctest arguments, or SKIP_NEWER_HEADERS=1 / SKIP_TSAN=1 / SKIP_FUZZ=1 / SKIP_QUICKSTART=1, the
# later stages are left out (quick local runs; SKIP_NEWER_HEADERS=1 also where the Debian archive
# cannot be reached).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
cmake --preset asan
cmake --build --preset asan
# UBSan aborts on the first error already (-fno-sanitize-recover); a stack makes it actionable.
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}

log=build/asan/ctest.log
rc=0
ctest --preset asan -j2 --timeout 900 "$@" 2>&1 | tee "$log" || rc=$?  # pipefail: ctest's status

skips=(scripts/ctest_skips.py "$log" build/asan/Testing/Temporary/LastTest.log)
verdicts=("ctest (asan): $( ((rc == 0)) && echo passed || echo "FAILED (exit $rc)"), $("${skips[@]}" --counts)")
if (($# == 0)) && [[ ${SKIP_NEWER_HEADERS:-0} != 1 ]]; then
  nrc=0
  scripts/newer-headers.sh || nrc=$?
  verdicts+=("newer kernel headers: $( ((nrc == 0)) && echo passed || echo FAILED)")
  ((nrc == 0)) || rc=1
fi
if (($# == 0)) && [[ ${SKIP_TSAN:-0} != 1 ]]; then
  trc=0
  TSAN_SKIP_DEPS=1 scripts/tsan.sh || trc=$?
  verdicts+=("tsan: $( ((trc == 0)) && echo passed || echo FAILED)")
  ((trc == 0)) || rc=1
fi
if (($# == 0)) && [[ ${SKIP_FUZZ:-0} != 1 ]]; then
  frc=0
  FUZZ_SKIP_DEPS=1 scripts/fuzz.sh "${FUZZ_SECONDS:-60}" || frc=$?
  verdicts+=("fuzz: $( ((frc == 0)) && echo passed || echo FAILED)")
  ((frc == 0)) || rc=1
fi
if (($# == 0)) && [[ ${SKIP_QUICKSTART:-0} != 1 ]]; then
  qrc=0
  scripts/check-quickstart.sh || qrc=$?
  verdicts+=("quickstart: $( ((qrc == 0)) && echo passed || echo FAILED)")
  ((qrc == 0)) || rc=1
fi

# The summaries again at the end, where they cannot scroll away.
echo
sed -n '/tests passed\|tests failed/,$p' "$log"
"${skips[@]}"
printf 'test.sh: %s\n' "${verdicts[@]}"
if ((rc != 0)); then echo "test.sh: FAILED"; else echo "test.sh: all stages passed"; fi
exit "$rc"
