#!/usr/bin/env bash
# The package's maintainer scripts (packaging/postinst, prerm, postrm) on the real core_pattern,
# under the core_pattern lock, in the initial mount namespace (the kernel refuses "@@" patterns
# written from any other: EINVAL). Each scenario runs copies of the scripts whose four path lines
# (COREDUMPD=, SOCKET=, SAVED=, SYSTEMD_RUNNING=) point into a scratch tree; nothing else differs.
# A fake systemctl records its calls and, for `enable --now`/`disable --now` of coredumpd.socket,
# does what systemd would: listens on the socket and runs the built unit's own ExecStartPost=/
# ExecStopPost= arguments. The booted machine (systemd-nspawn, tests/e2e) runs the real package.
source "$(dirname "$0")/lib.sh"
UNIT=$BUILD_DIR/systemd-units/coredumpd.socket
sentinel="core.cdd-package-test"
((EUID == 0)) || skip_real_kernel "needs root (writes kernel.core_pattern)"
"$COREDUMPD" --pattern=check >/dev/null || skip_real_kernel "$("$COREDUMPD" --pattern=check)"
[[ -f $UNIT ]] || fail "no built $UNIT"
unit_socket=$(sed -n 's/^ListenStream=//p' "$UNIT")

# setup SCENARIO: a fresh scratch tree, the script copies, the fakes.
setup() {
  scenario=$1 root=$T/$1
  mkdir -p "$root/sbin" "$root/bin" "$root/pkg" "$root/run"
  SAVED=$root/run/core_pattern.previous calls=$root/calls
  rm -f "$SOCKET"
  printf '%s\n' "$sentinel" >/proc/sys/kernel/core_pattern
  local extra=""
  [[ $scenario != unsupported ]] || extra="--enable-test-hooks --test-core-modes /nonexistent --test-kernel-release 6.1.0-18-amd64"
  printf '#!/bin/sh\nexec "%s" %s "$@"\n' "$COREDUMPD" "$extra" >"$root/sbin/coredumpd"
  [[ $scenario == no-systemd ]] || mkdir -p "$root/run/systemd/system"
  for f in postinst prerm postrm; do
    sed -e "s|^COREDUMPD=.*|COREDUMPD=$root/sbin/coredumpd|" -e "s|^SOCKET=.*|SOCKET=$SOCKET|" \
      -e "s|^SAVED=.*|SAVED=$SAVED|" -e "s|^SYSTEMD_RUNNING=.*|SYSTEMD_RUNNING=$root/run/systemd/system|" \
      "$PKG/$f" >"$root/pkg/$f"
    (($(diff "$PKG/$f" "$root/pkg/$f" | grep -c '^>') == 4)) || fail "packaging/$f lacks one of its four path lines"
  done
  printf '#!/bin/sh\nexit 0\n' >"$root/bin/systemd-tmpfiles"
  cat >"$root/bin/systemctl" <<SH
#!/usr/bin/env bash
echo "systemctl \$*" >>"$calls"
# The unit's arguments for ExecStartPost=/ExecStopPost=, pointed at this tree's socket and saved file.
args() { read -r _ a <<<"\$(sed -n "s/^\$1=//p" "$UNIT" | sed "s|$unit_socket|$SOCKET|")"; echo "\$a --pattern-saved $SAVED"; }
case " \$* " in
  *" enable --now "*"coredumpd.socket "*)
    if [[ -f $root/listener.pid ]]; then exit 0; fi  # already active: systemd runs nothing again
    "$PYTHON" -c 'import socket,sys,time; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(); time.sleep(120)' \
      "$SOCKET" 9>&- >/dev/null 2>&1 &
    echo \$! >"$root/listener.pid"
    for _ in \$(seq 100); do [[ -S $SOCKET ]] && break; sleep 0.05; done
    $root/sbin/coredumpd \$(args ExecStartPost) ;;
  *" disable --now "*"coredumpd.socket "*)
    [[ -f $root/listener.pid ]] && kill "\$(cat "$root/listener.pid")" && rm -f "$root/listener.pid" "$SOCKET"
    $root/sbin/coredumpd \$(args ExecStopPost) ;;
