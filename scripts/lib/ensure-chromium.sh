# shellcheck shell=bash
# ensure_chromium: make sure a Chromium binary exists for the web UI's
# browser tests (internal/browsertest drives it headless from Go),
# installing Debian's chromium package when root, as ensure_postgres does
# for PostgreSQL. HARVEST_CHROMIUM names another binary; HARVEST_BROWSER=0
# opts out (the browser tests then skip, and say so).
have_chromium() {
	[[ -n "${HARVEST_CHROMIUM:-}" ]] && return 0
	command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || command -v google-chrome >/dev/null 2>&1
}

ensure_chromium() {
	[[ "${HARVEST_BROWSER:-1}" == 0 ]] && return 0
	have_chromium && return 0
	echo "harvest: no chromium found for the web UI's browser tests; installing chromium" >&2
	if [[ "$(id -u)" -ne 0 ]]; then
		echo "harvest: need root to install chromium (or install it yourself, or set HARVEST_BROWSER=0 to skip the browser tests)" >&2
		return 1
	fi
	export DEBIAN_FRONTEND=noninteractive
	apt-get update
	# fonts-liberation is a recommend of chromium's; the screenshots need a font.
	apt-get install -y --no-install-recommends chromium fonts-liberation
	have_chromium || {
		echo "harvest: chromium installed but still not found on PATH" >&2
		return 1
	}
}
