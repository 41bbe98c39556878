#!/usr/bin/env bash
# PostgreSQL's own ceiling for a durable start, measured with pgbench on a
# throwaway server: a transaction of three inserts (claim, execution, event)
# — what one start must commit — at N clients for D seconds.
#   ./scripts/pgbench-ceiling.sh [clients=32] [seconds=20] [fsync=off|on]
# Prints pgbench's tps line. Needs PostgreSQL server binaries and pgbench.
set -euo pipefail
clients=${1:-32}
seconds=${2:-20}
fsync=${3:-off}
bindir=$(dirname "$(command -v initdb 2>/dev/null || ls -d /usr/lib/postgresql/*/bin/initdb | sort -V | tail -1)")
work=$(mktemp -d /tmp/harvest-pgbench.XXXXXX)
chmod 755 "$work"
as_pg() { if [[ "$(id -u)" -eq 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi; }
if [[ "$(id -u)" -eq 0 ]]; then chown postgres "$work"; fi
cleanup() { as_pg "$bindir/pg_ctl" -D "$work/data" -m immediate stop >/dev/null 2>&1 || true; rm -rf "$work"; }
trap cleanup EXIT
as_pg "$bindir/initdb" -D "$work/data" -U postgres --auth=trust -E UTF8 --no-locale >/dev/null
port=$(( 10000 + RANDOM % 20000 )) # below the ephemeral range (32768 and up)
sync=$([[ "$fsync" == on ]] && echo on || echo off)
as_pg "$bindir/pg_ctl" -D "$work/data" -l "$work/pg.log" -w -o "-p $port -k $work -c listen_addresses='' -c fsync=$fsync -c synchronous_commit=$sync -c max_connections=200" start >/dev/null
psql=(psql -h "$work" -p "$port" -U postgres -qX)
"${psql[@]}" -c "CREATE DATABASE bench" >/dev/null
"${psql[@]}" -d bench >/dev/null <<'SQL'
CREATE TABLE claims (name text, key text, id uuid, created_at timestamptz DEFAULT now(), PRIMARY KEY (name, key));
CREATE TABLE runs (id uuid PRIMARY KEY, name text, wid text, state text, created_at timestamptz DEFAULT now());
CREATE TABLE events (id uuid, n bigint, type text, data jsonb, created_at timestamptz DEFAULT now(), PRIMARY KEY (id, n));
SQL
cat > "$work/start.sql" <<'SQL'
\set k random(1, 1000000000)
BEGIN;
INSERT INTO claims (name, key, id) VALUES ('wf', :client_id || '-' || :k || '-' || random(), gen_random_uuid());
INSERT INTO runs (id, name, wid, state) VALUES (gen_random_uuid(), 'wf', :k, 'RUNNING');
INSERT INTO events (id, n, type, data) VALUES (gen_random_uuid(), 0, 'WorkflowStarted', '{"input": {}}');
COMMIT;
SQL
pgbench -h "$work" -p "$port" -U postgres -n -c "$clients" -j 2 -T "$seconds" -f "$work/start.sql" bench 2>/dev/null | grep -E "^tps|latency average"
