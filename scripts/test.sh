#!/usr/bin/env bash
# The project's single test command: ./scripts/test.sh [go test flags...]
#
# Tests start their own private PostgreSQL servers (internal/pgtest) from the
# local server binaries, so this script only makes sure those binaries are
# installed. Set HARVEST_TEST_DSN to use an existing server instead.
#
# The web UI's tests drive a headless Chromium (internal/browsertest): the
# script installs Debian's chromium when root and it is missing. Without
# it they fail, unless HARVEST_BROWSER=0 opts out (they then skip, saying so).
#
# examples/polyglot's test runs a Python activity server: the script
# installs Debian's python3 when root and it is missing.
#
# Before the tests it runs go vet, harvest-vet (workflow determinism, over
# demo/), staticcheck and go mod tidy -diff; then
# the same checks and the tests of every example app under examples/.
#
# Run as root, it ends with the short profile of the fault-injection suite
# (e2e/, scripts/chaos.sh --short: network namespaces, so root only; about
# three minutes), twice: in clear text, then with the API and every hop over
# mutual TLS (--tls). HARVEST_CHAOS=0 leaves both out.
#
# Last, when a Docker engine answers `docker info`, scripts/compose-test.sh
# (the docker-compose cluster, from locally made base images); it says when
# it is skipped and why. HARVEST_COMPOSE_TEST=0 leaves it out.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

# shellcheck source=lib/ensure-postgres.sh
source scripts/lib/ensure-postgres.sh
if [[ -z "${HARVEST_TEST_DSN:-}" ]]; then
	ensure_postgres
fi
# shellcheck source=lib/ensure-chromium.sh
source scripts/lib/ensure-chromium.sh
ensure_chromium
# shellcheck source=lib/ensure-python.sh
source scripts/lib/ensure-python.sh
ensure_python

go vet ./...
# Workflow code must be deterministic: harvest-vet (package workflowcheck)
# over the demo workflows and Harvest's own (the flow keeper, the batch job).
go run ./cmd/harvest-vet ./demo/... ./internal/flowkeeper/... ./internal/batchop/...
# staticcheck at a pinned version (from the Go module proxy), and a go.mod
# that `go mod tidy` would not change.
go run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...
go mod tidy -diff
go test -race -count=1 -timeout 30m "$@" ./...

# Every example app is a module of its own (a replace to this one): the
# same checks, and its tests.
for example in examples/*/; do
	(
		cd "$example"
		go vet ./...
		go run github.com/harvestd/harvest/cmd/harvest-vet ./...
		go run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...
		go mod tidy -diff
		go test -race -count=1 ./...
	)
done

# Each mutating HTTP route has a fuzz target; run each briefly (CI-sized).
# A count, not a duration: Go 1.26's fuzz coordinator can report its own
# -fuzztime deadline as a failure on a loaded machine (go.dev/issue/75804).
fuzztime=${HARVEST_FUZZTIME:-300x}
for target in FuzzStart FuzzSignal FuzzSignalWithStart FuzzCancel FuzzTerminate; do
	go test -run='^$' -fuzz="^${target}\$" -fuzztime="$fuzztime" ./api/
done

# The fault-injection suite's short profile: every fault type, 0 violations,
# in clear text and over TLS.
if [[ "${HARVEST_CHAOS:-1}" != 0 ]]; then
	if [[ $(id -u) == 0 ]]; then
		if ! command -v nft >/dev/null && command -v apt-get >/dev/null; then
			apt-get install -y -qq nftables >/dev/null 2>&1 || (apt-get update -qq && apt-get install -y -qq nftables) >/dev/null 2>&1 || true
		fi
		scripts/chaos.sh --short
		scripts/chaos.sh --short --tls
	else
		echo "test.sh: the fault-injection suite needs root (network namespaces); run: sudo scripts/chaos.sh --short" >&2
	fi
fi

# The docker-compose cluster, run for real: scripts/compose-test.sh brings up
# docker-compose.cluster.yml from base images made here (no registry needed),
# checks it through the host ports and takes it down (measured on a 2-core
# machine: about 1 min warm, 7 min from a Docker engine with no images,
# 5 of them making the base images and Compose). It runs whenever a
# Docker engine answers `docker info` (so in CI on machines that have one);
# HARVEST_COMPOSE_TEST=0 leaves it out.
if [[ "${HARVEST_COMPOSE_TEST:-1}" == 0 ]]; then
	echo "test.sh: compose test SKIPPED: HARVEST_COMPOSE_TEST=0" >&2
elif ! command -v docker >/dev/null; then
	echo "test.sh: compose test SKIPPED: no docker command on this machine" >&2
elif ! docker_err=$(docker info 2>&1 >/dev/null); then
	echo "test.sh: compose test SKIPPED: \`docker info\` does not answer (no engine, or no access to it): ${docker_err##*$'\n'}" >&2
else
	scripts/compose-test.sh
fi
