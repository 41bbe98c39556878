#!/usr/bin/env bash
# A three-node Harvest cluster on 127.0.0.1 without Docker:
#
#   ./scripts/local-cluster.sh up       # build, start PostgreSQL and three harvestd agents, wait until formed
#   ./scripts/local-cluster.sh status   # processes, then harvestctl cluster members
#   ./scripts/local-cluster.sh down     # stop the agents and PostgreSQL (data is kept)
#
# Everything lives in the state directory (default ./.harvest-cluster): bin/
# (harvestd, harvestctl), pg/ (one private PostgreSQL with the databases
# harvest_shard0 and harvest_shard1: data/, its unix socket in run/),
# n1..n3/ (node data, raft state), logs/, cluster.env (what `up` chose, for
# status and down), and the cluster's three secrets, each created once by the
# first `up` (mode 0600; the state directory is in .gitignore): cluster.key,
# the cluster key every node gets (--cluster-key-file), admin.token, the
# admin token the raft leader adds (--initial-token-file), which the
# script's harvestctl calls send (HARVEST_TOKEN), and pg.password, the
# PostgreSQL superuser's password (scram-sha-256 on the socket and on
# 127.0.0.1; the agents get it in their shard DSNs through HARVEST_SHARD, the
# environment, not the world-readable command line). A data directory from
# an older run (trust authentication) is switched to the password on the next
# `up`. Remove the directory for a fresh cluster. `up` fails (and stops what
# it started) unless all three nodes are ready and see each other alive.
#
# TLS is on by default: the first `up` makes a CA and a node certificate in
# certs/ (harvestctl certs create; every file mode 0600), and
# every node serves its API, forwards, answers node requests and runs raft
# over mutual TLS with them. Clients trust certs/ca.pem (`up` prints the
# HARVEST_CA_CERT export for harvestctl; curl --cacert). HARVEST_CLUSTER_TLS=0
# runs the cluster in clear text.
#
# Environment (read by `up`; status and down use what up recorded):
#   HARVEST_CLUSTER_DIR           state directory              (./.harvest-cluster)
#   HARVEST_CLUSTER_PG_PORT       PostgreSQL TCP port          (15432)
#   HARVEST_CLUSTER_HTTP_PORTS    HTTP ports of n1 n2 n3       ("7231 7232 7233")
#   HARVEST_CLUSTER_GOSSIP_PORTS  gossip ports of n1 n2 n3     ("7941 7942 7943")
#   HARVEST_CLUSTER_RAFT_PORTS    raft ports of n1 n2 n3       ("8301 8302 8303")
#   HARVEST_CLUSTER_TIMEOUT       seconds up waits for the cluster (90)
#   HARVEST_CLUSTER_TLS           1: mutual TLS with certs/ (1); 0: clear text
#   HARVEST_CLUSTER_PG_BIN_DIR    where initdb/pg_ctl are      (PATH, then /usr/lib/postgresql/*/bin)
#   HARVEST_CLUSTER_PPROF_PORTS   Go profiler ports of n1 n2 n3 on 127.0.0.1 (none: no profiler)
#   HARVEST_CLUSTER_PG_OPTS       more server options for PostgreSQL's start, e.g.
#                                 "-c shared_preload_libraries=pg_stat_statements" (none)
# As root, PostgreSQL runs as the user postgres. When that user cannot reach
# the state directory (a clone in root's 0700 home, say), PostgreSQL's pg/
# (data, socket, and its log postgres.log) goes to
# ~postgres/harvest-cluster-<hash of the state directory's path>/ instead,
# mode 0700, owned by postgres; cluster.env records where, and an `up` in a
# fresh state directory removes what an earlier one of the same path left
# there (its password went with it).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
STATE="${HARVEST_CLUSTER_DIR:-$ROOT/.harvest-cluster}"
mkdir -p "$STATE"
STATE="$(cd "$STATE" && pwd)"
BIN="$STATE/bin"
LOGS="$STATE/logs"
ENVFILE="$STATE/cluster.env"
KEYFILE="$STATE/cluster.key"
TOKENFILE="$STATE/admin.token"
PGPWFILE="$STATE/pg.password"
CERTS="$STATE/certs"
NODES=(1 2 3)

