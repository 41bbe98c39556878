#!/usr/bin/env bash
# Long histories side by side: e2e noop chains of 10 and 100 activities, the state cache on and off,
# alternated for ROUNDS rounds (default 3), then one round of 1,000-activity chains with the cache on:
#   ./scripts/bench-chain.sh BIN_DIR [ROUNDS]
# Each run is scripts/bench-node.sh (a fresh single node, 32 clients, WARM then DURATION seconds); the
# cache is turned off with HARVEST_STATE_CACHE_ENTRIES=0. Prints one line per run: cache, activities
# per workflow, workflows/s, activities/s, p50 workflow latency (ms), workflows completed.
set -euo pipefail
bin=${1:?usage: bench-chain.sh BIN_DIR [ROUNDS]}
rounds=${2:-3}
here=$(dirname "$0")

run() { # cache activities
  local entries=4096
  if [[ $1 == off ]]; then entries=0; fi
  HARVEST_STATE_CACHE_ENTRIES=$entries "$here/bench-node.sh" "$bin" e2e --activities "$2" |
    awk -v c="$1" -v n="$2" '
      $1 == "throughput" { t = $2 }
      $1 == "latency" && $2 == "p50" { p = $3 }
      $1 == "completed" { k = $2 }
      END { printf "%-5s %5d %8.1f wf/s %8.0f act/s  p50 %9.1f ms  %6d completed\n", c, n, t, t * n, p, k }'
}

for round in $(seq 1 "$rounds"); do
  echo "round $round"
  for n in 10 100; do
    for cache in on off; do run "$cache" "$n"; done
  done
done
echo "1,000-activity chains"
WARM=0 DURATION=${LONG_DURATION:-30s} run on 1000
