#!/usr/bin/env bash
# The fault-injection suite (e2e/, issue 8): real harvestd nodes in network
# namespaces under kills, pauses, partitions, isolation, raft leader loss,
# PostgreSQL restarts and shard drains/adds, then the exactly-once checker.
#
#   sudo scripts/chaos.sh                    # long profile, 30 minutes of load
#   sudo scripts/chaos.sh --duration 2h      # longer
#   sudo scripts/chaos.sh --short            # the CI-sized profile (a few minutes)
#   sudo scripts/chaos.sh --short --tls      # the API, forwarding, node requests and raft over mutual TLS
#   sudo scripts/chaos.sh --broken           # harvestd built with -tags harvest_broken_claim:
#                                            # the checker must report violations
# Options: --nodes N (3..9), --workers N, --seed N, --keep (keep the work
# directory even on success), --timeout D (go test timeout, default duration + 30m).
#
# Needs root, iproute2, util-linux (unshare, runuser), the PostgreSQL server
# binaries and, for silent partitions, nftables. Everything runs inside a
# private net+mount+pid namespace and disappears with it. Both binaries are
# built first: the sandbox has no network.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

profile=long duration=30m timeout="" tags=""
while [[ $# -gt 0 ]]; do
	case $1 in
	--duration) duration=$2; shift 2 ;;
	--short) profile=short; shift ;;
	--nodes) export HARVEST_E2E_NODES=$2; shift 2 ;;
	--workers) export HARVEST_E2E_WORKERS=$2; shift 2 ;;
	--seed) export HARVEST_E2E_SEED=$2; shift 2 ;;
	--keep) export HARVEST_E2E_KEEP=1; shift ;;
	--tls) export HARVEST_E2E_TLS=1; shift ;;
	--broken) export HARVEST_E2E_BROKEN=1; tags="-tags harvest_broken_claim"; shift ;;
	--timeout) timeout=$2; shift 2 ;;
	-h|--help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "chaos.sh: unknown option $1 (try --help)" >&2; exit 2 ;;
	esac
done
if [[ $(id -u) != 0 ]]; then
	echo "chaos.sh: needs root (network namespaces, bridge, nftables)" >&2
	exit 1
fi
command -v nft >/dev/null || echo "chaos.sh: nft not found: partitions fall back to blackhole routes (apt-get install -y nftables for silent drops)" >&2

if [[ -z $timeout ]]; then
	# duration + 30 minutes for setup, the scheduled faults, re-delivery and checks
	mins=$(go run ./e2e/internal/durmin "$duration")
	timeout=$((mins + 30))m
fi

work=$(mktemp -d /tmp/harvest-chaos-XXXXXX)
trap 'rm -rf "$work"' EXIT
# shellcheck disable=SC2086
go build $tags -o "$work/harvestd" ./cmd/harvestd
go test -c -o "$work/e2e.test" ./e2e

export HARVEST_E2E=1 HARVEST_E2E_PROFILE=$profile HARVEST_E2E_DURATION=$duration HARVEST_E2E_HARVESTD=$work/harvestd
cd e2e
"$work/e2e.test" -test.run '^TestChaos$' -test.v -test.count 1 -test.timeout "$timeout"
