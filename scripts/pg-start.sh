#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for the services' tests: a new cluster in a temp directory,
# listening on 127.0.0.1 only, on a free port, with a database `dpdist`.
#
#   eval "$(scripts/pg-start.sh)"      # exports DPDIST_TEST_POSTGRES and DPDIST_PG_DIR
#   scripts/pg-start.sh stop DIR       # stops the cluster in DIR and deletes DIR
#
# The server binaries are Debian's (`apt-get install postgresql`), found under
# /usr/lib/postgresql/*/bin unless PG_BIN names the directory. PostgreSQL refuses to run as
# root, so as root the cluster belongs to the `postgres` user the Debian package creates.
set -euo pipefail

pg_bin() {
  if [ -n "${PG_BIN:-}" ]; then echo "$PG_BIN"; return; fi
  local d
  d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
  if [ -z "$d" ] || [ ! -x "$d/initdb" ]; then
    echo "pg-start.sh: no PostgreSQL server binaries under /usr/lib/postgresql/*/bin (apt-get install postgresql, or set PG_BIN)" >&2
    exit 1
  fi
  echo "$d"
}

as_owner() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

if [ "${1:-}" = stop ]; then
  dir=${2:?usage: pg-start.sh stop DIR}
  bin=$(pg_bin)
  if [ -f "$dir/data/postmaster.pid" ]; then
    as_owner "$bin/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null || true
  fi
  rm -rf "$dir"
  exit 0
fi

bin=$(pg_bin)
dir=$(mktemp -d "${TMPDIR:-/tmp}/dpdist-pg.XXXXXX")
chmod 755 "$dir"
if [ "$(id -u)" = 0 ]; then
  if ! id postgres >/dev/null 2>&1; then
    echo "pg-start.sh: running as root, and there is no 'postgres' user to own the cluster" >&2
    exit 1
  fi
  chown postgres "$dir"
fi

# A free port: bind port 0 and read back what the kernel chose (a small race with other
# processes, retried below if the server cannot bind it).
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

as_owner "$bin/initdb" -D "$dir/data" -U postgres --auth=trust --no-sync -E UTF8 >"$dir/initdb.log" 2>&1 || {
  cat "$dir/initdb.log" >&2; exit 1; }
started=
for _ in 1 2 3 4 5; do
  port=$(free_port)
  # fsync off: a test cluster whose crash safety is not under test (a node's kill -9 is a
  # crash of the node's process, not of PostgreSQL).
  if as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 30 \
      -o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c fsync=off -c max_connections=300" start >/dev/null; then
    started=1
    break
  fi
done
if [ -z "$started" ]; then
  cat "$dir/server.log" >&2
  exit 1
fi
as_owner "$bin/createdb" -h 127.0.0.1 -p "$port" -U postgres dpdist
echo "export DPDIST_TEST_POSTGRES=postgres://postgres@127.0.0.1:$port/dpdist"
echo "export DPDIST_PG_DIR=$dir"
