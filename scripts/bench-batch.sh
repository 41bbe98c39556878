#!/usr/bin/env bash
# Issue 29's batch goal, side by side: keyed starts of one workflow from 32
# clients (harvestctl bench --mode start) against batch_start items, 100 a
# batch, from 8 clients (--mode batch), alternated for ROUNDS rounds, each
# on a fresh node (scripts/bench-node.sh), with the ratio of each round:
#   ./scripts/bench-batch.sh BIN_DIR [rounds=3] [harvestctl bench flags...]
# BIN_DIR holds harvestd and harvestctl builds; WARM, DURATION, TLS and AUTH
# pass on to bench-node.sh. Default flags: --activities 0 (noop_chain).
set -euo pipefail
bin=${1:?usage: bench-batch.sh BIN_DIR [rounds] [flags]}
rounds=${2:-3}
shift $(($# >= 2 ? 2 : 1))
flags=("$@")
((${#flags[@]})) || flags=(--activities 0)
here=$(dirname "${BASH_SOURCE[0]}")
rate() { awk '$1 == "throughput" {print $2} $1 == "items" {print $2}' | tail -1; }
for r in $(seq 1 "$rounds"); do
	single=$(CONC=32 "$here/bench-node.sh" "$bin" start "${flags[@]}" | tee /dev/stderr | rate)
	batch=$(CONC=8 "$here/bench-node.sh" "$bin" batch --batch-size 100 "${flags[@]}" | tee /dev/stderr | rate)
	awk -v r="$r" -v s="$single" -v b="$batch" \
		'BEGIN { printf "round %d: single %.0f starts/s, batch %.0f items/s, ratio %.2f\n", r, s, b, b / s }'
done