esac
exit 0
SH
  chmod 0755 "$root/bin/"* "$root/sbin/coredumpd"
  EXIT_HOOKS+=("[[ -f $root/listener.pid ]] && kill \"\$(cat $root/listener.pid)\"")
  PATH=$root/bin:$ORIG_PATH
}
ORIG_PATH=$PATH
PKG=$SOURCE_DIR/packaging
mkdir -p "$T/run"
SOCKET=$T/run/coredump.socket  # one path for every scenario: what the lock's state file records
lock_core_pattern "@@$SOCKET"

# run SCRIPT ARGS...: a maintainer script as dpkg runs it; its stderr in $out, exit 0 required.
run() { out=$(sh "$root/pkg/$1" "${@:2}" 2>&1 9>&-) || fail "$scenario: $1 $* exited $?: $out"; }
called() { grep -qx -- "systemctl $1" "$calls" 2>/dev/null; }
pattern_is() { [[ $(pattern) == "$1" ]] || fail "$scenario: $2: core_pattern is '$(pattern)', expected '$1'"; }

for scenario in supported unsupported no-systemd postrm-fallback; do
setup "$scenario"
case $scenario in
  supported)
    run postinst configure
    pattern_is "@@$SOCKET" "after postinst (postinst said: $out)"
    [[ $(cat "$SAVED") == "$sentinel" ]] || fail "$scenario: saved pattern is '$(cat "$SAVED" 2>&1)'"
    called daemon-reload && called "enable --now coredumpd.socket coredumpd-query.socket" &&
      called "try-restart coredumpd.service" || fail "$scenario: postinst calls: $(cat "$calls")"
    [[ $out != *"left unchanged"* ]] || fail "$scenario: postinst complained: $out"
    ok "$scenario: postinst enabled both sockets; the socket's ExecStartPost set @@$SOCKET, saved '$sentinel'"
    : >"$calls"
    run prerm upgrade 1.0
    run postrm upgrade 1.0
    run postinst configure 1.0
    pattern_is "@@$SOCKET" "after an upgrade"
    [[ $(cat "$SAVED") == "$sentinel" ]] || fail "$scenario: an upgrade lost the saved pattern"
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
    said=$(grep -F "needs Linux" <<<"$out" | tail -n 1)
    run prerm remove
    pattern_is "$sentinel" "after prerm on 6.1"
    ok "$scenario: on 6.1 the pattern stays, and postinst says why: $said"
    ;;
  no-systemd)
    run postinst configure
    pattern_is "$sentinel" "after postinst without systemd"
    [[ $out == *"systemd is not running"* && ! -e $calls ]] || fail "$scenario: postinst: $out; calls: $(cat "$calls" 2>&1)"
    # The pattern ours (as a stopped-without-systemd install would leave it): prerm restores it directly.
    "$PYTHON" -c 'import socket,sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$SOCKET"
    "$root/sbin/coredumpd" --pattern=install --socket "$SOCKET" --pattern-saved "$SAVED" 2>/dev/null
    pattern_is "@@$SOCKET" "installed by hand"
    run prerm remove
    pattern_is "$sentinel" "after prerm without systemd"
    [[ ! -e $calls ]] || fail "$scenario: systemctl called without systemd: $(cat "$calls")"
    ok "$scenario: postinst leaves the pattern; prerm restores it without systemctl"
    ;;
  postrm-fallback)
    "$PYTHON" -c 'import socket,sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$SOCKET"
    "$root/sbin/coredumpd" --pattern=install --socket "$SOCKET" --pattern-saved "$SAVED" 2>/dev/null
    pattern_is "@@$SOCKET" "installed by hand"
    rm "$root/sbin/coredumpd"  # dpkg removed the files; prerm could not restore
    run postrm remove
    pattern_is "$sentinel" "after postrm with the binary gone"
    [[ ! -e $SAVED ]] || fail "$scenario: postrm left $SAVED"
    ok "$scenario: postrm restores '$sentinel' from the saved file without the binary"
    ;;
esac
done
