#!/usr/bin/env bash
# Keyed starts against a fresh three-node local cluster (scripts/local-cluster.sh: raft catalog,
# two shards on one PostgreSQL, tokens, TLS unless HARVEST_CLUSTER_TLS=0), with the CPU every
# process spent:
#   ./scripts/bench-cluster.sh [MODE ...] [-- harvestctl bench flags]
# MODE (default: one spread routing), each run ROUNDS times, alternated:
#   one      every request to n1, which forwards what it does not own
#   spread   round-robin over n1, n2, n3 (each forwards what it does not own)
#   routing  n1 with harvestctl bench --routing: each keyed start straight to its shard's owner
#   idle     every request to the node that owns no shard: every start is forwarded once
#            (idle against routing, where none is, is the latency a forward adds)
# Every run: WARM seconds of warm-up (default 5), then DURATION (10s) at CONC clients (32); it
# prints the summary and the CPU per operation of each harvestd, of PostgreSQL (every process
# under it) and of harvestctl. ROUNDS defaults to 2. The cluster lives in a temporary state
# directory on random ports and is taken down at the end.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
modes=() extra=()
while [[ $# -gt 0 ]]; do
  if [[ $1 == -- ]]; then shift; extra=("$@"); break; fi
  modes+=("$1"); shift
done
[[ ${#modes[@]} -gt 0 ]] || modes=(one spread routing)
for m in "${modes[@]}"; do
  [[ $m =~ ^(one|spread|routing|idle)$ ]] || { echo "bench-cluster: unknown mode $m" >&2; exit 2; }
done
[[ ${#extra[@]} -gt 0 ]] || extra=(--activities 0)
rounds=${ROUNDS:-2} warm=${WARM:-5} conc=${CONC:-32} duration=${DURATION:-10s}

state=$(mktemp -d /tmp/harvest-bench-cluster.XXXXXX)
chmod 755 "$state"
# Ports stay below the kernel's ephemeral range (32768 and up), where a
# client connection may hold one.
p=$((10000 + RANDOM % 20000))
export HARVEST_CLUSTER_DIR=$state HARVEST_CLUSTER_PG_PORT=$p \
  HARVEST_CLUSTER_HTTP_PORTS="$((p + 1)) $((p + 2)) $((p + 3))" \
  HARVEST_CLUSTER_GOSSIP_PORTS="$((p + 4)) $((p + 5)) $((p + 6))" \
  HARVEST_CLUSTER_RAFT_PORTS="$((p + 7)) $((p + 8)) $((p + 9))"
cleanup() { "$ROOT/scripts/local-cluster.sh" down >/dev/null 2>&1 || true; rm -rf "$state"; }
trap cleanup EXIT
"$ROOT/scripts/local-cluster.sh" up >"$state/up.log" 2>&1 || { cat "$state/up.log" >&2; exit 1; }
HARVEST_TOKEN="$(cat "$state/admin.token")"
export HARVEST_TOKEN
scheme=http
if [[ -s $state/certs/ca.pem ]]; then scheme=https; export HARVEST_CA_CERT=$state/certs/ca.pem; fi
# shellcheck source=/dev/null
source "$state/cluster.env"
read -r -a http <<<"$HTTP_PORTS"
url() { echo "$scheme://127.0.0.1:${http[$1]}"; }
ctl="$state/bin/harvestctl"

# ticks of user+system CPU of a process and everything under it (reaped children included)
cpu_ticks() {
  local total=0 p s
  local -a todo=("$1")
  while ((${#todo[@]})); do
    p=${todo[0]}
    todo=("${todo[@]:1}")
    s=$(awk '{print $14+$15+$16+$17}' "/proc/$p/stat" 2>/dev/null) || continue
    total=$((total + s))
    for c in $(cat /proc/"$p"/task/*/children 2>/dev/null); do todo+=("$c"); done
  done
  echo "$total"
}
pids=("$(cat "$state/n1.pid")" "$(cat "$state/n2.pid")" "$(cat "$state/n3.pid")" "$(head -n 1 "$PG_DIR/data/postmaster.pid")")
ticks() { for pid in "${pids[@]}"; do printf '%s ' "$(cpu_ticks "$pid")"; done; }

# member i's own shards, from its GET /cluster/members: "0 1", or "" for none
shards_of() {
  curl -sf ${HARVEST_CA_CERT:+--cacert "$HARVEST_CA_CERT"} -H "Authorization: Bearer $HARVEST_TOKEN" \
    "$(url "$1")/api/harvest/cluster/members" |
    python3 -c 'import json, sys; print(" ".join(str(s) for m in json.load(sys.stdin)["members"] if m["self"] for s in m["shards"] or []))'
}
# the first node whose own shards match the pattern
node_with() {
  for i in 0 1 2; do [[ $(shards_of "$i") =~ $1 ]] && { echo "$i"; return; }; done
  echo "bench-cluster: no node owns shards matching $1" >&2; exit 1
}
addrs() {
  case $1 in
  one | routing) echo "--addr $(url 0)" ;;
  spread) echo "--addr $(url 0) --addr $(url 1) --addr $(url 2)" ;;
  idle) echo "--addr $(url "$(node_with '^$')")" ;;
  esac
}
run() {
  local mode=$1 flags
  flags=$(addrs "$mode")
  [[ $mode != routing ]] || flags+=" --routing"
  # shellcheck disable=SC2086 # flags are words
  "$ctl" bench $flags --mode start --concurrency "$conc" --duration "${warm}s" --quiet "${extra[@]}" >/dev/null || true
  read -r -a t0 <<<"$(ticks)"
  # shellcheck disable=SC2086
  /usr/bin/time -f "%U %S" -o "$state/ctl.cpu" "$ctl" bench $flags --mode start --concurrency "$conc" \
    --duration "$duration" --quiet "${extra[@]}" >"$state/summary"
  read -r -a t1 <<<"$(ticks)"
  grep -E '^(ops|errors|throughput|latency p50|latency p99) ' "$state/summary" | tr -s ' ' | paste -sd ';' -
  awk -v ops="$(awk '$1 == "ops" {print $2}' "$state/summary")" -v hz="$(getconf CLK_TCK)" -v ctl="$(cat "$state/ctl.cpu")" \
    -v n1=$((t1[0] - t0[0])) -v n2=$((t1[1] - t0[1])) -v n3=$((t1[2] - t0[2])) -v pg=$((t1[3] - t0[3])) '
    BEGIN {
      split(ctl, c, " "); if (ops == 0) { print "no operations"; exit 1 }
      f = 1000 / hz / ops
      printf "cpu per op    n1 %.3f, n2 %.3f, n3 %.3f, all harvestd %.3f, postgres %.3f, cluster %.3f, harvestctl %.3f ms\n",
        n1 * f, n2 * f, n3 * f, (n1 + n2 + n3) * f, pg * f, (n1 + n2 + n3 + pg) * f, (c[1] + c[2]) * 1000 / ops
    }'
}

echo "cluster: 3 nodes on 127.0.0.1 ($scheme), $conc clients, ${warm}s warm-up, $duration measured, ${extra[*]}"
for ((r = 1; r <= rounds; r++)); do
  order=("${modes[@]}")
  if ((r % 2 == 0)); then
    for ((i = 0, j = ${#order[@]} - 1; i < j; i++, j--)); do tmp=${order[i]}; order[i]=${order[j]}; order[j]=$tmp; done
  fi
  for m in "${order[@]}"; do
    echo "== round $r $m $(date +%T) load $(cut -d' ' -f1 /proc/loadavg)"
    run "$m"
  done
done
