#!/usr/bin/env bash
# The real-kernel end-to-end tests (ctest label e2e) under Debian's newest kernel, in a QEMU guest:
# the version-skew half that the host's own kernel (6.18) cannot give (issue 25).
#   1. scripts/fetch-kernel-image.sh: the newest linux-image-*-cloud-amd64 (7.3.x), cached under
#      /var/cache/coredumpd-vm (the host's apt sources stay untouched);
#   2. an initramfs: busybox-static, scripts/vm-guest-init.sh as /init, the test binaries ctest
#      lists (scripts/vm-test-plan.py), the programs they run (the daemon, dumpctl, crashers: every
#      path into the build tree compiled into them), a few host tools, and every library ldd names
#      plus the loader, all at their host paths;
#   3. QEMU with TCG (this machine's /dev/kvm cannot run the Debian kernel); every wait is bounded
#      and QEMU is killed on any timeout.
# Prints "kernel: <uname -r>", each test's verdict, the "version-skew:" line of the host's kernel
# and the guest's, and ends with "N passed, M failed, K skipped". Exits non-zero on any failure,
# a guest that does not boot, or a timeout.
# Usage: scripts/vm-test.sh [BUILD_TREE]   (default build/asan; scripts/test.sh runs it on build/release,
# the binary users install, whose e2e programs it builds in the background)
# Environment: VM_TIMEOUT (s, from QEMU's start to the guest's end, default 2400), VM_BOOT_TIMEOUT (s, default 120),
# VM_TESTS (a ctest -R regex to run fewer), VM_CACHE (default /var/cache/coredumpd-vm),
# VM_SKIP_HOST_SKEW=1 (do not run the skew test on the host's kernel).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
start=$SECONDS
tree=$(cd "${1:-build/asan}" && pwd)
cache=${VM_CACHE:-/var/cache/coredumpd-vm}
total_timeout=${VM_TIMEOUT:-2400} boot_timeout=${VM_BOOT_TIMEOUT:-120}
fail() { echo "vm-test: FAILED: $*"; exit 1; }
trap 'echo "vm-test: FAILED at line $LINENO: $BASH_COMMAND"' ERR
for tool in qemu-system-x86_64 busybox cpio python3 ctest; do
  command -v "$tool" >/dev/null || fail "$tool is missing (scripts/install-deps.sh installs it)"
done
! ldd "$(command -v busybox)" >/dev/null 2>&1 || fail "busybox is not the static one (busybox-static)"

out=$(scripts/fetch-kernel-image.sh "$cache") || fail "scripts/fetch-kernel-image.sh could not fetch the kernel"
release=$(tail -n2 <<<"$out" | head -n1) vmlinuz=$(tail -n1 <<<"$out")

