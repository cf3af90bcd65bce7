#!/usr/bin/env bash
# Downloads (never installs) Debian's newest linux-image-*-cloud-amd64 for scripts/vm-test.sh's QEMU
# guest, through a private apt configuration like scripts/fetch-kernel-headers.sh's (its own
# sources.list, lists and cache under DIR; the host's Debian mirror with sid, experimental and
# trixie-backports): the host's apt sources and packages stay untouched.
# Usage: scripts/fetch-kernel-image.sh [DIR]   (default: /var/cache/coredumpd-vm)
# Prints two lines: the package's kernel release (e.g. 7.3.4+deb13-cloud-amd64), then the path of its
# vmlinuz. Idempotent: the lists are refreshed at most once a day and a release already unpacked is
# reused (a rerun takes well under a second).
# Exit status: 0 done; 2 the archive could not be reached and nothing is cached; 1 any other failure.
set -euo pipefail
dir=$(mkdir -p "${1:-/var/cache/coredumpd-vm}" && cd "${1:-/var/cache/coredumpd-vm}" && pwd)

# shellcheck source=lib/newer-apt.sh
source "$(dirname "$0")/lib/newer-apt.sh"
newer_apt_setup "$dir" fetch-kernel-image amd64

# The versioned package names (linux-image-7.3.4+deb13-cloud-amd64), newest by version order; the
# unversioned metapackages and the -dbg packages are left out.
pkg=$(apt-cache "${opts[@]}" pkgnames linux-image- | grep -E '^linux-image-[0-9]+\.[0-9]+(\.[0-9]+)?\+deb[0-9]+-cloud-amd64$' |
      sort -V | tail -n1)
[[ -n $pkg ]] || { echo "fetch-kernel-image: no linux-image-*-cloud-amd64 in $mirror" >&2; exit 1; }
release=${pkg#linux-image-}
vmlinuz=$dir/root/$release/boot/vmlinuz-$release
if [[ ! -f $vmlinuz ]]; then
  # The image package may be a small one whose dependency (linux-binary-*) holds the kernel.
  deps=$(apt-cache "${opts[@]}" depends "$pkg" | awk '/Depends: linux-(binary|image)-/ {print $2}')
  rm -f "$dir"/debs/*.deb
  (cd "$dir/debs" && apt-get "${opts[@]}" download "$pkg" $deps 2>&1 | grep -v '^W: Download is performed unsandboxed' >&2 || true)
  ls "$dir"/debs/*.deb >/dev/null 2>&1 || { echo "fetch-kernel-image: downloading $pkg failed" >&2; exit 2; }
  rm -rf "$dir/root"
  mkdir -p "$dir/root/$release"
  for d in "$dir"/debs/*.deb; do  # only one of them holds it
    dpkg-deb --fsys-tarfile "$d" | tar -x -C "$dir/root/$release" --wildcards '*vmlinuz*' 2>/dev/null || true
  done
  found=$(find "$dir/root/$release" -name "vmlinuz*" -type f | head -n1)
  [[ -n $found ]] || { echo "fetch-kernel-image: $pkg holds no vmlinuz" >&2; exit 1; }
  mkdir -p "$(dirname "$vmlinuz")"
  [[ $found == "$vmlinuz" ]] || mv "$found" "$vmlinuz"
  rm -f "$dir"/debs/*.deb  # the vmlinuz is all the guest needs (an initramfs, no modules)
fi
echo "$release"
echo "$vmlinuz"
