#!/usr/bin/env bash
# Stops the PostgreSQL that scripts/fleet/pg-up.sh started in $PG_DIR (fast shutdown: clients are
# disconnected) and removes $PG_DIR, unless KEEP=1 (a restart: pg-up.sh with PG_REUSE=1).
# Does nothing, successfully, when no server runs there.
#   PG_DIR  the cluster's directory (required)
#   KEEP    1: keep $PG_DIR (data and logs)
#   PG_BIN  PostgreSQL's programs (default /usr/lib/postgresql/15/bin)
set -uo pipefail
: "${PG_DIR:?set PG_DIR to the directory of the cluster}"
KEEP=${KEEP:-0}
PG_BIN=${PG_BIN:-/usr/lib/postgresql/15/bin}
if [ "$(id -u)" = 0 ]; then as=(runuser -u postgres --); else as=(); fi
if [ -e "$PG_DIR/data/postmaster.pid" ]; then
  "${as[@]}" "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -m fast -w -t 30 stop >/dev/null 2>&1 \
    || "${as[@]}" "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -m immediate -w -t 30 stop >/dev/null 2>&1 || true
fi
[ "$KEEP" = 1 ] || rm -rf "$PG_DIR"
