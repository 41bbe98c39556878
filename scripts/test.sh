#!/usr/bin/env bash
# The project's single test command: ./scripts/test.sh [go test flags...]
#
# Tests start their own private PostgreSQL servers (internal/pgtest) from the
# local server binaries, so this script only makes sure those binaries are
# installed. Set HARVEST_TEST_DSN to use an existing server instead.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

have_pg_binaries() {
	command -v initdb >/dev/null 2>&1 && return 0
	compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null
}

if [[ -z "${HARVEST_TEST_DSN:-}" ]] && ! have_pg_binaries; then
	echo "test.sh: no PostgreSQL server binaries found; installing postgresql" >&2
	if [[ "$(id -u)" -ne 0 ]]; then
		echo "test.sh: need root to install postgresql (or install it yourself, or set HARVEST_TEST_DSN)" >&2
		exit 1
	fi
	export DEBIAN_FRONTEND=noninteractive
	apt-get update
	# The package may create and start its own cluster on port 5432; the
	# tests never use it (they run private servers on their own sockets).
	apt-get install -y --no-install-recommends postgresql
	have_pg_binaries || {
		echo "test.sh: postgresql installed but initdb still not found" >&2
		exit 1
	}
fi

go vet ./...
go test -race -count=1 -timeout 30m "$@" ./...

# Each mutating HTTP route has a fuzz target; run each briefly (CI-sized).
fuzztime=${HARVEST_FUZZTIME:-10s}
for target in FuzzStart FuzzSignal FuzzSignalWithStart FuzzCancel FuzzTerminate; do
	go test -run='^$' -fuzz="^${target}\$" -fuzztime="$fuzztime" ./api/
done
