#!/bin/sh
# /init of scripts/vm-test.sh's QEMU guest (busybox sh, PID 1 in an initramfs). Mounts what the tests
# need, runs /vm/tests.sh (scripts/vm-test-plan.py) and powers off. Everything the host reads is a
# line on the serial console starting with "@@VM " (the rest is the failing tests' output).
export PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root TMPDIR=/tmp LANG=C.UTF-8
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts /dev/shm /sys/fs/cgroup
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /dev/shm
mount -t tmpfs -o mode=1777 tmpfs /tmp
mount -t tmpfs -o mode=755 tmpfs /run
mkdir -p /run/lock /var/tmp && chmod 1777 /run/lock /var/tmp
mount -t cgroup2 cgroup2 /sys/fs/cgroup
ip link set lo up 2>/dev/null
hostname vm-test
ulimit -c unlimited

echo "@@VM kernel $(uname -r)"
echo "@@VM core_modes $(tr '\n' ' ' </proc/sys/kernel/core_modes 2>/dev/null)"
echo "@@VM booted"

# vm_test NAME TIMEOUT_S WORKDIR SKIP_REGEX [VAR=VALUE...] -- COMMAND...: one ctest test, bounded.
vm_test() {
  name=$1 limit=$2 wd=$3 skipre=$4
  shift 4
  start=$(date +%s)
  (
    while [ "$1" != "--" ]; do export "$1"; shift; done
    shift
    mkdir -p "$wd" && cd "$wd" && exec timeout -s KILL "$limit" "$@"
  ) </dev/null >/tmp/vm-test.out 2>&1
  rc=$?
  took=$(($(date +%s) - start))
  grep '^version-skew:' /tmp/vm-test.out | sed 's/^/@@VM /'
  if grep -qE "$skipre" /tmp/vm-test.out; then
    why=$(grep -A1 ': Skipped$' /tmp/vm-test.out | tail -n1)
    [ -n "$why" ] || why=$(grep -m1 -E "$skipre" /tmp/vm-test.out)
    echo "@@VM result SKIP $took $name: $why"
  elif [ "$rc" = 0 ]; then
    echo "@@VM result PASS $took $name"
  else
    [ "$rc" = 137 ] && rc="137, killed at the ${limit} s timeout"
    echo "---- $name (exit $rc):"
    # Each failure with its context (a daemon's log can be long), then the end.
    grep -A12 -E ': Failure$|^(Failure|Expected|Value of)' /tmp/vm-test.out | head -n 120
    echo "  [...]"
    tail -n 15 /tmp/vm-test.out
    echo "@@VM result FAIL $took $name (exit $rc)"
  fi
}

# vm_warm_up COMMAND...: one test run whose verdict is not counted, to warm QEMU's translation cache.
vm_warm_up() {
  start=$(date +%s)
  (cd /tmp && timeout -s KILL 300 "$@") </dev/null >/dev/null 2>&1
  echo "@@VM warm-up (not counted): exit $?, $(($(date +%s) - start)) s"
}

# vm_skip NAME REASON: a test that cannot run in this guest, and why.
vm_skip() { echo "@@VM result SKIP 0 $1: $2"; }

. /vm/tests.sh
echo "@@VM done"
sync
poweroff -f
