#!/bin/sh
# Entrypoint of the PostgreSQL image scripts/lib/base-images.sh makes from
# Debian's postgresql package, for a machine that cannot pull postgres:17.
# It does what docker-compose.cluster.yml asks of the official image's
# entrypoint, and no more:
#   - POSTGRES_PASSWORD (required), POSTGRES_USER (default postgres) and
#     POSTGRES_DB (default: the user) on the first start of an empty PGDATA
#     (default /var/lib/postgresql/data);
#   - /docker-entrypoint-initdb.d/*.sql, *.sql.gz and *.sh, in name order,
#     run once, by a server listening only on its Unix socket;
#   - then the server in the foreground, on every address (port 5432),
#     password (scram-sha-256) for TCP clients, as the user postgres.
set -eu

PGDATA=${PGDATA:-/var/lib/postgresql/data}
export PGDATA

if [ "${1:-}" = "" ] || [ "${1#-}" != "$1" ]; then
	set -- postgres "$@"
fi

if [ "$1" = postgres ] && [ "$(id -u)" = 0 ]; then
	mkdir -p "$PGDATA" /var/run/postgresql
	chown -R postgres:postgres "$PGDATA" /var/run/postgresql
	chmod 0700 "$PGDATA"
	exec setpriv --reuid=postgres --regid=postgres --init-groups "$0" "$@"
fi

if [ "$1" = postgres ] && [ ! -s "$PGDATA/PG_VERSION" ]; then
	: "${POSTGRES_PASSWORD:?POSTGRES_PASSWORD must be set for the first start}"
	user=${POSTGRES_USER:-postgres}
	db=${POSTGRES_DB:-$user}
	pwfile=$(mktemp)
	printf '%s\n' "$POSTGRES_PASSWORD" >"$pwfile"
	initdb --username="$user" --pwfile="$pwfile" --encoding=UTF8 --locale=C.UTF-8 \
		--auth-local=trust --auth-host=scram-sha-256 -D "$PGDATA" >/dev/null
	rm -f "$pwfile"
	echo "host all all all scram-sha-256" >>"$PGDATA/pg_hba.conf"
	echo "listen_addresses = '*'" >>"$PGDATA/postgresql.conf"

	pg_ctl -D "$PGDATA" -o "-c listen_addresses=''" -w start >/dev/null
	export PGUSER="$user"
	if [ "$db" != postgres ]; then
		psql -v ON_ERROR_STOP=1 -q --dbname postgres --set db="$db" <<-'EOSQL'
			CREATE DATABASE :"db";
		EOSQL
	fi
	for f in /docker-entrypoint-initdb.d/*; do
		case "$f" in
		*.sh)
			echo "$0: running $f"
			# shellcheck disable=SC1090 # an init script of the user's
			if [ -x "$f" ]; then "$f"; else . "$f"; fi
			;;
		*.sql)
			echo "$0: running $f"
			psql -v ON_ERROR_STOP=1 -q --dbname "$db" -f "$f"
			;;
		*.sql.gz)
			echo "$0: running $f"
			gunzip -c "$f" | psql -v ON_ERROR_STOP=1 -q --dbname "$db"
			;;
		*) [ ! -e "$f" ] || echo "$0: ignoring $f" ;;
		esac
	done
	unset PGUSER
	pg_ctl -D "$PGDATA" -m fast -w stop >/dev/null
	echo "$0: PostgreSQL init process complete; ready for start up."
fi

exec "$@"
