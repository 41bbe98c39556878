#!/usr/bin/env bash
# Runs one Harvest node with the demo workflows on a managed PostgreSQL:
#   ./scripts/run.sh [harvestd dev flags...]
# Data lives in ./.harvest (created on first run, reused after). Stop with Ctrl-C.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=lib/ensure-postgres.sh
source scripts/lib/ensure-postgres.sh
ensure_postgres
# Built, then exec'd (not go run, which exits 1 after any Ctrl-C): the
# signal reaches harvestd, and its exit status is the script's.
mkdir -p .harvest/bin
go build -o .harvest/bin/harvestd ./cmd/harvestd
exec .harvest/bin/harvestd dev --log-format console "$@"
