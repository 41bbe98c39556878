#!/usr/bin/env bash
# A three-node Harvest cluster on 127.0.0.1 without Docker:
#
#   ./scripts/local-cluster.sh up       # build, start PostgreSQL and three harvestd agents, wait until formed
#   ./scripts/local-cluster.sh status   # processes, then harvestctl cluster members
#   ./scripts/local-cluster.sh down     # stop the agents and PostgreSQL (data is kept)
#
# Everything lives in the state directory (default ./.harvest-cluster): bin/
# (harvestd, harvestctl), pg/ (one private PostgreSQL with the databases
# harvest_shard0 and harvest_shard1), n1..n3/ (node data, raft state), logs/,
# and the cluster's two secrets, each created once by the first `up` (mode
# 0600; the state directory is in .gitignore): cluster.key, the cluster key
# every node gets (--cluster-key-file), and admin.token, the admin token the
# raft leader adds (--initial-token-file), which the script's harvestctl
# calls send (HARVEST_TOKEN). Remove the directory for a fresh cluster. `up`
# fails (and stops what it started) unless all three nodes are ready and see
# each other alive.
#
# Environment (read by `up`; status and down use what up recorded):
#   HARVEST_CLUSTER_DIR           state directory              (./.harvest-cluster)
#   HARVEST_CLUSTER_PG_PORT       PostgreSQL TCP port          (15432)
#   HARVEST_CLUSTER_HTTP_PORTS    HTTP ports of n1 n2 n3       ("7231 7232 7233")
#   HARVEST_CLUSTER_GOSSIP_PORTS  gossip ports of n1 n2 n3     ("7941 7942 7943")
#   HARVEST_CLUSTER_RAFT_PORTS    raft ports of n1 n2 n3       ("8301 8302 8303")
#   HARVEST_CLUSTER_TIMEOUT       seconds up waits for the cluster (90)
#   HARVEST_CLUSTER_PG_BIN_DIR    where initdb/pg_ctl are      (PATH, then /usr/lib/postgresql/*/bin)
# As root, PostgreSQL runs as the user postgres, which must be able to reach
# the state directory.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
STATE="${HARVEST_CLUSTER_DIR:-$ROOT/.harvest-cluster}"
mkdir -p "$STATE"
STATE="$(cd "$STATE" && pwd)"
BIN="$STATE/bin"
PGDATA="$STATE/pg/data"
PGSOCK="$STATE/pg/run"
LOGS="$STATE/logs"
ENVFILE="$STATE/cluster.env"
KEYFILE="$STATE/cluster.key"
TOKENFILE="$STATE/admin.token"
NODES=(1 2 3)

log() { echo "local-cluster: $*" >&2; }
die() {
	log "$*"
	exit 1
}

