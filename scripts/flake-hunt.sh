#!/usr/bin/env bash
# Flake hunt: run packages N times under the race detector on a busy machine
# and list every test that failed at least once.
#
#   scripts/flake-hunt.sh [-k HOGS] [-t TIMEOUT] PACKAGE_PATTERN N [go test flags...]
#
#   scripts/flake-hunt.sh ./... 3                     # the whole suite, 3 times
#   scripts/flake-hunt.sh -k 5 ./client/ 50 -run 'TestServerDeferred'
#
# HOGS CPU-bound shell loops (default 5) run beside the tests for the whole
# hunt, so a test that asserts something a slow machine can change (a window,
# a timeout, "within N ms") fails here before it fails in CI. The packages run
# with `go test -race -count=N -json`; the summary lists each failed test (and
# each package that failed outside any test: a panic, a timeout, a build
# error) with how many of its N runs failed, and exits 1 if there is one.
# The full `go test -json` log is kept and its path printed.
#
# PostgreSQL and Chromium are made sure of as scripts/test.sh does.
set -euo pipefail

hogs=5
timeout=120m
while getopts 'k:t:' opt; do
	case $opt in
	k) hogs=$OPTARG ;;
	t) timeout=$OPTARG ;;
	*) exit 2 ;;
	esac
done
shift $((OPTIND - 1))
if [[ $# -lt 2 ]]; then
	echo "usage: scripts/flake-hunt.sh [-k HOGS] [-t TIMEOUT] PACKAGE_PATTERN N [go test flags...]" >&2
	exit 2
fi
pattern=$1
runs=$2
shift 2

cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=lib/ensure-postgres.sh
source scripts/lib/ensure-postgres.sh
if [[ -z "${HARVEST_TEST_DSN:-}" ]]; then
	ensure_postgres
fi
# shellcheck source=lib/ensure-chromium.sh
source scripts/lib/ensure-chromium.sh
ensure_chromium
command -v jq >/dev/null || {
	echo "flake-hunt: needs jq (apt-get install jq)" >&2
	exit 2
}

hog_pids=()
stop_hogs() {
	for pid in "${hog_pids[@]}"; do
		kill "$pid" 2>/dev/null || true
	done
}
trap stop_hogs EXIT
for ((i = 0; i < hogs; i++)); do
	sh -c 'while :; do :; done' &
	hog_pids+=($!)
done

log=$(mktemp -t harvest-flake-hunt.XXXXXX.json)
began=$(date +%s)
echo "flake-hunt: go test -race -count=$runs $pattern $* with $hogs CPU hogs; log: $log" >&2
go test -race -count="$runs" -timeout "$timeout" -json "$@" "$pattern" >"$log" 2>&1 || true
stop_hogs
elapsed=$(($(date +%s) - began))

# A failed test is a "fail" action naming it; a package that failed with no
# failed test in it (panic, timeout, build error) counts once as "(package)".
failures=$(jq -rR 'fromjson? | select(.Action == "fail") | "\(.Package) \(.Test // "(package)")"' "$log" 2>/dev/null |
	awk '$2 == "(package)" { pkg[$1] = 1; next } { tests[$1] = 1; print } END { for (p in pkg) if (!(p in tests)) print p, "(package)" }' |
	sort | uniq -c | sort -rn)
echo "flake-hunt: $((elapsed / 60))m$((elapsed % 60))s, $runs run(s) of $pattern beside $hogs CPU hogs" >&2
if [[ -z "$failures" ]]; then
	echo "flake-hunt: no test failed" >&2
	exit 0
fi
echo "flake-hunt: failed tests (count of $runs runs, package, test):" >&2
echo "$failures"
# Lines go test printed that are not JSON (a build error) are in the log too.
exit 1
