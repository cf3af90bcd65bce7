#!/usr/bin/env bash
# The package's maintainer scripts (packaging/postinst, prerm, postrm) on the real core_pattern,
# under the core_pattern lock. Each scenario runs in a private mount namespace with a tmpfs on /run
# (so /run/systemd/system says whether systemd "runs", and /run/coredumpd is ours alone) and one on
# /usr/sbin holding coredumpd. A fake systemctl records its calls and, for `enable --now` and
# `disable --now` of coredumpd.socket, does what systemd would: listens on the socket's
# ListenStream= and runs the built unit's own ExecStartPost=/ExecStopPost= arguments. The booted
# machine (systemd-nspawn, tests/e2e) runs the package under the real systemd.
if [[ ${1:-} == --scenario ]]; then
  scenario=$2
else
  scenario=""
fi
source "$(dirname "$0")/lib.sh"
PKG=$SOURCE_DIR/packaging
SOCKET=/run/coredumpd/coredump.socket
UNIT=$BUILD_DIR/systemd-units/coredumpd.socket
sentinel="core.cdd-package-test"

if [[ -z $scenario ]]; then
  ((EUID == 0)) || skip_real_kernel "needs root (writes kernel.core_pattern, mounts in a private namespace)"
  "$COREDUMPD" --pattern=check >/dev/null || skip_real_kernel "$("$COREDUMPD" --pattern=check)"
  command -v unshare >/dev/null || fail "unshare missing (util-linux)"
  [[ -f $UNIT ]] || fail "no built $UNIT"
  lock_core_pattern "@@$SOCKET"
  for s in supported unsupported no-systemd postrm-fallback; do
    printf '%s\n' "$sentinel" >/proc/sys/kernel/core_pattern
    unshare --mount --propagation private bash "$0" --scenario "$s" 9>&- || fail "scenario $s"
  done
  exit 0
fi

# --- One scenario, inside the private mount namespace.
mount -t tmpfs -o mode=0755 cdd-run /run
mount -t tmpfs -o mode=0755 cdd-sbin /usr/sbin
extra=""
[[ $scenario != unsupported ]] || extra="--enable-test-hooks --test-core-modes /nonexistent --test-kernel-release 6.1.0-18-amd64"
printf '#!/bin/sh\nexec "%s" %s "$@"\n' "$COREDUMPD" "$extra" >/usr/sbin/coredumpd
chmod 0755 /usr/sbin/coredumpd
[[ $scenario == no-systemd ]] || mkdir -p /run/systemd/system

mkdir -p "$T/bin"
calls=$T/calls
cat >"$T/bin/systemd-tmpfiles" <<'SH'
#!/bin/sh
exit 0
SH
cat >"$T/bin/systemctl" <<SH
#!/usr/bin/env bash
echo "systemctl \$*" >>"$calls"
# The arguments the unit gives the program of ExecStartPost=/ExecStopPost= (its path is the build's).
args() { read -r _ a <<<"\$(sed -n "s/^\$1=//p" "$UNIT")"; echo "\$a"; }
case " \$* " in
  *" enable --now "*" coredumpd.socket "*)
    if [[ -f $T/listener.pid ]]; then exit 0; fi  # already active: systemd runs nothing again
    mkdir -p -m 0700 /run/coredumpd
    "$PYTHON" -c 'import socket,sys,time; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(); time.sleep(120)' \
      "$SOCKET" 9>&- >/dev/null 2>&1 &
    echo \$! >"$T/listener.pid"
    for _ in \$(seq 100); do [[ -S $SOCKET ]] && break; sleep 0.05; done
    /usr/sbin/coredumpd \$(args ExecStartPost) ;;
  *" disable --now "*" coredumpd.socket "*)
    [[ -f $T/listener.pid ]] && kill "\$(cat "$T/listener.pid")" && rm -f "$T/listener.pid" "$SOCKET"
    /usr/sbin/coredumpd \$(args ExecStopPost) ;;
esac
exit 0
SH
chmod 0755 "$T/bin/"*
EXIT_HOOKS+=('[[ -f $T/listener.pid ]] && kill "$(cat "$T/listener.pid")"')
export PATH=$T/bin:$PATH

