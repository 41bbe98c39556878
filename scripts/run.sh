#!/usr/bin/env bash
# Runs one Harvest node with the demo workflows on a managed PostgreSQL:
#   ./scripts/run.sh [harvestd dev flags...]
# Data lives in ./.harvest (created on first run, reused after). Stop with Ctrl-C.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=lib/ensure-postgres.sh
source scripts/lib/ensure-postgres.sh
ensure_postgres
exec go run ./cmd/harvestd dev --log-format console "$@"
