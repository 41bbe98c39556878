#!/usr/bin/env bash
# The project's single test command: ./scripts/test.sh [go test flags...]
#
# Tests start their own private PostgreSQL servers (internal/pgtest) from the
# local server binaries, so this script only makes sure those binaries are
# installed. Set HARVEST_TEST_DSN to use an existing server instead.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

# shellcheck source=lib/ensure-postgres.sh
source scripts/lib/ensure-postgres.sh
if [[ -z "${HARVEST_TEST_DSN:-}" ]]; then
	ensure_postgres
fi

go vet ./...
go test -race -count=1 -timeout 30m "$@" ./...

# Each mutating HTTP route has a fuzz target; run each briefly (CI-sized).
fuzztime=${HARVEST_FUZZTIME:-10s}
for target in FuzzStart FuzzSignal FuzzSignalWithStart FuzzCancel FuzzTerminate; do
	go test -run='^$' -fuzz="^${target}\$" -fuzztime="$fuzztime" ./api/
done
