#!/usr/bin/env bash
# (a) The units exactly as `cmake --install` lays them out pass `systemd-analyze verify`, and agree
# with each other: socket path, the core_pattern commands, config default, capabilities, ordering. No PID 1 needed: verify
# runs offline against a scratch root (--root), which also checks that ExecStart= exists there.
source "$(dirname "$0")/lib.sh"
command -v systemd-analyze >/dev/null || fail "systemd-analyze missing (package systemd; scripts/install-deps.sh)"

root=$T/root
# The host's units first (verify needs sysinit.target, sockets.target, ...), then ours over them,
# plus the one outside program a unit names (ExecReload=/bin/kill).
mkdir -p "$root/usr/lib/systemd/system" "$root/bin"
cp -a /lib/systemd/system/. "$root/usr/lib/systemd/system/"
cp /bin/kill "$root/bin/kill"
DESTDIR=$root "${CMAKE:-cmake}" --install "$BUILD_DIR" >"$T/install.log" 2>&1 || fail "cmake --install: $(tail -n 5 "$T/install.log")"

unit_dir=$(dirname "$(find "$root" -path '*/systemd/system/coredumpd.service' -print -quit)")
[[ $unit_dir != . ]] || fail "coredumpd.service was not installed (is add_subdirectory(systemd-units) in CMakeLists.txt?)"
[[ -f $unit_dir/coredumpd.socket ]] || fail "coredumpd.socket not installed next to the service"
[[ -f $unit_dir/coredumpd-query.socket ]] || fail "coredumpd-query.socket not installed next to the service"
[[ -z $(find "$root" -path '*/sysctl.d/*coredumpd*' -print -quit) ]] ||
  fail "a sysctl.d drop-in for coredumpd is installed: the socket unit sets core_pattern, sysctl.d must not"
ok "units installed in ${unit_dir#"$root"}, no sysctl.d drop-in"

# Any output (an unknown key, a bad value, a missing program) is a failure, not just rc != 0:
# verify exits 0 on "Unknown key ... ignoring".
units=(coredumpd.socket coredumpd-query.socket coredumpd.service)
out=$(systemd-analyze verify --man=no --root="$root" "${units[@]}" 2>&1) || fail "verify: $out"
[[ -z $out ]] || fail "verify printed warnings: $out"
ok "systemd-analyze verify ${units[*]}"

