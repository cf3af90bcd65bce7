#!/usr/bin/env bash
# Downloads (never installs) Debian's newest linux-libc-dev into a private include directory, so the
# build can be checked against uapi headers newer than the host's (<linux/coredump.h> is 6.17+).
# The host's apt sources and state stay untouched: a private apt configuration (its own sources.list,
# lists and cache under DIR) reuses the host's Debian mirror with sid, experimental and trixie-backports.
# Usage: scripts/fetch-kernel-headers.sh [DIR]   (default: /var/cache/coredumpd-headers)
# Prints two lines: the package version, then the include directory (DIR/root/usr/include) to pass
# as -DCOREDUMPD_KERNEL_HEADERS (the arch-specific asm/ is in its <multiarch triplet>/ subfolder,
# which cmake/KernelHeaders.cmake adds too). Idempotent: the apt lists are refreshed at most once a day and the
# .deb is unpacked again only when a newer version appears.
# Exit status: 0 done; 2 the archive could not be reached (no network) and nothing is cached;
# 1 any other failure.
set -euo pipefail
dir=$(mkdir -p "${1:-/var/cache/coredumpd-headers}" && cd "${1:-/var/cache/coredumpd-headers}" && pwd)

# shellcheck source=lib/newer-apt.sh
source "$(dirname "$0")/lib/newer-apt.sh"
newer_apt_setup "$dir" fetch-kernel-headers "$(dpkg --print-architecture)"

# The newest version across the three suites, by Debian's ordering (apt's candidate would prefer
# sid's over a newer backport, whose pin priority is lower).
version=
for v in $(apt-cache "${opts[@]}" show linux-libc-dev 2>/dev/null | awk '/^Version:/ {print $2}'); do
  if [[ -z $version ]] || dpkg --compare-versions "$v" gt "$version"; then version=$v; fi
done
[[ -n $version ]] ||
  { echo "fetch-kernel-headers: no linux-libc-dev in $mirror sid/experimental/trixie-backports" >&2; exit 1; }

if [[ $(cat "$dir/root.version" 2>/dev/null) != "$version" || ! -f $dir/root/usr/include/linux/coredump.h ]]; then
  deb=$(find "$dir/debs" -name "linux-libc-dev_${version//:/%3a}_*.deb" | head -n1)
  if [[ -z $deb ]]; then
    (cd "$dir/debs" && apt-get "${opts[@]}" download "linux-libc-dev=$version" 2>&1 |
      grep -v '^W: Download is performed unsandboxed' >&2 || true)  # stdout carries only the result
    deb=$(find "$dir/debs" -name "linux-libc-dev_${version//:/%3a}_*.deb" | head -n1)
    [[ -n $deb ]] || { echo "fetch-kernel-headers: downloading linux-libc-dev $version failed" >&2; exit 2; }
  fi
  rm -rf "$dir/root"
  mkdir -p "$dir/root"
  dpkg-deb -x "$deb" "$dir/root"
  echo "$version" >"$dir/root.version"
  find "$dir/debs" -name 'linux-libc-dev_*.deb' ! -path "$deb" -delete
fi
[[ -f $dir/root/usr/include/linux/coredump.h ]] ||
  { echo "fetch-kernel-headers: linux-libc-dev $version has no linux/coredump.h (older than 6.17?)" >&2; exit 1; }
echo "linux-libc-dev $version"
echo "$dir/root/usr/include"
