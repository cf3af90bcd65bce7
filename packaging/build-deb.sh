#!/usr/bin/env bash
# Builds build/release/package/coredumpd_<version>_<arch>.deb and checks its contents. The tree is
# the release preset's, shared with scripts/quickstart.sh (CI builds it once), and locked while
# this builds in it (flock on build/release.lock), since CI builds it beside the tests.
# Usage: packaging/build-deb.sh. Needs the build deps (scripts/install-deps.sh) and dpkg-dev (for
# dpkg-shlibdeps; part of build-essential). Does not install the package. Ends with lintian's verdict
# (packaging/lintian-overrides says why each remaining tag is accepted): an error fails the build.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=$src/build/release
mkdir -p "$src/build"
exec 9>"$build.lock"
flock 9

# The release preset has the prefix /usr: the units' ExecStart=/--config paths are generated from it.
# -Werror only where asked (COREDUMPD_WERROR=ON, as scripts/test.sh sets): a package build must not
# break on a newer compiler's new warnings.
(cd "$src" && cmake --preset release -DCOREDUMPD_WERROR="${COREDUMPD_WERROR:-OFF}" >/dev/null)
# Everything the package installs (cpack fails on a missing install() target).
ninja -C "$build" coredumpd dumpctl dumpctl-fleet coredumpd-analyze man-pages package-changelog
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
/usr/libexec/coredumpd/dumpctl-fleet
/usr/sbin/coredumpd
/usr/share/bash-completion/completions/dumpctl
/usr/share/doc/coredumpd/changelog.gz
/usr/share/doc/coredumpd/examples/docker.json
/usr/share/doc/coredumpd/examples/kubernetes.json
/usr/share/doc/coredumpd/examples/lxc.json
/usr/share/doc/coredumpd/examples/podman.json
/usr/share/doc/coredumpd/examples/systemd-nspawn.json
/usr/share/doc/coredumpd/examples/systemd-services.json
/usr/share/lintian/overrides/coredumpd
/usr/share/man/man1/dumpctl.1.gz
/usr/share/man/man5/coredumpd.json.5.gz
/usr/share/man/man8/coredumpd.8.gz
/usr/share/zsh/vendor-completions/_dumpctl
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

# The changelog's newest entry is this version (lintian reads it; a stale one misleads users).
changelog_version=$(dpkg-deb --fsys-tarfile "$deb" | tar -xO ./usr/share/doc/coredumpd/changelog.gz | gzip -dc |
  sed -n '1s/^coredumpd (\([^)]*\)).*/\1/p')
[[ $changelog_version == "$(dpkg-deb -f "$deb" Version)" ]] ||
  { echo "build-deb: packaging/changelog's newest entry is '$changelog_version', the package $(dpkg-deb -f "$deb" Version)" >&2; exit 1; }

dpkg-deb -I "$deb"
dpkg-deb -c "$deb"

# lintian: every tag it reports, with its verdict line; errors fail the build, warnings are fixed or
# overridden with a reason (packaging/lintian-overrides, installed where lintian reads it).
if command -v lintian >/dev/null; then
  # --no-tag-display-limit: every tag; -i off (long); root: lintian warns about it, nothing more.
  lint=$(lintian --tag-display-limit 0 --display-level '>=pedantic' --show-overrides "$deb" 2>&1) && lint_rc=0 || lint_rc=$?
  echo "$lint"
  errors=$(grep -c '^E: ' <<<"$lint" || true) warnings=$(grep -c '^W: ' <<<"$lint" || true)
  echo "build-deb: lintian: $errors error(s), $warnings warning(s), rc $lint_rc"
  ((errors == 0)) || { echo "build-deb: lintian reports errors" >&2; exit 1; }
else
  echo "build-deb: lintian not installed (scripts/install-deps.sh): package not checked" >&2
  exit 1
fi
echo "build-deb: $deb"