# --- The root: the tests and what they run, at their host paths ----------------------------------
work=$tree/vm
rm -rf "$work"
root=$work/root
mkdir -p "$root"/{proc,sys,dev,tmp,run,root,etc,vm,usr/bin,usr/sbin,usr/lib,usr/lib64}
for d in bin sbin lib lib64; do ln -s "usr/$d" "$root/$d"; done  # merged /usr, as on the host
# Every e2e test program (a no-op where scripts/test.sh built the whole tree).
cmake --build "$tree" --target e2e_tests >"$work.build.log" 2>&1 || { tail -n 30 "$work.build.log"; fail "building e2e_tests in $tree"; }
ctest --test-dir "$tree" -L e2e ${VM_TESTS:+-R "$VM_TESTS"} --show-only=json-v1 >"$work/ctest.json"
mapfile -t programs < <(python3 scripts/vm-test-plan.py "$root/vm/tests.sh" <"$work/ctest.json")
((${#programs[@]})) || fail "ctest lists no e2e tests in $tree (is it built?)"

declare -A seen=()
files=()
add() { [[ -e $1 && -z ${seen[$1]:-} ]] || return 0; seen[$1]=1; files+=("$1"); }
# The build tree's programs a test binary names (COREDUMPD_BIN, CRASHER_BIN, ...), and theirs.
queue=("${programs[@]}")
while ((${#queue[@]})); do
  p=${queue[0]} queue=("${queue[@]:1}")
  [[ -f $p && -z ${seen[$p]:-} ]] || continue
  add "$p"
  while read -r q; do [[ -f $q && -x $q ]] && queue+=("$q"); done < <(strings -n 8 "$p" | grep -oE "^$tree/[^ \"]+" | sort -u)
done
# Host tools the tests run by absolute path or through the shell (the rest are busybox applets).
for t in /bin/sh /bin/bash /usr/bin/env /bin/mount /bin/umount /usr/bin/unshare /usr/bin/nsenter /usr/bin/setpriv \
  /usr/bin/readelf /usr/bin/gdb /usr/bin/cat /usr/bin/sleep /usr/bin/true /usr/bin/false \
  /usr/bin/addr2line /sbin/mkfs.ext4 /sbin/losetup /etc/mke2fs.conf; do
  add "$t"  # /bin/sh: dash, under both names
done
# Every shared library ldd names, and the loader.
for f in "${files[@]}"; do
  ldd "$f" 2>/dev/null | grep -oE '/[^ ]+' || true  # a static program has none
done | while read -r lib; do echo "$lib"; readlink -f "$lib"; done | sort -u >"$work/libs"
while read -r lib; do add "$lib"; done <"$work/libs"
# Their separate debug files where the host has them (libc6-dbg: the analysis names libc's frames).
for f in "${files[@]}"; do
  id=$(readelf -n "$f" 2>/dev/null | sed -n 's/.*Build ID: \([0-9a-f]\{2\}\)\([0-9a-f]*\).*/\1\/\2/p' | head -n1 || true)
  [[ -z $id ]] || add "/usr/lib/debug/.build-id/$id.debug"
done
# Each file at its real path, and each other name it was found under as a symlink to it (the
# guest's /lib is /usr/lib, as on the host).
for f in "${files[@]}"; do
  real=$(readlink -f "$f")
  [[ -e $root$real ]] || cp -L --parents "$real" "$root"/
  name=$(readlink -f "$(dirname "$f")")/$(basename "$f")
  [[ $name == "$real" || -e $root$name ]] || { mkdir -p "$root$(dirname "$name")"; ln -s "$real" "$root$name"; }
done
# gdb (dumpctl debug) embeds Python, which aborts without its standard library.
py=$({ ldd /usr/bin/gdb 2>/dev/null || true; } | grep -oE 'libpython3\.[0-9]+' | head -n1 | sed 's/^lib//')
for d in ${py:+/usr/lib/$py} /usr/share/gdb; do
  [[ -d $d ]] && tar -C / --exclude=test --exclude=__pycache__ --exclude=site-packages -cf - "${d#/}" | tar -C "$root" -xf -
done
cp "$(command -v busybox)" "$root/usr/bin/busybox"
for applet in $(busybox --list); do
  [[ -e $root/usr/bin/$applet || -e $root/usr/sbin/$applet ]] || ln -s busybox "$root/usr/bin/$applet"
done
install -m 755 scripts/vm-guest-init.sh "$root/init"
printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n' >"$root/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' >"$root/etc/group"
echo vm-test >"$root/etc/hostname"
# Build-tree directories the tests cd into (WORKING_DIRECTORY) exist already through their files;
# the tree's own path must too, for the paths compiled into the binaries.
mkdir -p "$root$tree"
(cd "$root" && find . -print0 | cpio --null -o -H newc --quiet) | gzip -1 >"$work/initramfs.cpio.gz"
echo "vm-test: initramfs $(du -m "$work/initramfs.cpio.gz" | cut -f1) MiB (${#files[@]} files, $(grep -c '^vm_test' "$root/vm/tests.sh") tests) in $((SECONDS - start)) s"

# --- The host's half of the version-skew matrix ---------------------------------------------------
skew_host=""
if [[ ${VM_SKIP_HOST_SKEW:-0} != 1 && -x $tree/tests/e2e/coredump_code_e2e_test ]]; then
  skew_host=$(cd "$tree/tests/e2e" && timeout -s KILL 300 ./coredump_code_e2e_test \
    --gtest_filter=CoredumpCode.EachKernelIsAckedOnlyWhatItOffered 2>&1 | grep '^version-skew:' || true)
fi

# --- Boot, bounded ----------------------------------------------------------------------------------
log=$work/console.log
# A second boot where the first died before /init: under TCG the kernel's own code patching
# (int3-based text_poke) once oopsed in ktime_get_with_offset at 3.6 s (1 boot in 5, 2026-12-05).
trap 'kill -KILL "$qemu" 2>/dev/null || true' EXIT
for attempt in 1 2; do
  : >"$log"
  qemu-system-x86_64 -accel tcg,thread=multi -cpu qemu64 -smp 2 -m 4096 \
    -kernel "$vmlinuz" -initrd "$work/initramfs.cpio.gz" \
    -append 'console=ttyS0 panic=-1 quiet loglevel=1' \
    -nographic -no-reboot -monitor none -serial "file:$log" -display none </dev/null >"$work/qemu.out" 2>&1 &
  qemu=$!
  boot_start=$SECONDS
  booted=0 timed_out=""
  shown=0
  while kill -0 "$qemu" 2>/dev/null; do
    elapsed=$((SECONDS - boot_start))
    if ((!booted)) && grep -q '^@@VM booted' "$log"; then booted=1; fi
    if ((!booted && elapsed > boot_timeout)); then timed_out="the guest did not reach /init within $boot_timeout s"; break; fi
    if ((elapsed > total_timeout)); then timed_out="the run exceeded VM_TIMEOUT=$total_timeout s"; break; fi
    # Progress as it comes: each verdict once.
    mapfile -t verdicts < <(tr -d '\r' <"$log" | grep -o '@@VM result .*')
    for ((i = shown; i < ${#verdicts[@]}; i++)); do echo "vm-test: ${verdicts[i]#@@VM result }"; done
    shown=${#verdicts[@]}
    sleep 2
  done
  if [[ -n $timed_out ]]; then kill -KILL "$qemu" 2>/dev/null || true; fi
  wait "$qemu" 2>/dev/null || true
  ((!booted)) && [[ -z $timed_out ]] && ((attempt == 1)) || break
  echo "vm-test: the guest died before /init ($(tr -d '\r' <"$log" | grep -m1 -oE '(Oops|BUG|Kernel panic)[^\n]*' || echo "no oops on the console")); booting again"
  cp "$log" "$work/console.first-boot.log"
done
# The console's first line carries the terminal set-up before the marker.
tr -d '\r' <"$log" | sed 's/^.*@@VM /@@VM /' >"$log.txt"
mapfile -t verdicts < <(grep '^@@VM result ' "$log.txt")
for ((i = shown; i < ${#verdicts[@]}; i++)); do echo "vm-test: ${verdicts[i]#@@VM result }"; done

# --- The verdict -----------------------------------------------------------------------------------
echo
guest_kernel=$(sed -n 's/^@@VM kernel //p' "$log.txt" | head -n1)
echo "kernel: ${guest_kernel:-unknown (package $release)}"
sed -n 's/^@@VM \(warm-up\)/vm-test: \1/p' "$log.txt"
[[ -z $skew_host ]] || echo "host $skew_host"
sed -n 's/^@@VM \(version-skew:\)/guest \1/p' "$log.txt"
if grep -q '^@@VM result FAIL' "$log.txt"; then
  echo "--- the failing tests' output (the whole console: $log.txt):"
  sed -n '/^---- /,/^@@VM result FAIL/p' "$log.txt"
fi
passed=$(grep -c '^@@VM result PASS' "$log.txt" || true)
failed=$(grep -c '^@@VM result FAIL' "$log.txt" || true)
skipped=$(grep -c '^@@VM result SKIP' "$log.txt" || true)
problem=""
if ((!booted)); then
  problem="the guest did not boot (${timed_out:-QEMU exited}; $work/qemu.out, $log.txt)"
  tail -n 20 "$work/qemu.out" "$log.txt"
elif [[ -n $timed_out ]]; then
  problem="$timed_out"
elif ! grep -q '^@@VM done' "$log.txt"; then
  problem="the guest stopped before its tests ended ($log.txt)"
fi
[[ -z $problem ]] || echo "vm-test: $problem"
if ((skipped)); then
  echo "skipped:"
  sed -n 's/^@@VM result SKIP [0-9]* /  /p' "$log.txt"
fi
echo "vm-test: $((SECONDS - start)) s in all"
echo "$passed passed, $failed failed, $skipped skipped"
[[ -z $problem ]] && ((failed == 0))
