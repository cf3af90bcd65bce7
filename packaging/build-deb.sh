#!/usr/bin/env bash
# Builds build/release/package/coredumpd_<version>_<arch>.deb and checks its contents. The tree is
# the release preset's, shared with scripts/quickstart.sh (CI builds it once), and locked while
# this builds in it (flock on build/release.lock), since CI builds it beside the tests.
# Usage: packaging/build-deb.sh. Needs the build deps (scripts/install-deps.sh) and dpkg-dev (for
# dpkg-shlibdeps; part of build-essential). Does not install the package.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=$src/build/release
exec 9>"$build.lock"
flock 9

# The release preset has the prefix /usr: the units' ExecStart=/--config paths are generated from it.
# -Werror only where asked (COREDUMPD_WERROR=ON, as scripts/test.sh sets): a package build must not
# break on a newer compiler's new warnings.
(cd "$src" && cmake --preset release -DCOREDUMPD_WERROR="${COREDUMPD_WERROR:-OFF}" >/dev/null)
# Everything the package installs (cpack fails on a missing install() target).
ninja -C "$build" coredumpd dumpctl coredumpd-analyze
[[ ${COREDUMPD_BUILD_ONLY:-0} != 1 ]] || exit 0  # scripts/test.sh builds the tree beside the tests
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
for lib in libzstd1 libsqlite3-0 libsystemd0 libstdc++6 libc6; do
  [[ $depends == *"$lib"* ]] || { echo "build-deb: Depends lacks $lib: $depends" >&2; exit 1; }
done
[[ $(dpkg-deb -f "$deb" Conffiles 2>/dev/null; dpkg-deb -I "$deb" conffiles) == *"/etc/coredumpd/coredumpd.json"* ]] ||
  { echo "build-deb: coredumpd.json is not a conffile" >&2; exit 1; }

dpkg-deb -I "$deb"
dpkg-deb -c "$deb"
echo "build-deb: $deb"
