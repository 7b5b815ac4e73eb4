#!/bin/sh
# PostgreSQL actions and probe for graphs/database.ts, run by the okt sidecar (see graphs/database.sidecar.yaml).
#   pg.sh start    create the cluster if missing, start it, wait until it accepts connections (idempotent)
#   pg.sh backup   pg_dump (custom format) into the backup dir, then raise Running
#   pg.sh stop     fast shutdown (idempotent)
#   pg.sh verify   pg_restore --list of the newest dump in the backup dir (the in-cluster demo's backup Job wrote it)
#   pg.sh probe    pg_isready: exit 0 when the server accepts connections
#   pg.sh supervise  in a Pod, the application container's main process: runs PostgreSQL there, started
#                  and stopped as $OKT_PG_DIR/control says. With OKT_PG_SUPERVISED=1 (the sidecar
#                  container, sharing that volume), start and stop write that file and wait for the
#                  server over its socket: a restart of the sidecar's container leaves the server running.
# Environment: OKT_PG_DIR (data/, socket/, backups/, postgres.log live there; default /tmp/okt-postgres),
# OKT_PG_PORT (default 55432), OKT_PG_BACKUP_DIR (default $OKT_PG_DIR/backups), OKT_PG_BIN (default
# /usr/lib/postgresql/15/bin), OKT_PG_OS_USER (default postgres), OKT_PARAM_database (default postgres).
# The server listens only on its unix socket (listen_addresses=''), with trust auth for local users.
# initdb and postgres refuse to run as root: run as root, this script prepares the directories and
# runs itself again as OKT_PG_OS_USER through runuser.
set -eu
BIN=${OKT_PG_BIN:-/usr/lib/postgresql/15/bin}
DIR=${OKT_PG_DIR:-/tmp/okt-postgres}
PORT=${OKT_PG_PORT:-55432}
DATA=$DIR/data
SOCK=$DIR/socket
BACKUPS=${OKT_PG_BACKUP_DIR:-$DIR/backups}
OS_USER=${OKT_PG_OS_USER:-postgres}
action=${1:?usage: pg.sh start|backup|verify|stop|probe}

if [ "$action" = probe ]; then
  exec "$BIN/pg_isready" -h "$SOCK" -p "$PORT" -t 3
fi

if [ "$(id -u)" = 0 ]; then
  mkdir -p "$DIR" "$SOCK" "$BACKUPS"
  chown "$OS_USER" "$DIR" "$SOCK" "$BACKUPS"
  exec runuser -u "$OS_USER" -- "$0" "$@"
fi

running() { "$BIN/pg_ctl" -D "$DATA" status >/dev/null 2>&1; }
start_server() {
  mkdir -p "$SOCK"
  if [ ! -s "$DATA/PG_VERSION" ]; then
    echo "creating a cluster in $DATA"
    "$BIN/initdb" -D "$DATA" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 >"$DIR/initdb.log" 2>&1 \
      || { cat "$DIR/initdb.log" >&2; return 1; }
  fi
  if ! running; then
    "$BIN/pg_ctl" -D "$DATA" -l "$DIR/postgres.log" -w -t 120 \
      -o "-p $PORT -k $SOCK -c listen_addresses=''" start
  fi
}
# The supervisor's wish, written whole (rename) so it never reads half a word.
wish() { echo "$1" >"$DIR/control.partial" && mv "$DIR/control.partial" "$DIR/control"; }
# pg_isready: 0 accepting, 1 starting or stopping, 2 no response.
answers() { "$BIN/pg_isready" -q -h "$SOCK" -p "$PORT"; }

if [ "${OKT_PG_SUPERVISED:-}" = 1 ]; then
  case "$action" in
    start) wish start; until answers; do sleep 0.2; done; echo "postgres accepts connections on $SOCK port $PORT"; exit 0 ;;
    stop)
      wish stop
      while :; do
        code=0; answers || code=$?
        [ "$code" = 2 ] && break
        sleep 0.2
      done
      echo "postgres is stopped"; exit 0 ;;
  esac
fi

case "$action" in
  supervise)
    stopping=
    trap 'stopping=1' TERM INT
    echo "supervising postgres in $DATA: $DIR/control says start or stop"
    while [ -z "$stopping" ]; do
      case "$(cat "$DIR/control" 2>/dev/null || true)" in
        start) running || start_server || true ;;
        stop) if running; then "$BIN/pg_ctl" -D "$DATA" -m fast -w -t 120 stop; fi ;;
      esac
      sleep 0.5 &
      wait $! || true
    done
    if running; then "$BIN/pg_ctl" -D "$DATA" -m fast -w -t 60 stop; fi
    ;;
  start)
    start_server
    until answers; do sleep 0.2; done
    echo "postgres accepts connections on $SOCK port $PORT"
    ;;
  backup)
    mkdir -p "$BACKUPS"
    db=${OKT_PARAM_database:-postgres}
    file="$BACKUPS/$db-$(date -u +%Y%m%dT%H%M%SZ)-${OKT_OPERATION_ID:-manual}.dump"
    "$BIN/pg_dump" -h "$SOCK" -p "$PORT" -U postgres -Fc -f "$file.partial" "$db"
    mv "$file.partial" "$file"
    echo "backup written to $file"
    ;;
  verify)
    latest=$(ls -1t "$BACKUPS"/*.dump 2>/dev/null | head -n 1)
    [ -n "$latest" ] || { echo "no backup in $BACKUPS" >&2; exit 1; }
    listing=$("$BIN/pg_restore" --list "$latest")
    echo "backup verified: $latest ($(printf '%s\n' "$listing" | grep -vc '^;' || true) entries)"
    ;;
  stop)
    if running; then "$BIN/pg_ctl" -D "$DATA" -m fast -w -t 120 stop; fi
    echo "postgres is stopped"
    ;;
  *)
    echo "unknown action $action" >&2
    exit 2
    ;;
esac
