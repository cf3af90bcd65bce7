#!/usr/bin/env bash
# The unit's sandbox must still let the daemon do its job. Without PID 1 we rebuild the parts that
# matter for collection: CapabilityBoundingSet= (setpriv: root keeping only the unit's caps,
# no_new_privs), ProtectHostname= (unshare --uts, with a different hostname) and PrivateNetwork=
# (unshare --net: the kernel connects from the host's netns to a path socket). A real process of
# another user (nobody) crashes into it; the stored record must be complete: the core, its
# environ and fds (CAP_SYS_PTRACE, CAP_DAC_READ_SEARCH) and the crasher's hostname, read by setns()
# into its UTS namespace (CAP_SYS_ADMIN), not the daemon's own.
source "$(dirname "$0")/lib.sh"
((EUID == 0)) || skip_real_kernel "needs root (writes kernel.core_pattern)"
grep -qw socket /proc/sys/kernel/core_modes 2>/dev/null || skip_real_kernel "kernel lacks socket core_pattern (needs Linux 6.17+)"
IFS=. read -r major minor _ <<<"$(uname -r)"
((major > 6 || (major == 6 && minor >= 17))) || skip_real_kernel "kernel $(uname -r) predates the @@ protocol (needs 6.17+)"
command -v setpriv >/dev/null && command -v unshare >/dev/null || fail "setpriv/unshare missing (util-linux)"

sock=$T/k.sock log=$T/daemon.log store=$T/store
# Policy keys only, so the stored record carries environ too (off by default).
echo '{"defaults": {"capture_environ": true}}' >"$T/config.json"

# The exact CapabilityBoundingSet= of coredumpd.service, read from the template.
caps=$(sed -n 's/^CapabilityBoundingSet=//p' "$SOURCE_DIR/systemd-units/coredumpd.service.in")
bounding=-all$(for c in $caps; do c=${c#CAP_}; printf ',+%s' "${c,,}"; done)
# unshare and sh exec, so $! is the daemon. 9>&- : the daemon must not inherit the lock.
unshare --uts --net sh -c 'hostname coredumpd-sandbox && exec setpriv --bounding-set="$0" --inh-caps=-all \
  --no-new-privs "$@"' "$bounding" "$COREDUMPD" --socket "$sock" --store "$store" \
  --config "$T/config.json" --log-level debug >"$log" 2>&1 9>&- &
pid=$!
PIDS+=($pid)
wait_for 30 test -S "$sock" || fail "daemon did not start listening"
# Effective = bounding set, with one bit per capability the unit names (setpriv refuses bad names).
eff=$(sed -n 's/^CapEff:\s*//p' "/proc/$pid/status") bnd=$(sed -n 's/^CapBnd:\s*//p' "/proc/$pid/status")
n=0; for ((m = 0x$eff; m; m &= m - 1)); do ((++n)); done
[[ $eff == "$bnd" ]] && ((n == $(wc -w <<<"$caps"))) || fail "daemon's CapEff $eff / CapBnd $bnd do not match: $caps"
ok "daemon runs with CapEff=$eff ($caps) and hostname coredumpd-sandbox"

# core_pattern is global: hold the shared lock while it points at our socket, restore on every exit.
exec 9>/run/lock/coredumpd-core_pattern.lock
# Long: other real-kernel tests (a 3 GiB core under ASan) hold it for minutes; we need it ~1 s.
flock -w 600 9 || fail "could not lock /run/lock/coredumpd-core_pattern.lock within 10 minutes"
previous=$(cat /proc/sys/kernel/core_pattern)
# What we set and saved, as CorePatternLock records it (tests/support/core_pattern_state.h): if we
# are SIGKILLed (a ctest timeout), the next test restores $previous instead of our dead socket.
state=/run/coredumpd-test/core_pattern.state
EXIT_HOOKS+=('printf "%s\n" "$previous" >/proc/sys/kernel/core_pattern; rm -f "$state"; exec 9>&-')
mkdir -p "${state%/*}" && printf 'pid %s\nstart %s\nset %s\nprevious %s\n' $$ "$(cut -d' ' -f22 /proc/$$/stat)" \
  "@@$sock" "$previous" >"$state"
echo "@@$sock" >/proc/sys/kernel/core_pattern

# Raise the limit (in case honor_rlimit_core is set), then become nobody and crash.
rc=0
(ulimit -c unlimited && cd / && exec setpriv --reuid=65534 --regid=65534 --clear-groups \
  "$CRASHER" --mode segv -- "arg with space") 9>&- 2>/dev/null || rc=$?
((rc == 128 + 11)) || fail "crasher exited with $rc, expected death by SIGSEGV"

# Bounded wait until the dump is indexed as complete.
info() { "$DUMPCTL" --store "$store" info --json=pretty 2>/dev/null; }
state() { info | "$PYTHON" -c 'import json,sys; print(json.load(sys.stdin).get("state",""))' 2>/dev/null; }
complete() { [[ $(state) == complete ]]; }
wait_for 30 complete || fail "no complete dump in the store within 30 s"
printf '%s\n' "$previous" >/proc/sys/kernel/core_pattern

info >"$T/info.json"
"$PYTHON" - "$T/info.json" "$(uname -n)" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
host = sys.argv[2]
extra = r.get("extra", {})
problems = []
if r.get("uid") != 65534:
    problems.append(f"uid {r.get('uid')}, expected 65534 (nobody)")
if r.get("argv", [])[-1:] != ["arg with space"]:
    problems.append(f"argv {r.get('argv')}")
if r.get("hostname") != host:
    problems.append(f"hostname {r.get('hostname')!r}, expected the crasher's {host!r}")
if not extra.get("environ"):
    problems.append("no environ captured")
if not extra.get("proc", {}).get("fds"):
    problems.append("no fds captured")
if extra.get("collect_errors"):
    problems.append(f"collector errors: {extra['collect_errors']}")
if not r.get("core_size"):
    problems.append("no core stored")
if problems:
    sys.exit("FAIL: " + "; ".join(problems))
print(f"ok: dump {r['id']}: core {r['core_size']} bytes, hostname {r['hostname']!r}, environ and fds read")
PY

id=$("$PYTHON" -c 'import json,sys; print(json.load(open(sys.argv[1]))["id"])' "$T/info.json")
"$DUMPCTL" --store "$store" dump "$id" -o "$T/core" >/dev/null
[[ $(head -c 4 "$T/core" | od -An -c | tr -d ' ') == '177ELF' ]] || fail "dumpctl dump did not give an ELF core"
ok "dumpctl dump gives back an ELF core"

kill -TERM "$pid"
wait_for 25 eval '! alive "$pid"' || fail "daemon did not exit within 25 s of SIGTERM"
rc=0; wait "$pid" || rc=$?
((rc == 0)) || fail "daemon exited with status $rc"
ok "clean exit"
