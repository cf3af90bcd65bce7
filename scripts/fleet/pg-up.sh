#!/usr/bin/env bash
# A throw-away PostgreSQL 15 (Debian 12's postgresql-15) for the fleet index's tests and demo:
# initdb in $PG_DIR, trust authentication on 127.0.0.1:$PG_PORT and a unix socket in $PG_DIR only,
# fsync off (test data), one database $PG_DB. Stop it with scripts/fleet/pg-down.sh.
#
#   PG_DIR    where the cluster lives (required; created; must not hold a running server)
#   PG_PORT   TCP port on 127.0.0.1, also the socket's name .s.PGSQL.<port> (default 45432)
#   PG_DB     the database created (default fleet)
#   PG_REUSE  1: start the cluster already in $PG_DIR (a restart after pg-down.sh with KEEP=1)
#   PG_BIN    PostgreSQL's programs (default /usr/lib/postgresql/15/bin)
# As root the server runs as the user postgres (initdb refuses root); otherwise as the caller.
# Prints, and writes to $PG_DIR/pg.env, the libpq connection string: PG_CONNINFO=...
set -euo pipefail
: "${PG_DIR:?set PG_DIR to a directory for the cluster}"
PG_PORT=${PG_PORT:-45432}
PG_DB=${PG_DB:-fleet}
PG_REUSE=${PG_REUSE:-0}
PG_BIN=${PG_BIN:-/usr/lib/postgresql/15/bin}
[ -x "$PG_BIN/initdb" ] || { echo "pg-up: no $PG_BIN/initdb (apt-get install postgresql-15)" >&2; exit 1; }
if [ "$(id -u)" = 0 ]; then as=(runuser -u postgres --); owner=postgres; else as=(); owner=$(id -un); fi

if [ -e "$PG_DIR/data/postmaster.pid" ] && "${as[@]}" "$PG_BIN/pg_ctl" -D "$PG_DIR/data" status >/dev/null 2>&1; then
  echo "pg-up: a server is running in $PG_DIR; stop it with pg-down.sh first" >&2; exit 1
fi
if [ "$PG_REUSE" != 1 ]; then
  rm -rf "$PG_DIR/data"
  mkdir -p "$PG_DIR"
  chown "$owner" "$PG_DIR"; chmod 700 "$PG_DIR"
  # --no-sync: nothing here needs to survive a power cut.
  "${as[@]}" "$PG_BIN/initdb" -D "$PG_DIR/data" -U postgres -A trust -E UTF8 --locale=C.UTF-8 --no-sync \
      >"$PG_DIR/initdb.log" 2>&1 || { cat "$PG_DIR/initdb.log" >&2; exit 1; }
  cat >>"$PG_DIR/data/postgresql.conf" <<CONF
listen_addresses = '127.0.0.1'
port = $PG_PORT
unix_socket_directories = '$PG_DIR'
fsync = off
synchronous_commit = off
full_page_writes = off
shared_buffers = 32MB
max_connections = 50
CONF
fi
"${as[@]}" "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/server.log" -w -t 60 start >/dev/null \
  || { tail -20 "$PG_DIR/server.log" >&2; exit 1; }
if [ "$PG_REUSE" != 1 ]; then
  "${as[@]}" "$PG_BIN/createdb" -h "$PG_DIR" -p "$PG_PORT" -U postgres "$PG_DB"
fi
echo "PG_CONNINFO='host=$PG_DIR port=$PG_PORT user=postgres dbname=$PG_DB'" | tee "$PG_DIR/pg.env"
