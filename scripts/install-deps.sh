#!/usr/bin/env bash
# Installs every Debian package coredumpd needs to build, test and benchmark.
# Idempotent; run as root on Debian 12 (bookworm).
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config clang libclang-rt-14-dev
  lld  # links the test programs several times faster than ld.bfd (CMakeLists.txt)
  libboost-dev libboost-system-dev
  libspdlog-dev libfmt-dev nlohmann-json3-dev libcli11-dev
  libsystemd-dev systemd
  libzstd-dev zstd libsqlite3-dev sqlite3
  libarchive-dev libarchive-tools  # dumpctl export's tar.zst (bsdtar: its tests list and extract it)
  libelf-dev libdw-dev elfutils libseccomp-dev libssl-dev  # the analyzer (analyzer/), signatures
  libgtest-dev libgmock-dev
  gdb python3 util-linux procps file e2fsprogs mount
  strace  # tests/unit/sqlite_vfs_test.cc: opening the index reads no /dev/urandom
  systemd-container debootstrap  # the systemd-nspawn forwarding test (tests/e2e/nspawn_forward_test.cc)
  scdoc  # the man pages' sources (docs/man/*.scd) to roff
  man-db groff-base zsh  # tests/docs: the pages rendered by man -l, the zsh completion
  lintian  # packaging/build-deb.sh checks the package
  libpq-dev postgresql  # the fleet index (fleet/) and its tests' server (scripts/fleet/pg-up.sh)
  libcurl4-openssl-dev libxml2-dev  # the S3 client (s3/): HTTP, SigV4 signing, its XML replies
  ceph-mon ceph-osd radosgw ceph-common  # a real S3 endpoint for the upload tests (scripts/fleet/ceph-up.sh)
  qemu-system-x86 busybox-static cpio  # scripts/vm-test.sh: the e2e tests under Debian's newest kernel
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "install-deps: all packages present"
fi
