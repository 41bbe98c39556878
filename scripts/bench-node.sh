#!/usr/bin/env bash
# One HTTP benchmark of a fresh single node, with the CPU it cost:
#   ./scripts/bench-node.sh BIN_DIR MODE [harvestctl bench flags...]
# BIN_DIR holds harvestd and harvestctl builds (go build -o DIR ./cmd/harvestd ./cmd/harvestctl),
# so that two builds can be compared run by run. It starts `harvestd dev` (managed PostgreSQL,
# fsync on) on a temporary data directory, runs `harvestctl bench --mode MODE` for WARM seconds
# (default 10: plans and caches settle) and then for DURATION (default 10s) at CONC clients
# (default 32), and prints the measured run's summary and the CPU per operation of harvestd, of its
# PostgreSQL (every process under it) and of harvestctl. AUTH=tokens runs the node with
# --auth tokens and an initial admin token, which harvestctl then sends (default AUTH=off).
# TLS=on serves the API over TLS with a CA and certificate made for the run (harvestctl certs
# create; harvestctl trusts the CA), so TLS on and off compare run by run (default TLS=off).
set -euo pipefail
bin=${1:?usage: bench-node.sh BIN_DIR MODE [flags]}
mode=${2:?usage: bench-node.sh BIN_DIR MODE [flags]}
shift 2
warm=${WARM:-10}
conc=${CONC:-32}
duration=${DURATION:-10s}
work=$(mktemp -d /tmp/harvest-bench.XXXXXX)
chmod 755 "$work"
if [[ "$(id -u)" -eq 0 ]]; then chown postgres "$work" 2>/dev/null || true; fi
port=$((10000 + RANDOM % 20000)) # below the ephemeral range (32768 and up)
addr=http://127.0.0.1:$port
tlsargs=()
if [[ "${TLS:-off}" == on ]]; then
  "$bin/harvestctl" certs create "$work/certs" >/dev/null
  tlsargs=(--tls-cert "$work/certs/node.pem" --tls-key "$work/certs/node-key.pem" --tls-ca "$work/certs/ca.pem")
  export HARVEST_CA_CERT="$work/certs/ca.pem"
  addr=https://127.0.0.1:$port
fi
auth=()
if [[ "${AUTH:-off}" == tokens ]]; then
  export HARVEST_TOKEN="hvt_$(openssl rand -hex 8)_$(openssl rand -hex 32)"
  (umask 077 && echo "$HARVEST_TOKEN" >"$work/token")
  auth=(--auth tokens --initial-token-file "$work/token")
fi
"$bin/harvestd" dev --data-dir "$work/data" --http-addr "127.0.0.1:$port" "${auth[@]}" "${tlsargs[@]}" >"$work/node.log" 2>&1 &
node=$!
cleanup() { kill -INT "$node" 2>/dev/null || true; wait "$node" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
for _ in $(seq 1 240); do
  curl -sf ${HARVEST_CA_CERT:+--cacert "$HARVEST_CA_CERT"} "$addr/readyz" >/dev/null && break
  kill -0 "$node" 2>/dev/null || { echo "harvestd exited:" >&2; tail -5 "$work/node.log" >&2; exit 1; }
  sleep 0.25
done

# ticks of user+system CPU, own and reaped children, of a process tree: "root others"
cpu_ticks() {
  local root=$1 own=0 rest=0 p s
  local -a todo=("$root")
  while ((${#todo[@]})); do
    p=${todo[0]}
    todo=("${todo[@]:1}")
    s=$(awk '{print $14+$15+$16+$17}' "/proc/$p/stat" 2>/dev/null) || continue
    if [[ "$p" == "$root" ]]; then own=$((own + s)); else rest=$((rest + s)); fi
    for c in $(cat /proc/"$p"/task/*/children 2>/dev/null); do todo+=("$c"); done
  done
  echo "$own $rest"
}

bench() { "$bin/harvestctl" --addr "$addr" bench --mode "$mode" --concurrency "$conc" --quiet "$@"; }
if ((warm > 0)); then bench --duration "${warm}s" "$@" >/dev/null || true; fi
read -r go0 pg0 < <(cpu_ticks "$node")
start=$(date +%s%N)
/usr/bin/time -f "%U %S" -o "$work/ctl.cpu" "$bin/harvestctl" --addr "$addr" bench --mode "$mode" \
  --concurrency "$conc" --duration "$duration" --quiet "$@" | tee "$work/summary"
read -r go1 pg1 < <(cpu_ticks "$node")
ops=$(awk '$1 == "ops" {print $2}' "$work/summary")
hz=$(getconf CLK_TCK)
awk -v g=$((go1 - go0)) -v p=$((pg1 - pg0)) -v hz="$hz" -v ops="$ops" -v ctl="$(cat "$work/ctl.cpu")" '
  BEGIN {
    split(ctl, c, " ")
    if (ops == 0) { print "no operations"; exit 1 }
    printf "cpu per op    harvestd %.3f ms, postgres %.3f ms, harvestctl %.3f ms\n",
      g * 1000 / hz / ops, p * 1000 / hz / ops, (c[1] + c[2]) * 1000 / ops
  }'
