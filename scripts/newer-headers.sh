#!/usr/bin/env bash
# Builds what <linux/coredump.h> reaches against Debian's newest linux-libc-dev instead of the
# host's, and runs the protocol's unit tests in that build: the 6.17+ header declares coredump_req,
# coredump_ack and COREDUMP_* at global scope, and protocol/wire.h checks its values against them.
# The header reaches the code through protocol/wire.h (the protocol, the daemon) and a few tests
# that include it themselves: those are built; dumpctl, the store and the analyzer never see it.
# (Building the whole tree at -O3 took a quarter of CI's 90 minutes.)
#   1. scripts/fetch-kernel-headers.sh: the package, through a private apt configuration, unpacked
#      under /var/cache/coredumpd-headers (the host's apt sources and packages stay untouched);
#   2. build/newer-headers: Release, -Werror, -DCOREDUMPD_KERNEL_HEADERS=<that usr/include>;
#   3. the tests in $tests, run directly.
# Fails if the archive cannot be reached (say so, and how to skip: SKIP_NEWER_HEADERS=1 in
# scripts/test.sh), if the headers were not picked up, or if the build or a unit test fails.
# Environment: NEWER_HEADERS_DIR (the cache, default /var/cache/coredumpd-headers),
# NEWER_HEADERS_JOBS (build parallelism), COREDUMPD_BUILD_ONLY=1 (build, run nothing).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

start=$SECONDS
frc=0
out=$(scripts/fetch-kernel-headers.sh "${NEWER_HEADERS_DIR:-/var/cache/coredumpd-headers}") || frc=$?
if ((frc == 2)); then
  echo "newer-headers: FAILED: the Debian archive cannot be reached, so the build against newer kernel"
  echo "newer-headers: headers cannot run (CI reaches it; offline, set SKIP_NEWER_HEADERS=1 to skip this stage)"
  exit 1
elif ((frc != 0)); then
  echo "newer-headers: FAILED: scripts/fetch-kernel-headers.sh exited $frc"
  exit 1
fi
# The result is the last two lines, whatever else reached stdout.
version=$(tail -n 2 <<<"$out" | sed -n 1p)
include=$(tail -n 1 <<<"$out")
echo "newer-headers: building against $version ($include)"

tree=build/newer-headers
cmake -S . -B "$tree" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCOREDUMPD_WERROR=ON -DCOREDUMPD_TESTS=ON \
  -DCOREDUMPD_KERNEL_HEADERS="$include" >"$tree.configure.log" 2>&1 ||
  { cat "$tree.configure.log"; echo "newer-headers: FAILED: cmake configure"; exit 1; }
grep -E 'uapi|coredump\.h' "$tree.configure.log" || true
# A build that silently fell back to the host's headers would prove nothing.
grep -q '^COREDUMPD_HAVE_UAPI_COREDUMP_H:INTERNAL=1$' "$tree/CMakeCache.txt" ||
  { echo "newer-headers: FAILED: <linux/coredump.h> not found in $include"; exit 1; }

# Run: the wire format's tests and the fake kernel's rules. Built: the daemon (its handshake,
# policy and forwarding include protocol/wire.h, so they all see the header's global names) and
# the tests that include <linux/coredump.h> themselves.
tests=(tests/unit/protocol_test tests/fake_kernel/kernel_rules_test)
objects=(tests/unit/CMakeFiles/relay_test.dir/relay_test.cc.o
  tests/e2e/CMakeFiles/promises_e2e_test.dir/promises_e2e_test.cc.o)
cmake --build "$tree" ${NEWER_HEADERS_JOBS:+-j "$NEWER_HEADERS_JOBS"} --target coredumpd "${tests[@]##*/}" "${objects[@]}" ||
  { echo "newer-headers: FAILED: build"; exit 1; }
[[ ${COREDUMPD_BUILD_ONLY:-0} != 1 ]] || exit 0  # scripts/test.sh builds this beside the ASan tests
: >"$tree.tests.log"
for t in "${tests[@]}"; do
  "$tree/$t" --gtest_brief=1 >>"$tree.tests.log" 2>&1 ||
    { tail -n 40 "$tree.tests.log"; echo "newer-headers: FAILED: $t ($tree.tests.log)"; exit 1; }
done
grep -c '^\[  PASSED  \]' "$tree.tests.log" | xargs printf 'newer-headers: %s test programs passed\n'
echo "newer-headers: passed against $version in $((SECONDS - start)) s"
