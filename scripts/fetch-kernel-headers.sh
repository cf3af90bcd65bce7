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

mirror=$(grep -rhoE '^(URIs:|deb) +https?://[^ ]+' /etc/apt/sources.list /etc/apt/sources.list.d/*.sources \
           /etc/apt/sources.list.d/*.list 2>/dev/null | grep -v security | awk '{print $2}' | head -n1 || true)
mirror=${COREDUMPD_DEBIAN_MIRROR:-${mirror:-http://deb.debian.org/debian}}
mkdir -p "$dir/apt/lists/partial" "$dir/apt/cache/archives/partial" "$dir/debs"
printf 'deb %s %s main\n' "$mirror" sid "$mirror" experimental "$mirror" trixie-backports >"$dir/apt/sources.list"
opts=(-o Dir::Etc::SourceList="$dir/apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
      -o Dir::State::Lists="$dir/apt/lists" -o Dir::Cache="$dir/apt/cache" -o Acquire::Languages=none
      -o APT::Get::List-Cleanup=0 -o Acquire::Retries=2 -o Acquire::http::Timeout=20
      -o APT::Architecture="$(dpkg --print-architecture)")

# Refresh the lists unless they are less than a day old. apt-get update exits 0 even when every
# source failed, so success is judged by the lists it leaves.
stamp="$dir/apt/updated"
if [[ ! -f $stamp || -n $(find "$stamp" -mmin +1440) ]]; then
  out=$(apt-get "${opts[@]}" update -qq 2>&1) || true
  if ls "$dir"/apt/lists/*_Packages* >/dev/null 2>&1 && ! grep -qE '^(W|E): Failed to fetch' <<<"$out"; then
    touch "$stamp"
  else
    echo "$out" >&2
    if ! ls "$dir"/apt/lists/*_Packages* >/dev/null 2>&1; then
      echo "fetch-kernel-headers: cannot reach the Debian archive at $mirror (no network?) and nothing is cached" >&2
      exit 2
    fi
    echo "fetch-kernel-headers: archive unreachable, using the cached lists" >&2
  fi
fi

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