# run SCRIPT ARGS...: a maintainer script as dpkg runs it; its stderr in $out, exit 0 required.
run() { out=$(sh "$PKG/$1" "${@:2}" 2>&1) || fail "$scenario: $1 $* exited $?: $out"; }
called() { grep -qx -- "systemctl $1" "$calls" 2>/dev/null; }
pattern_is() { [[ $(pattern) == "$1" ]] || fail "$scenario: $2: core_pattern is '$(pattern)', expected '$1'"; }
saved=/run/coredumpd/core_pattern.previous

case $scenario in
  supported)
    run postinst configure
    pattern_is "@@$SOCKET" "after postinst"
    [[ $(cat "$saved") == "$sentinel" ]] || fail "$scenario: saved pattern is '$(cat "$saved" 2>&1)'"
    called daemon-reload && called "enable --now coredumpd.socket coredumpd-query.socket" &&
      called "try-restart coredumpd.service" || fail "$scenario: postinst calls: $(cat "$calls")"
    [[ $out != *"left unchanged"* ]] || fail "$scenario: postinst complained: $out"
    ok "$scenario: postinst enabled both sockets; the socket's ExecStartPost set @@$SOCKET, saved '$sentinel'"
    : >"$calls"
    run prerm upgrade 1.0
    run postrm upgrade 1.0
    run postinst configure 1.0
    pattern_is "@@$SOCKET" "after an upgrade"
    [[ $(cat "$saved") == "$sentinel" ]] || fail "$scenario: an upgrade lost the saved pattern"
    ! grep -q "disable\|stop \|restart coredumpd.socket" "$calls" || fail "$scenario: an upgrade stopped a socket: $(cat "$calls")"
    ok "$scenario: upgrade keeps the sockets listening and the pattern ours ($(paste -sd, "$calls"))"
    run prerm remove
    pattern_is "$sentinel" "after prerm remove"
    called "disable --now coredumpd.socket coredumpd-query.socket coredumpd.service" || fail "$scenario: prerm calls: $(cat "$calls")"
    run postrm remove
    pattern_is "$sentinel" "after postrm remove"
    ok "$scenario: prerm restored '$sentinel' and disabled the sockets and the service"
    ;;
  unsupported)
    run postinst configure
    pattern_is "$sentinel" "after postinst on 6.1"
    [[ $out == *"left unchanged"*"6.1.0-18-amd64"*"6.17"* ]] || fail "$scenario: postinst did not say why: $out"
    called "enable --now coredumpd.socket coredumpd-query.socket" || fail "$scenario: sockets not enabled"
    run prerm remove
    pattern_is "$sentinel" "after prerm on 6.1"
    ok "$scenario: on 6.1 the pattern stays, and postinst says why: $(grep 6.17 <<<"$out" | head -n 1)"
    ;;
  no-systemd)
    run postinst configure
    pattern_is "$sentinel" "after postinst without systemd"
    [[ $out == *"systemd is not running"* && ! -e $calls ]] || fail "$scenario: postinst: $out; calls: $(cat "$calls" 2>&1)"
    # The pattern ours (as a stopped-without-systemd install would leave it): prerm restores it directly.
    mkdir -p -m 0700 /run/coredumpd
    "$PYTHON" -c 'import socket,sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$SOCKET"
    /usr/sbin/coredumpd --pattern=install --socket "$SOCKET" 2>/dev/null
    pattern_is "@@$SOCKET" "installed by hand"
    run prerm remove
    pattern_is "$sentinel" "after prerm without systemd"
    [[ ! -e $calls ]] || fail "$scenario: systemctl called without systemd: $(cat "$calls")"
    ok "$scenario: postinst leaves the pattern; prerm restores it without systemctl"
    ;;
  postrm-fallback)
    mkdir -p -m 0700 /run/coredumpd
    "$PYTHON" -c 'import socket,sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$SOCKET"
    /usr/sbin/coredumpd --pattern=install --socket "$SOCKET" 2>/dev/null
    pattern_is "@@$SOCKET" "installed by hand"
    rm /usr/sbin/coredumpd  # dpkg removed the files; prerm could not restore
    run postrm remove
    pattern_is "$sentinel" "after postrm with the binary gone"
    [[ ! -e $saved ]] || fail "$scenario: postrm left $saved"
    ok "$scenario: postrm restores '$sentinel' from the saved file without the binary"
    ;;
esac