log() { echo "local-cluster: $*" >&2; }
die() {
	log "$*"
	exit 1
}

# load_config reads the ports: from the environment for up, from what up
# recorded otherwise (with where PostgreSQL lives, PG_DIR and PG_LOG).
load_config() {
	unset PG_DIR PG_LOG
	if [[ "${1:-}" != fresh && -f "$ENVFILE" ]]; then
		# shellcheck source=/dev/null
		source "$ENVFILE"
	else
		PG_PORT="${HARVEST_CLUSTER_PG_PORT:-15432}"
		HTTP_PORTS="${HARVEST_CLUSTER_HTTP_PORTS:-7231 7232 7233}"
		GOSSIP_PORTS="${HARVEST_CLUSTER_GOSSIP_PORTS:-7941 7942 7943}"
		RAFT_PORTS="${HARVEST_CLUSTER_RAFT_PORTS:-8301 8302 8303}"
		TLS="${HARVEST_CLUSTER_TLS:-1}"
	fi
	[[ "${TLS:-0}" == 1 ]] && SCHEME=https || SCHEME=http
	read -r -a HTTP <<<"$HTTP_PORTS"
	read -r -a GOSSIP <<<"$GOSSIP_PORTS"
	read -r -a RAFT <<<"$RAFT_PORTS"
	[[ ${#HTTP[@]} -eq 3 && ${#GOSSIP[@]} -eq 3 && ${#RAFT[@]} -eq 3 ]] ||
		die "want three ports each in HARVEST_CLUSTER_HTTP_PORTS, _GOSSIP_PORTS and _RAFT_PORTS"
	set_pg_paths "${PG_DIR:-$STATE/pg}" "${PG_LOG:-$LOGS/postgres.log}"
}

# recorded prints what the last up recorded in cluster.env for the variable
# named $1, "" for nothing.
recorded() {
	[[ -f "$ENVFILE" ]] || return 0
	(
		unset "$1"
		# shellcheck source=/dev/null
		source "$ENVFILE"
		echo "${!1:-}"
	)
}

# set_pg_paths sets where PostgreSQL lives: PG_DIR (data/, run/), PG_LOG.
set_pg_paths() {
	PG_DIR="$1" PG_LOG="$2"
	PGDATA="$PG_DIR/data"
	PGSOCK="$PG_DIR/run"
}

save_config() {
	cat >"$ENVFILE" <<EOF
PG_PORT="$PG_PORT"
PG_DIR="$PG_DIR"
PG_LOG="$PG_LOG"
HTTP_PORTS="$HTTP_PORTS"
GOSSIP_PORTS="$GOSSIP_PORTS"
RAFT_PORTS="$RAFT_PORTS"
TLS="$TLS"
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

# ensure_certs makes the CA and the node certificate unless they exist (TLS
# on only); harvestctl then trusts the CA.
ensure_certs() {
	[[ "${TLS:-0}" == 1 ]] || return 0
	if [[ ! -s "$CERTS/node.pem" ]]; then
		log "creating a CA and the node certificate in $CERTS"
		"$BIN/harvestctl" certs create "$CERTS" >/dev/null
	fi
	export HARVEST_CA_CERT="$CERTS/ca.pem"
}

# tls_args are the nodes' TLS flags (none in clear text).
tls_args() {
	[[ "${TLS:-0}" == 1 ]] || return 0
	echo --tls-cert "$CERTS/node.pem" --tls-key "$CERTS/node-key.pem" --tls-ca "$CERTS/ca.pem"
}

# pprof_args k: node k's --pprof-addr, when HARVEST_CLUSTER_PPROF_PORTS names ports.
pprof_args() {
	local -a ports
	read -r -a ports <<<"${HARVEST_CLUSTER_PPROF_PORTS:-}"
	[[ -n "${ports[$1]:-}" ]] || return 0
	echo --pprof-addr "127.0.0.1:${ports[$1]}"
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

is_root() { [[ "$(id -u)" -eq 0 ]]; }

# as_pg runs a PostgreSQL program as the user postgres when root (postgres
# refuses to run as root; from /, which it can always reach), as this user
# otherwise.
as_pg() {
	if is_root; then
		(cd / && runuser -u postgres -- "$@")
	else
		"$@"
	fi
}

# pg_psql runs psql (or createdb: pg_psql createdb ARGS) as the superuser
# over the unix socket, with the password in the environment.
pg_psql() {
	local prog=psql
	[[ "${1:-}" != createdb ]] || { prog=createdb && shift; }
	PGPASSWORD="$PGPW" as_pg "$PGBIN/$prog" -w -h "$PGSOCK" -p "$PG_PORT" -U postgres "$@"
}

pg_running() {
	[[ -f "$PGDATA/postmaster.pid" ]] && as_pg "$PGBIN/pg_ctl" -D "$PGDATA" status >/dev/null 2>&1
}

# choose_pg_dir decides where PostgreSQL lives (up only): where the last up
# put data, else the state directory's pg/; as root, when the user postgres
# cannot reach the state directory, a directory of its own under its home,
# named after a hash of the state directory's path.
choose_pg_dir() {
	local prev
	prev="$(recorded PG_DIR)"
	if [[ -n "$prev" && -f "$prev/data/PG_VERSION" ]]; then
		set_pg_paths "$prev" "$(recorded PG_LOG)"
		[[ -n "$PG_LOG" ]] || PG_LOG="$LOGS/postgres.log"
		return 0
	fi
	set_pg_paths "$STATE/pg" "$LOGS/postgres.log"
	is_root || return 0
	id postgres >/dev/null 2>&1 || die "running as root needs the user postgres to run PostgreSQL"
	runuser -u postgres -- test -x "$STATE" && return 0
	local home hash
	home="$(getent passwd postgres | cut -d: -f6)"
	if [[ -z "$home" || ! -d "$home" ]] || ! runuser -u postgres -- test -w "$home" -a -x "$home"; then
		die "user postgres cannot reach $STATE, nor write its home '$home': make the state directory's parents searchable (chmod o+x) or set HARVEST_CLUSTER_DIR"
	fi
	hash="$(printf '%s' "$STATE" | sha256sum | cut -c1-16)"
	set_pg_paths "$home/harvest-cluster-$hash" "$home/harvest-cluster-$hash/postgres.log"
	log "user postgres cannot reach $STATE: PostgreSQL lives in $PG_DIR"
}

# hba_trusts reports whether pg_hba.conf lets any connection in without a
# password (a data directory of an older run).
hba_trusts() {
	grep -Eq '^[[:space:]]*(local|host)[^#]*[[:space:]]trust([[:space:]]|$)' "$PGDATA/pg_hba.conf"
}

# ensure_pg_password loads the superuser's password into PGPW, first
# creating pg.password when there is none. A PostgreSQL outside the state
# directory without it belongs to an earlier state directory of this path:
# it is removed (nobody knows its password).
ensure_pg_password() {
	if [[ ! -s "$PGPWFILE" && "$PG_DIR" != "$STATE/pg" && -d "$PG_DIR" ]]; then
		log "removing $PG_DIR: PostgreSQL of an earlier $STATE (its password went with it)"
		pg_down
		[[ -L "$PG_DIR" ]] && die "$PG_DIR is a symlink"
		rm -rf "$PG_DIR"
	fi
	if [[ ! -s "$PGPWFILE" ]]; then
		if [[ -f "$PGDATA/PG_VERSION" ]] && ! hba_trusts; then
			die "no $PGPWFILE for the password-protected PostgreSQL in $PGDATA: restore the file or remove $PG_DIR"
		fi
		log "creating the PostgreSQL password $PGPWFILE"
		{ random_hex 32 && echo; } | write_secret "$PGPWFILE"
	fi
	chmod 600 "$PGPWFILE"
	PGPW="$(head -n 1 "$PGPWFILE")"
	[[ "$PGPW" =~ ^[0-9a-f]{64}$ ]] || die "$PGPWFILE does not hold 64 hex digits"
}

# pg_prepare creates PG_DIR (mode 0700; owned by postgres when root) and,
# when root, the log postgres writes.
pg_prepare() {
	mkdir -p "$LOGS"
	[[ -L "$PG_DIR" ]] && die "$PG_DIR is a symlink"
	mkdir -p "$PG_DIR" "$PGSOCK"
	chmod 700 "$PG_DIR"
	if is_root; then
		chown -R postgres: "$PG_DIR"
		touch "$PG_LOG" && chown postgres: "$PG_LOG"
		runuser -u postgres -- test -w "$PG_DIR" ||
			die "user postgres cannot reach $PG_DIR (make its parent directories searchable, e.g. chmod o+x, or set HARVEST_CLUSTER_DIR)"
	fi
}

# pg_initdb creates the data directory with the superuser's password
# (scram-sha-256). As root, initdb reads it from a copy user postgres can
# read, removed right after.
pg_initdb() {
	local pwfile="$PGPWFILE" rc=0
	if is_root; then
		pwfile="$PG_DIR/initdb.password"
		install -m 600 -o postgres -g postgres "$PGPWFILE" "$pwfile"
	fi
	log "initdb $PGDATA"
	as_pg "$PGBIN/initdb" -D "$PGDATA" -U postgres -A scram-sha-256 --pwfile="$pwfile" \
		-E UTF8 --locale=C --no-sync >"$LOGS/initdb.log" 2>&1 || rc=$?
	[[ "$pwfile" == "$PGPWFILE" ]] || rm -f "$pwfile"
	[[ $rc -eq 0 ]] || die "initdb failed: see $LOGS/initdb.log"
}

# pg_secure switches a data directory of an older run from trust to the
# password: it sets the password over the unix socket while trust still
# lets it in, then rewrites pg_hba.conf and reloads.
pg_secure() {
	hba_trusts || return 0
	log "switching $PGDATA from trust to scram-sha-256 (password in $PGPWFILE)"
	# On stdin, not the command line, which every local user can read.
	printf "SET password_encryption = 'scram-sha-256';\nALTER ROLE postgres PASSWORD '%s';\n" "$PGPW" |
		pg_psql -d postgres -v ON_ERROR_STOP=1 -q -f - >/dev/null ||
		die "could not set the PostgreSQL password: see $PG_LOG"
	as_pg tee "$PGDATA/pg_hba.conf" >/dev/null <<'HBA'
# Written by scripts/local-cluster.sh: every client must present the
# password in the state directory's pg.password (scram-sha-256).
# TYPE  DATABASE  USER  ADDRESS       METHOD
local   all       all                 scram-sha-256
host    all       all   127.0.0.1/32  scram-sha-256
host    all       all   ::1/128       scram-sha-256
HBA
	pg_psql -d postgres -tAqc "SELECT pg_reload_conf()" >/dev/null ||
		die "could not reload PostgreSQL: see $PG_LOG"
}

pg_up() {
	PGBIN="$(pg_bin_dir)"
	ensure_pg_password
	pg_prepare
	[[ -f "$PGDATA/PG_VERSION" ]] || pg_initdb
	if ! pg_running; then
		log "starting PostgreSQL on 127.0.0.1:$PG_PORT (socket $PGSOCK)"
		as_pg "$PGBIN/pg_ctl" -D "$PGDATA" -l "$PG_LOG" -w -t 60 \
			-o "-p $PG_PORT -k $PGSOCK -c listen_addresses=127.0.0.1 ${HARVEST_CLUSTER_PG_OPTS:-}" start >/dev/null ||
			die "PostgreSQL did not start: see $PG_LOG"
	fi
	pg_secure
	local db
	for db in harvest_shard0 harvest_shard1; do
		if [[ -z "$(pg_psql -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname = '$db'")" ]]; then
			pg_psql createdb "$db"
		fi
	done
}

# alive PID: the process runs (a zombie waiting to be reaped does not).
alive() {
	local stat
	stat="$(cat "/proc/$1/stat" 2>/dev/null)" || { kill -0 "$1" 2>/dev/null; return; }
	stat="${stat##*) }"
	[[ "${stat:0:1}" != Z && "${stat:0:1}" != X ]]
}

pg_down() {
	[[ -d "$PGDATA" ]] || return 0
	PGBIN="$(pg_bin_dir)"
	if pg_running; then
		local postmaster
		postmaster="$(head -n 1 "$PGDATA/postmaster.pid" 2>/dev/null)" || true
		as_pg "$PGBIN/pg_ctl" -D "$PGDATA" -m fast -w -t 60 stop >/dev/null || true
		# The postmaster removes its pid file (what pg_ctl waits for) a
		# moment before it exits; on a busy machine the moment is long.
		local deadline=$((SECONDS + 30))
		while [[ -n "$postmaster" ]] && alive "$postmaster" && ((SECONDS < deadline)); do sleep 0.1; done
	fi
	# A postmaster pg_ctl could not stop (or a stale pid file).
	if [[ -f "$PGDATA/postmaster.pid" ]]; then
		local pid
		pid="$(head -n 1 "$PGDATA/postmaster.pid")"
		if [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null; then
			kill -KILL "$pid" 2>/dev/null || true
			# SIGKILL is asynchronous: down returns once the postmaster is gone.
			local deadline=$((SECONDS + 10))
			while kill -0 "$pid" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.1; done
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
	local dsn="postgres://postgres:$PGPW@127.0.0.1:$PG_PORT"
	# The raft state holds the shard DSNs, passwords included.
	mkdir -p "$STATE/n$i" && chmod 700 "$STATE/n$i"
	# Output goes to the log, stdin from /dev/null: nothing holds the caller's terminal or pipes.
	# The DSNs go in the environment (HARVEST_SHARD is --shard), which only this user can read.
	# shellcheck disable=SC2046 # tls_args is words (paths without spaces)
	HARVEST_SHARD="0=$dsn/harvest_shard0?sslmode=disable,1=$dsn/harvest_shard1?sslmode=disable" \
		"$BIN/harvestd" --node-id "n$i" --data-dir "$STATE/n$i" --log-format console $(tls_args) $(pprof_args "$k") \
		--cluster-key-file "$KEYFILE" --initial-token-file "$TOKENFILE" \
		--http-addr "127.0.0.1:${HTTP[k]}" \
		--gossip-addr "127.0.0.1:${GOSSIP[k]}" --gossip-profile local --join "127.0.0.1:${GOSSIP[0]}" \
		--raft-addr "127.0.0.1:${RAFT[k]}" --bootstrap-expect 3 --drain-check-interval 2s \
		</dev/null >"$LOGS/n$i.log" 2>&1 &
	echo $! >"$(pidfile "$i")"
}

alive_seen_by() {
	"$BIN/harvestctl" --addr "$SCHEME://127.0.0.1:$1" -o json cluster members 2>/dev/null |
		grep -o '"state": *"alive"' | wc -l
}

wait_formed() {
	local timeout="${HARVEST_CLUSTER_TIMEOUT:-90}" start=$SECONDS i k
	for i in "${NODES[@]}"; do
		k=$((i - 1))
		until curl -fsS -o /dev/null ${HARVEST_CA_CERT:+--cacert "$HARVEST_CA_CERT"} "$SCHEME://127.0.0.1:${HTTP[k]}/readyz" 2>/dev/null; do
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
				"$BIN/harvestctl" --addr "$SCHEME://127.0.0.1:${HTTP[k]}" cluster members >&2 || true
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
	choose_pg_dir
	save_config
	command -v curl >/dev/null 2>&1 || die "curl is required"
	build
	ensure_secrets
	ensure_certs
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
	echo "export HARVEST_ADDR=$SCHEME://127.0.0.1:${HTTP[0]}   # or :${HTTP[1]}, :${HTTP[2]}"
	[[ "${TLS:-0}" != 1 ]] || echo "export HARVEST_CA_CERT=$CERTS/ca.pem"
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
		echo "postgres  running  127.0.0.1:$PG_PORT  pid $(head -n 1 "$PGDATA/postmaster.pid")  data $PGDATA"
	else
		echo "postgres  stopped"
	fi
	for i in "${NODES[@]}"; do
		k=$((i - 1))
		if pid="$(node_pid "$i")"; then
			echo "n$i        running  $SCHEME://127.0.0.1:${HTTP[k]}  pid $pid"
			up+=("${HTTP[k]}")
		else
			echo "n$i        stopped"
		fi
	done
	[[ ${#up[@]} -gt 0 ]] || return 0
	[[ -x "$BIN/harvestctl" ]] || die "no $BIN/harvestctl: run '$0 up'"
	load_token
	[[ "${TLS:-0}" != 1 ]] || export HARVEST_CA_CERT="$CERTS/ca.pem"
	echo
	for k in "${up[@]}"; do
		if "$BIN/harvestctl" --addr "$SCHEME://127.0.0.1:$k" cluster members; then
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