# --man=no above: verify would ask the host's man(1), which knows nothing of the scratch root. Each
# unit's Documentation= man:PAGE(S) must be a page the install put there instead.
for u in "${units[@]}"; do
  docs=$(sed -n 's/^Documentation=//p' "$(find "$root" -path "*/systemd/system/$u" -print -quit)")
  [[ $docs == *man:* ]] || fail "$u has no Documentation=man:..."
  for d in $docs; do
    [[ $d =~ ^man:([^\(]+)\(([0-9])\)$ ]] || continue
    [[ -n $(find "$root" -path "*/share/man/man${BASH_REMATCH[2]}/${BASH_REMATCH[1]}.${BASH_REMATCH[2]}.gz" -print -quit) ]] ||
      fail "$u: Documentation=$d is not installed"
  done
done
ok "every unit's Documentation= man pages are installed"

svc=$unit_dir/coredumpd.service sock=$unit_dir/coredumpd.socket qsock=$unit_dir/coredumpd-query.socket
key() { sed -n "s/^$2=//p" "$1" | tail -n 1; }
# Every value of KEY (space-separated lists and repeated lines alike), one per line, sorted.
keys() { sed -n "s/^$2=//p" "$1" | tr ' ' '\n' | sed '/^$/d' | sort; }

# ExecStart= names an installed binary and config file (paths come from the install prefix).
read -r bin _ cfg_path _ <<<"$(key "$svc" ExecStart)"
[[ -x $root$bin ]] || fail "ExecStart binary $bin not installed"
[[ -f $root$cfg_path ]] || fail "ExecStart --config $cfg_path not installed (config/*.json install destination?)"
ok "ExecStart=$bin --config $cfg_path, both installed"

# The places naming the socket must agree, or the kernel connects to nothing: ListenStream=, the
# socket the pattern commands point core_pattern at, and the daemon's default.
listen=$(key "$sock" ListenStream)
[[ $(key "$sock" ExecStartPost) == "$bin --pattern=install --socket $listen" ]] ||
  fail "ExecStartPost= is '$(key "$sock" ExecStartPost)', expected '$bin --pattern=install --socket $listen'"
[[ $(key "$sock" ExecStopPost) == "$bin --pattern=restore --socket $listen" ]] ||
  fail "ExecStopPost= is '$(key "$sock" ExecStopPost)', expected '$bin --pattern=restore --socket $listen'"
default=$("$PYTHON" - "$SOURCE_DIR/config/coredumpd.json" <<'PY'
import json, re, sys
text = re.sub(r'^\s*//.*$', '', open(sys.argv[1]).read(), flags=re.M)
print(json.loads(text)["socket"])
PY
)
[[ $default == "$listen" ]] || fail "config socket '$default' != ListenStream '$listen'"
ok "ListenStream, ExecStartPost/ExecStopPost --socket and the config agree on $listen"

# Early, like systemd-coredump.socket: no default dependencies, listening before sockets.target
# and stopped (pattern restored) before shutdown; after systemd-sysctl, whose pattern we replace.
for s in "$sock" "$qsock"; do
  n=$(basename "$s")
  [[ $(key "$s" DefaultDependencies) == no ]] || fail "$n: DefaultDependencies=no missing"
  [[ $(keys "$s" Before | xargs) == "shutdown.target sockets.target" ]] || fail "$n: Before= is '$(keys "$s" Before | xargs)'"
  [[ $(keys "$s" Conflicts | xargs) == shutdown.target ]] || fail "$n: Conflicts=shutdown.target missing"
  [[ $(key "$s" WantedBy) == sockets.target ]] || fail "$n: WantedBy=sockets.target missing"
done
keys "$sock" After | grep -qx systemd-sysctl.service || fail "coredumpd.socket is not After=systemd-sysctl.service"
ok "both sockets: DefaultDependencies=no, Before=sockets.target shutdown.target, Conflicts=shutdown.target; After=systemd-sysctl"

# The daemon gets both sockets, told apart by name; the query socket activates the same service.
[[ $(key "$sock" FileDescriptorName) == kernel ]] || fail "coredumpd.socket: FileDescriptorName=kernel missing"
[[ $(key "$qsock" FileDescriptorName) == query ]] || fail "coredumpd-query.socket: FileDescriptorName=query missing"
[[ $(key "$qsock" Service) == coredumpd.service ]] || fail "coredumpd-query.socket: Service=coredumpd.service missing"
[[ $(keys "$svc" Sockets | xargs) == "coredumpd-query.socket coredumpd.socket" ]] || fail "service Sockets= is '$(keys "$svc" Sockets | xargs)'"
[[ $(key "$qsock" ListenStream) == /run/coredumpd-query.socket && $(key "$qsock" SocketMode) == 0666 ]] ||
  fail "query socket must be /run/coredumpd-query.socket, mode 0666 (users reach it; the daemon decides what each sees)"
ok "FileDescriptorName kernel/query, Sockets= both, query socket 0666 outside the kernel's 0700 directory"

# Hardening that the daemon's job depends on.
[[ $(key "$sock" SocketMode) == 0600 && $(key "$sock" Accept) == no ]] || fail "socket must be 0600, Accept=no"
(($(key "$sock" Backlog) >= 4096)) || fail "Backlog below 4096 loses dumps under bursts"
caps=$(key "$svc" CapabilityBoundingSet | tr ' ' '\n' | sort | xargs)
[[ $caps == "CAP_DAC_READ_SEARCH CAP_KILL CAP_SETGID CAP_SETUID CAP_SYS_ADMIN CAP_SYS_NICE CAP_SYS_PTRACE" ]] || fail "CapabilityBoundingSet is '$caps'"
[[ $(key "$svc" ExecStart) != *--install-pattern* ]] || fail "the service must not write core_pattern (the socket unit does)"
[[ -n $(find "$root" -path '*/tmpfiles.d/coredumpd.conf' -print -quit) ]] || fail "tmpfiles.d/coredumpd.conf not installed"
ok "socket mode/backlog, capability set, no --install-pattern, tmpfiles entry"

# Early boot (docs/EARLY_BOOT.md): the service can start before /var is mounted, so nothing may
# order it after basic.target or add a mount dependency on /var (StateDirectory=, CacheDirectory=,
# LogsDirectory=, PrivateTmp= all do); the store's ReadWritePaths= may be missing at start ('-').
[[ $(key "$svc" DefaultDependencies) == no ]] || fail "coredumpd.service needs DefaultDependencies=no (early boot)"
for k in StateDirectory CacheDirectory LogsDirectory PrivateTmp RequiresMountsFor; do
  [[ -z $(key "$svc" $k) ]] || fail "coredumpd.service sets $k=, which waits for /var's mount (early boot)"
done
grep -qx 'Conflicts=shutdown.target' "$svc" && grep -qx 'Before=shutdown.target' "$svc" ||
  fail "without default dependencies the service must conflict with and come before shutdown.target"
grep -q '^ReadWritePaths=-/var/lib/coredumpd$' "$svc" || fail "the store's ReadWritePaths= needs '-' (missing in early boot)"
grep -q '^RuntimeDirectory=.*coredumpd/fallback' "$svc" || fail "the fallback on /run must be writable (RuntimeDirectory=)"
ok "early boot: DefaultDependencies=no, no /var mount dependency, the fallback writable"

# For the log only: systemd's own exposure rating of the sandbox.
systemd-analyze security --offline=yes --root="$root" coredumpd.service 2>/dev/null | tail -n 1 || true
