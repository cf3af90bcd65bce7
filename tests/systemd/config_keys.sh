#!/usr/bin/env bash
# Every key daemon/config.cc accepts appears in config/coredumpd.json (as a setting or, for test-only
# keys and rule conditions, in a comment), so the shipped file stays the complete reference.
# shipped_config_test checks the values; this checks nothing was left out when a key is added.
source "$(dirname "$0")/lib.sh"
"$PYTHON" - "$SOURCE_DIR/daemon/config.cc" "$SOURCE_DIR/config/coredumpd.json" <<'PY'
import re, sys
src, shipped = (open(p).read() for p in sys.argv[1:3])
keys = set(re.findall(r'\b(?:key|k2)\s*==\s*"([A-Za-z_][A-Za-z0-9_]*)"', src))
keys |= set(re.findall(r'\.contains\("([A-Za-z_][A-Za-z0-9_]*)"\)', src))
if len(keys) < 10:
    sys.exit(f"FAIL: found only {sorted(keys)} in config.cc; has its parser changed shape?")
missing = sorted(k for k in keys if f'"{k}"' not in shipped)
if missing:
    sys.exit(f"FAIL: config/coredumpd.json does not mention {missing}")
print(f"ok: all {len(keys)} keys of daemon/config.cc are in config/coredumpd.json")
PY
