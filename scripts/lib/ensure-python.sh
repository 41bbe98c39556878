# shellcheck shell=bash
# ensure_python: make sure python3 exists for examples/polyglot, whose test
# runs a Python activity server (standard library only), installing
# Debian's python3 package when root, as ensure_postgres does for
# PostgreSQL. Without python3 that test fails, saying so.
ensure_python() {
	command -v python3 >/dev/null 2>&1 && return 0
	echo "harvest: no python3 found for examples/polyglot's test; installing python3" >&2
	if [[ "$(id -u)" -ne 0 ]]; then
		echo "harvest: need root to install python3 (or install it yourself)" >&2
		return 1
	fi
	export DEBIAN_FRONTEND=noninteractive
	apt-get update
	apt-get install -y --no-install-recommends python3
	command -v python3 >/dev/null 2>&1 || {
		echo "harvest: python3 installed but still not found on PATH" >&2
		return 1
	}
}
