#!/usr/bin/env bash
# Paired engine benchmarks with the machine's CPU per start (docs/performance.md, flow control):
#   go test -c -o /tmp/engine.test ./engine
#   ./scripts/bench-flow.sh /tmp/engine.test ROUNDS STARTS BENCH_A BENCH_B
# e.g. ./scripts/bench-flow.sh /tmp/engine.test 8 15000 StartKeyed StartLimitedPerKey
# Each round runs A and B (their order alternated) for STARTS starts each, and prints each one's
# starts/s and the machine's busy CPU per start (/proc/stat: every process, PostgreSQL included),
# less the busy time of the same benchmark's -benchtime 1x run (its setup: a fresh PostgreSQL).
set -euo pipefail
bin=${1:?usage: bench-flow.sh ENGINE_TEST ROUNDS STARTS BENCH_A BENCH_B} rounds=${2:?} n=${3:?} a=${4:?} b=${5:?}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
hz=$(getconf CLK_TCK)

# busy prints the machine's busy jiffies (user, nice, system, irq, softirq).
busy() { awk '/^cpu /{print $2+$3+$4+$7+$8}' /proc/stat; }

# run prints "STARTS_PER_S BUSY_JIFFIES" of one benchmark run.
run() {
	local b0 b1 out
	b0=$(busy)
	out=$(cd "$root/engine" && "$bin" -test.run '^$' -test.bench "^Benchmark$1\$" -test.benchtime "$2" 2>&1 | grep '^Benchmark' || true)
	b1=$(busy)
	echo "$(grep -o '[0-9.]* starts/s' <<<"$out" | cut -d' ' -f1) $((b1 - b0))"
}

for ((r = 1; r <= rounds; r++)); do
	order=("$a" "$b")
	((r % 2 == 0)) && order=("$b" "$a")
	for bench in "${order[@]}"; do
		read -r _ base < <(run "$bench" 1x)
		read -r rate used < <(run "$bench" "${n}x")
		echo "r$r $bench starts/s=$rate cpu_us_per_start=$(((used - base) * 1000000 / hz / n))"
	done
done
