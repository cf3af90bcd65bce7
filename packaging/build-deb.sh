#!/usr/bin/env bash
# Builds build/deb/package/coredumpd_<version>_<arch>.deb and checks its contents.
# Usage: packaging/build-deb.sh. Needs the build deps (scripts/install-deps.sh) and dpkg-dev (for
# dpkg-shlibdeps; part of build-essential). Does not install the package.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=$src/build/deb

# Prefix /usr at configure time: the units' ExecStart=/--config paths are generated from it.
# No -Werror: a package build must not break on a newer compiler's new warnings (CI has -Werror).
cmake -S "$src" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCOREDUMPD_WERROR=OFF \
  -DCMAKE_INSTALL_PREFIX=/usr -DCOREDUMPD_TESTS=OFF >/dev/null
# Everything the package installs (cpack fails on a missing install() target).
ninja -C "$build" coredumpd dumpctl coredumpd-analyze
grep -q 'CPACK_GENERATOR "DEB"' "$build/CPackConfig.cmake" 2>/dev/null ||
  { echo "build-deb: no CPack DEB config; add include(packaging/CPackConfig.cmake) to CMakeLists.txt" >&2; exit 1; }
rm -rf "$build/package"
(cd "$build" && cpack -G DEB -B "$build/package" >/dev/null)
deb=$(ls "$build"/package/coredumpd_*.deb)

# The package must carry exactly these (directories aside), with the unit pointing at /usr/sbin.
listing=$(dpkg-deb -c "$deb" | awk '$1 !~ /^d/ {print $6}' | sed 's|^\./|/|' | sort)
expected=$(sort <<'LIST'
/etc/coredumpd/coredumpd.json
/usr/bin/dumpctl
/usr/lib/systemd/system/coredumpd.service
/usr/lib/systemd/system/coredumpd-query.socket
/usr/lib/systemd/system/coredumpd.socket
/usr/lib/tmpfiles.d/coredumpd.conf
/usr/libexec/coredumpd/coredumpd-analyze
/usr/sbin/coredumpd
/usr/share/doc/coredumpd/examples/docker.json
/usr/share/doc/coredumpd/examples/kubernetes.json
/usr/share/doc/coredumpd/examples/lxc.json
/usr/share/doc/coredumpd/examples/podman.json
/usr/share/doc/coredumpd/examples/systemd-nspawn.json
/usr/share/doc/coredumpd/examples/systemd-services.json
LIST
)
if [[ $listing != "$expected" ]]; then
  echo "build-deb: unexpected package contents:" >&2
  diff <(echo "$expected") <(echo "$listing") >&2 || true
  exit 1
fi
dpkg-deb --fsys-tarfile "$deb" | tar -xO ./usr/lib/systemd/system/coredumpd.service |
  grep -q '^ExecStart=/usr/sbin/coredumpd --config /etc/coredumpd/coredumpd.json$' ||
  { echo "build-deb: coredumpd.service has the wrong ExecStart=" >&2; exit 1; }
dpkg-deb --fsys-tarfile "$deb" | tar -xO ./usr/lib/systemd/system/coredumpd.socket |
  grep -q '^ExecStartPost=/usr/sbin/coredumpd --pattern=install ' ||
  { echo "build-deb: coredumpd.socket does not install core_pattern with /usr/sbin/coredumpd" >&2; exit 1; }
depends=$(dpkg-deb -f "$deb" Depends)
for lib in libzstd1 libsqlite3-0 libsystemd0 libarchive13 libstdc++6 libc6; do
  [[ $depends == *"$lib"* ]] || { echo "build-deb: Depends lacks $lib: $depends" >&2; exit 1; }
done
[[ $(dpkg-deb -f "$deb" Conffiles 2>/dev/null; dpkg-deb -I "$deb" conffiles) == *"/etc/coredumpd/coredumpd.json"* ]] ||
  { echo "build-deb: coredumpd.json is not a conffile" >&2; exit 1; }

dpkg-deb -I "$deb"
dpkg-deb -c "$deb"
echo "build-deb: $deb"