# load_config reads the ports: from the environment for up, from what up
# recorded otherwise.
load_config() {
	if [[ "${1:-}" != fresh && -f "$ENVFILE" ]]; then
		# shellcheck source=/dev/null
		source "$ENVFILE"
	else
		PG_PORT="${HARVEST_CLUSTER_PG_PORT:-15432}"
		HTTP_PORTS="${HARVEST_CLUSTER_HTTP_PORTS:-7231 7232 7233}"
		GOSSIP_PORTS="${HARVEST_CLUSTER_GOSSIP_PORTS:-7941 7942 7943}"
		RAFT_PORTS="${HARVEST_CLUSTER_RAFT_PORTS:-8301 8302 8303}"
	fi
	read -r -a HTTP <<<"$HTTP_PORTS"
	read -r -a GOSSIP <<<"$GOSSIP_PORTS"
	read -r -a RAFT <<<"$RAFT_PORTS"
	[[ ${#HTTP[@]} -eq 3 && ${#GOSSIP[@]} -eq 3 && ${#RAFT[@]} -eq 3 ]] ||
		die "want three ports each in HARVEST_CLUSTER_HTTP_PORTS, _GOSSIP_PORTS and _RAFT_PORTS"
}

save_config() {
	cat >"$ENVFILE" <<EOF
PG_PORT="$PG_PORT"
HTTP_PORTS="$HTTP_PORTS"
GOSSIP_PORTS="$GOSSIP_PORTS"
RAFT_PORTS="$RAFT_PORTS"
EOF
}

# --- secrets -----------------------------------------------------------------

# random_hex prints n random bytes as lowercase hex.
random_hex() { od -An -tx1 -N"$1" /dev/urandom | tr -d ' \n'; }

# write_secret writes stdin to a new file readable by this user only.
write_secret() {
	(umask 077 && cat >"$1.tmp") && mv "$1.tmp" "$1"
}

# ensure_secrets creates the cluster key (base64 of 32 random bytes) and the
# initial admin token (hvt_<16 hex>_<64 hex>) unless they exist: a restart
# keeps both, so the raft catalog still knows the token.
ensure_secrets() {
	if [[ ! -s "$KEYFILE" ]]; then
		log "creating the cluster key $KEYFILE"
		head -c 32 /dev/urandom | base64 | write_secret "$KEYFILE"
	fi
	if [[ ! -s "$TOKENFILE" ]]; then
		log "creating the initial admin token $TOKENFILE"
		echo "hvt_$(random_hex 8)_$(random_hex 32)" | write_secret "$TOKENFILE"
	fi
	chmod 600 "$KEYFILE" "$TOKENFILE"
}

# load_token exports the admin token for harvestctl.
load_token() {
	[[ -s "$TOKENFILE" ]] || die "no $TOKENFILE: run '$0 up'"
	HARVEST_TOKEN="$(cat "$TOKENFILE")"
	export HARVEST_TOKEN
}

# --- PostgreSQL --------------------------------------------------------------

pg_bin_dir() {
	if [[ -n "${HARVEST_CLUSTER_PG_BIN_DIR:-}" ]]; then
		echo "$HARVEST_CLUSTER_PG_BIN_DIR"
	elif command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1; then
		dirname "$(readlink -f "$(command -v pg_ctl)")"
	else
		local d
		d="$(compgen -G '/usr/lib/postgresql/*/bin' | sort -V | tail -n 1 || true)"
		[[ -n "$d" ]] || die "no PostgreSQL server binaries (initdb, pg_ctl): install postgresql or set HARVEST_CLUSTER_PG_BIN_DIR"
		echo "$d"
	fi
}

# as_pg runs a PostgreSQL program as the user postgres when root (postgres
# refuses to run as root), as this user otherwise.
as_pg() {
	if [[ "$(id -u)" -eq 0 ]]; then
		runuser -u postgres -- "$@"
	else
		"$@"
	fi
}

pg_running() {
	[[ -f "$PGDATA/postmaster.pid" ]] && as_pg "$PGBIN/pg_ctl" -D "$PGDATA" status >/dev/null 2>&1
}

pg_up() {
	PGBIN="$(pg_bin_dir)"
	mkdir -p "$STATE/pg" "$PGSOCK" "$LOGS"
	if [[ "$(id -u)" -eq 0 ]]; then
		id postgres >/dev/null 2>&1 || die "running as root needs the user postgres to run PostgreSQL"
		chown -R postgres: "$STATE/pg"
		touch "$LOGS/postgres.log" && chown postgres: "$LOGS/postgres.log"
		runuser -u postgres -- test -w "$STATE/pg" ||
			die "user postgres cannot reach $STATE (make its parent directories searchable, e.g. chmod o+x, or set HARVEST_CLUSTER_DIR)"
	fi
	if [[ ! -f "$PGDATA/PG_VERSION" ]]; then
		log "initdb $PGDATA"
		as_pg "$PGBIN/initdb" -D "$PGDATA" -U postgres -A trust -E UTF8 --locale=C --no-sync >"$LOGS/initdb.log" 2>&1 ||
			die "initdb failed: see $LOGS/initdb.log"
	fi
	if ! pg_running; then
		log "starting PostgreSQL on 127.0.0.1:$PG_PORT (socket $PGSOCK)"
		as_pg "$PGBIN/pg_ctl" -D "$PGDATA" -l "$LOGS/postgres.log" -w -t 60 \
			-o "-p $PG_PORT -k $PGSOCK -c listen_addresses=127.0.0.1" start >/dev/null ||
			die "PostgreSQL did not start: see $LOGS/postgres.log"
	fi
	local db
	for db in harvest_shard0 harvest_shard1; do
		if [[ -z "$(as_pg "$PGBIN/psql" -h "$PGSOCK" -p "$PG_PORT" -U postgres -d postgres -tAc \
			"SELECT 1 FROM pg_database WHERE datname = '$db'")" ]]; then
			as_pg "$PGBIN/createdb" -h "$PGSOCK" -p "$PG_PORT" -U postgres "$db"
		fi
	done
}

pg_down() {
	[[ -d "$PGDATA" ]] || return 0
	PGBIN="$(pg_bin_dir)"
	if pg_running; then
		as_pg "$PGBIN/pg_ctl" -D "$PGDATA" -m fast -w -t 60 stop >/dev/null || true
	fi
	# A postmaster pg_ctl could not stop (or a stale pid file).
	if [[ -f "$PGDATA/postmaster.pid" ]]; then
		local pid
		pid="$(head -n 1 "$PGDATA/postmaster.pid")"
		if [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null; then
			kill -KILL "$pid" 2>/dev/null || true
		fi
		rm -f "$PGDATA/postmaster.pid"
	fi
}

# --- harvestd ----------------------------------------------------------------

pidfile() { echo "$STATE/n$1.pid"; }

node_pid() {
	local f
	f="$(pidfile "$1")"
	[[ -f "$f" ]] || return 1
	local pid
	pid="$(cat "$f")"
	kill -0 "$pid" 2>/dev/null || return 1
	echo "$pid"
}

build() {
	log "building harvestd and harvestctl into $BIN"
	mkdir -p "$BIN"
	(cd "$ROOT" && go build -o "$BIN/harvestd" ./cmd/harvestd && go build -o "$BIN/harvestctl" ./cmd/harvestctl)
}

start_node() {
	local i=$1 k=$(($1 - 1))
	local dsn="postgres://postgres@127.0.0.1:$PG_PORT"
	mkdir -p "$STATE/n$i"
	# Output goes to the log, stdin from /dev/null: nothing holds the caller's terminal or pipes.
	"$BIN/harvestd" agent --node-id "n$i" --data-dir "$STATE/n$i" --log-format console \
		--cluster-key-file "$KEYFILE" --initial-token-file "$TOKENFILE" \
		--http-addr "127.0.0.1:${HTTP[k]}" \
		--gossip-addr "127.0.0.1:${GOSSIP[k]}" --gossip-profile local --join "127.0.0.1:${GOSSIP[0]}" \
		--raft-addr "127.0.0.1:${RAFT[k]}" --bootstrap-expect 3 --drain-check-interval 2s \
		--shard "0=$dsn/harvest_shard0?sslmode=disable" --shard "1=$dsn/harvest_shard1?sslmode=disable" \
		</dev/null >"$LOGS/n$i.log" 2>&1 &
	echo $! >"$(pidfile "$i")"
}

alive_seen_by() {
	"$BIN/harvestctl" --addr "http://127.0.0.1:$1" -o json cluster members 2>/dev/null |
		grep -o '"state": *"alive"' | wc -l
}

wait_formed() {
	local timeout="${HARVEST_CLUSTER_TIMEOUT:-90}" start=$SECONDS i k
	for i in "${NODES[@]}"; do
		k=$((i - 1))
		until curl -fsS -o /dev/null "http://127.0.0.1:${HTTP[k]}/readyz" 2>/dev/null; do
			node_pid "$i" >/dev/null || { tail -n 30 "$LOGS/n$i.log" >&2; return 1; }
			((SECONDS - start < timeout)) || { log "n$i not ready after ${timeout}s (log: $LOGS/n$i.log)"; return 1; }
			sleep 0.2
		done
	done
	for i in "${NODES[@]}"; do
		k=$((i - 1))
		until [[ "$(alive_seen_by "${HTTP[k]}")" -eq 3 ]]; do
			if ((SECONDS - start >= timeout)); then
				log "n$i does not see three alive members after ${timeout}s; it answers:"
				"$BIN/harvestctl" --addr "http://127.0.0.1:${HTTP[k]}" cluster members >&2 || true
				return 1
			fi
			sleep 0.2
		done
	done
	log "cluster formed in $((SECONDS - start))s"
}

stop_nodes() {
	local i pid pids=()
	for i in "${NODES[@]}"; do
		if pid="$(node_pid "$i")"; then
			kill -TERM "$pid" 2>/dev/null || true
			pids+=("$pid")
		fi
	done
	local deadline=$((SECONDS + 20))
	for pid in "${pids[@]}"; do
		while kill -0 "$pid" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.1; done
		if kill -0 "$pid" 2>/dev/null; then
			log "harvestd $pid still runs after SIGTERM: SIGKILL"
			kill -KILL "$pid" 2>/dev/null || true
			while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
		fi
	done
	for i in "${NODES[@]}"; do rm -f "$(pidfile "$i")"; done
}

# --- commands ----------------------------------------------------------------

cmd_up() {
	local i
	for i in "${NODES[@]}"; do
		if node_pid "$i" >/dev/null; then
			die "n$i already runs (pid $(node_pid "$i")): run '$0 down' first"
		fi
	done
	load_config fresh
	save_config
	command -v curl >/dev/null 2>&1 || die "curl is required"
	build
	ensure_secrets
	load_token
	pg_up
	log "starting n1..n3: HTTP ${HTTP[*]}, gossip ${GOSSIP[*]}, raft ${RAFT[*]} (logs in $LOGS)"
	for i in "${NODES[@]}"; do start_node "$i"; done
	if ! wait_formed; then
		log "stopping what was started"
		stop_nodes
		pg_down
		exit 1
	fi
	echo "export HARVEST_ADDR=http://127.0.0.1:${HTTP[0]}   # or :${HTTP[1]}, :${HTTP[2]}"
	log "admin token in $TOKENFILE, cluster key in $KEYFILE (both mode 0600)"
	# shellcheck disable=SC2016 # the $(cat ...) is for the reader's shell
	printf 'export HARVEST_TOKEN="$(cat %q)"\n' "$TOKENFILE"
	echo "harvestctl: $BIN/harvestctl"
}

cmd_status() {
	load_config
	local i k pid up=()
	PGBIN="$(pg_bin_dir)"
	if pg_running; then
		echo "postgres  running  127.0.0.1:$PG_PORT  pid $(head -n 1 "$PGDATA/postmaster.pid")"
	else
		echo "postgres  stopped"
	fi
	for i in "${NODES[@]}"; do
		k=$((i - 1))
		if pid="$(node_pid "$i")"; then
			echo "n$i        running  http://127.0.0.1:${HTTP[k]}  pid $pid"
			up+=("${HTTP[k]}")
		else
			echo "n$i        stopped"
		fi
	done
	[[ ${#up[@]} -gt 0 ]] || return 0
	[[ -x "$BIN/harvestctl" ]] || die "no $BIN/harvestctl: run '$0 up'"
	load_token
	echo
	for k in "${up[@]}"; do
		if "$BIN/harvestctl" --addr "http://127.0.0.1:$k" cluster members; then
			return 0
		fi
	done
	return 1
}

cmd_down() {
	load_config
	stop_nodes
	pg_down
	log "stopped (data kept in $STATE)"
}

case "${1:-}" in
up) cmd_up ;;
down) cmd_down ;;
status) cmd_status ;;
*)
	echo "usage: $0 up|down|status" >&2
	exit 2
	;;
esac
