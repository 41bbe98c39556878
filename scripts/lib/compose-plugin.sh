# shellcheck shell=bash
# ensure_compose: a `docker compose` (Compose v2) of at least
# HARVEST_COMPOSE_MIN for docker-compose.cluster.yml. When the docker CLI has
# none (Debian's docker.io ships only the Python docker-compose 1.29, which
# lacks `up --wait`), it builds Compose HARVEST_COMPOSE_VERSION from source
# with this host's Go, through the Go module proxy, once, into
# ~/.cache/harvest/compose/<version>/cli-plugins/docker-compose, and exports
# DOCKER_CONFIG=~/.cache/harvest/compose/<version> so that `docker compose`
# finds it (the plugin is never committed; only the cache holds it).

HARVEST_COMPOSE_MIN=2.20.0
HARVEST_COMPOSE_VERSION=${HARVEST_COMPOSE_VERSION:-v2.28.1}

# _compose_version prints the version `docker compose` reports, or nothing.
_compose_version() {
	{ docker compose version --short 2>/dev/null || true; } | sed "s/^v//"
}

# _version_ge A B: A >= B (dotted versions).
_version_ge() {
	[[ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n1)" == "$2" ]]
}

ensure_compose() {
	local v
	v=$(_compose_version)
	if [[ -n "$v" ]] && _version_ge "$v" "$HARVEST_COMPOSE_MIN"; then
		echo "compose: docker compose $v"
		return
	fi
	local dir="${XDG_CACHE_HOME:-$HOME/.cache}/harvest/compose/$HARVEST_COMPOSE_VERSION"
	local plugin="$dir/cli-plugins/docker-compose"
	if [[ -x "$plugin" ]]; then
		echo "compose: reusing $plugin"
	else
		echo "compose: docker compose ${v:-is missing}${v:+ is older than $HARVEST_COMPOSE_MIN}; building Compose $HARVEST_COMPOSE_VERSION from source (Go module proxy) into $plugin"
		local start=$SECONDS bin
		bin=$(mktemp -d)
		GOBIN="$bin" GOFLAGS=-mod=mod go install -trimpath \
			-ldflags "-s -w -X github.com/docker/compose/v2/internal.Version=$HARVEST_COMPOSE_VERSION" \
			"github.com/docker/compose/v2/cmd@$HARVEST_COMPOSE_VERSION"
		mkdir -p "$dir/cli-plugins"
		mv "$bin/cmd" "$plugin"
		rm -rf "$bin"
		echo "compose: built in $((SECONDS - start)) s"
	fi
	# The user's docker config (auths, contexts) is not needed here.
	export DOCKER_CONFIG="$dir"
	v=$(_compose_version)
	if [[ -z "$v" ]] || ! _version_ge "$v" "$HARVEST_COMPOSE_MIN"; then
		echo "compose: $plugin does not answer as Compose >= $HARVEST_COMPOSE_MIN (got '${v:-nothing}')" >&2
		return 1
	fi
	echo "compose: docker compose $v (DOCKER_CONFIG=$DOCKER_CONFIG)"
}
