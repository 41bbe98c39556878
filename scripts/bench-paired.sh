#!/usr/bin/env bash
# Paired benchmarks of several builds on one machine (docs/performance.md):
#   ./scripts/bench-paired.sh OUT_DIR NAME=BIN_DIR NAME=BIN_DIR [...]
# Each BIN_DIR holds a build's harvestd, harvestctl and engine.test
# (go build -o DIR ./cmd/harvestd ./cmd/harvestctl && go test -c -o DIR/engine.test ./engine/),
# e.g. old=/tmp/old new=/tmp/new. Every benchmark runs for all the builds back to back, their
# order rotated each round, so that a machine whose speed drifts from one minute to the next
# slows them alike: ROUNDS rounds (default 6) of the engine's benchmarks (BENCHTIME, default 2s,
# each in a fresh test binary), then HTTP_ROUNDS rounds (default 3) of scripts/bench-node.sh in
# the modes start, dedup, signal, e2e --activities 1 and 3 (WARM 5 s, DURATION 8s unless set).
# Results: OUT_DIR/engine.txt (one line per benchmark run, "NAME rN Benchmark…") and
# OUT_DIR/http-MODE-NAME-rN.txt.
set -euo pipefail
out=${1:?usage: bench-paired.sh OUT_DIR NAME=BIN_DIR NAME=BIN_DIR ...}
shift
(($# >= 2)) || { echo "bench-paired.sh: give at least two builds" >&2; exit 2; }
names=() dirs=()
for arg in "$@"; do names+=("${arg%%=*}"); dirs+=("${arg#*=}"); done
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
mkdir -p "$out"
export WARM=${WARM:-5} DURATION=${DURATION:-8s}
benches=(StartKeyed DedupHit SignalKeyed OneActivityWorkflow GroupCommit SignalSingle Terminate)

# order prints the builds' indexes for round r, rotated by r.
order() {
	local r=$1 n=${#names[@]} i
	for ((i = 0; i < n; i++)); do echo $(((i + r) % n)); done
}

for ((r = 1; r <= ${ROUNDS:-6}; r++)); do
	for b in "${benches[@]}"; do
		for i in $(order "$r"); do
			(cd "$root/engine" && "${dirs[$i]}/engine.test" -test.run '^$' -test.bench "^Benchmark$b\$" \
				-test.benchtime "${BENCHTIME:-2s}" -test.benchmem) 2>&1 | grep '^Benchmark' | sed "s/^/${names[$i]} r$r /" >>"$out/engine.txt"
		done
	done
done
for ((r = 1; r <= ${HTTP_ROUNDS:-3}; r++)); do
	for mode in start dedup signal e2e1 e2e3; do
		args=("$mode")
		[[ $mode == e2e1 ]] && args=(e2e --activities 1)
		[[ $mode == e2e3 ]] && args=(e2e --activities 3)
		for i in $(order "$r"); do
			"$root/scripts/bench-node.sh" "${dirs[$i]}" "${args[@]}" >"$out/http-$mode-${names[$i]}-r$r.txt" 2>&1
		done
	done
done
