#!/usr/bin/env bash
# Every key daemon/policy/config.cc (and parse_retention() in store/retention.cc) accepts appears
# in config/coredumpd.json, as a setting or (test-only keys, rule conditions) in a comment, so the
# shipped file stays the complete reference.
# shipped_config_test checks the values; this checks nothing was left out when a key is added.
source "$(dirname "$0")/lib.sh"
"$PYTHON" - "$SOURCE_DIR/config/coredumpd.json" "$SOURCE_DIR/daemon/policy/config.cc" \
  "$SOURCE_DIR/store/retention.cc" <<'PY'
import re, sys
shipped = open(sys.argv[1]).read()
config_cc = open(sys.argv[2]).read()
# Only parse_retention() of retention.cc: the rest compares other keys.
retention = open(sys.argv[3]).read().partition("parse_retention(")[2].partition("\n}\n")[0]
src = config_cc + retention
keys = set(re.findall(r'\b(?:key|k2)\s*==\s*"([A-Za-z_][A-Za-z0-9_]*)"', src))
keys |= set(re.findall(r'\.contains\("([A-Za-z_][A-Za-z0-9_]*)"\)', src))
if len(keys) < 10:
    sys.exit(f"FAIL: found only {sorted(keys)} in config.cc; has its parser changed shape?")
missing = sorted(k for k in keys if f'"{k}"' not in shipped)
if missing:
    sys.exit(f"FAIL: config/coredumpd.json does not mention {missing}")
print(f"ok: all {len(keys)} configuration keys are in config/coredumpd.json")
PY
