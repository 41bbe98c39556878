#!/usr/bin/env bash
# Refreshes docs/ui/*.png, the web UI's screenshots the README links,
# from the browser tests (TestUIOnANode, TestUIOnACluster in node/): each
# takes a screenshot of every page at 1280×900 and at a phone's 390×844,
# checks it is not blank, and copies it to HARVEST_UI_SCREENSHOTS.
# Needs what the tests need: PostgreSQL server binaries and chromium (both
# installed when root, see scripts/lib/).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

# shellcheck source=lib/ensure-postgres.sh
source scripts/lib/ensure-postgres.sh
# shellcheck source=lib/ensure-chromium.sh
source scripts/lib/ensure-chromium.sh
if [[ -z "${HARVEST_TEST_DSN:-}" ]]; then
	ensure_postgres
fi
if [[ "${HARVEST_BROWSER:-1}" == 0 ]]; then
	echo "ui-screenshots.sh: HARVEST_BROWSER=0 turns the browser off; the screenshots need it" >&2
	exit 1
fi
ensure_chromium

out=docs/ui
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
HARVEST_UI_SCREENSHOTS="$tmp" go test -count=1 -run '^TestUIOn(ANode|ACluster)$' ./node/
rm -f "$out"/*.png
cp "$tmp"/*.png "$out"/
ls -l "$out"
