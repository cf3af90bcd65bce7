#!/usr/bin/env bash
# (c) sd_notify: READY=1, STATUS=, WATCHDOG=1 and STOPPING=1 to $NOTIFY_SOCKET (notify_check.py).
source "$(dirname "$0")/lib.sh"
"$PYTHON" "$HERE/notify_check.py" "$COREDUMPD" "$SOURCE_DIR/config/coredumpd.json" "$T"
