# shellcheck shell=bash
# ensure_postgres: make sure PostgreSQL server binaries (initdb, postgres)
# exist, installing Debian's postgresql package when root. Harvest only
# uses the binaries: it runs its own private servers, never the package's.
have_pg_binaries() {
	command -v initdb >/dev/null 2>&1 && return 0
	compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null
}

ensure_postgres() {
	have_pg_binaries && return 0
	echo "harvest: no PostgreSQL server binaries found; installing postgresql" >&2
	if [[ "$(id -u)" -ne 0 ]]; then
		echo "harvest: need root to install postgresql (or install it yourself, or point Harvest at a server)" >&2
		return 1
	fi
	export DEBIAN_FRONTEND=noninteractive
	apt-get update
	# The package may create and start its own cluster on port 5432; Harvest
	# never uses it.
	apt-get install -y --no-install-recommends postgresql
	have_pg_binaries || {
		echo "harvest: postgresql installed but initdb still not found" >&2
		return 1
	}
}
