#!/usr/bin/env bash
# The docker-compose cluster, run for real (issue #53):
#
#   scripts/compose-test.sh           up, check, down -v
#   scripts/compose-test.sh --keep    up, check, and leave it running; prints
#                                     the export/harvestctl lines to go on with
#   eval "$(scripts/compose-test.sh --env)"
#                                     only make (or reuse) the base images and
#                                     Compose, and print the exports for them
#
# It runs the shipped docker-compose.cluster.yml and Dockerfile, with the
# commands of the compose file's header, on a machine that can pull nothing:
#   - base images made here from Debian's packages (scripts/lib/base-images.sh),
#     passed through the documented variables HARVEST_GO_IMAGE,
#     HARVEST_DEBIAN_IMAGE and HARVEST_POSTGRES_IMAGE (set them yourself to
#     use other images; the test then makes none);
#   - Compose v2 built from source when the docker CLI has none
#     (scripts/lib/compose-plugin.sh).
# Then, through the published host ports (127.0.0.1:7231..7233) with the CA
# and admin token read as the header says, and harvestctl built on the host:
# health, members, shard owners; a keyed start through node 1 and node 3
# (one run, the second 200); a keyed signal twice through node 2 (delivered
# once) and the run's completion; SIGKILL of a node under a load of keyed
# starts (every acknowledged start exactly once in PostgreSQL); a partition
# (docker network disconnect/connect); a shard drain (refused inside the
# retention window, forced, keyed starts still deduplicated); down -v leaving
# nothing behind.
#
# Two runs on one machine take turns (a lock in ~/.cache/harvest): the host
# ports, the project name and the subnet are the file's own.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$PWD

keep=0
env_only=0
for arg in "$@"; do
	case "$arg" in
	--keep) keep=1 ;;
	--env) env_only=1 ;;
	-h | --help)
		sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
		exit 0
		;;
	*)
		echo "compose-test: unknown argument $arg (--keep, --env)" >&2
		exit 2
		;;
	esac
done

t0=$SECONDS
log() { printf '[compose-test %4ds] %s\n' $((SECONDS - t0)) "$*" >&2; }
die() {
	log "FAIL: $*"
	exit 1
}

cache="${XDG_CACHE_HOME:-$HOME/.cache}/harvest"
mkdir -p "$cache"
exec 9>"$cache/compose-test.lock"
if ! flock -n 9; then
	log "another compose-test holds $cache/compose-test.lock; waiting (up to 30 min)"
	flock -w 1800 9 || die "the lock stayed held"
fi

# shellcheck source=lib/compose-plugin.sh
source scripts/lib/compose-plugin.sh
# shellcheck source=lib/base-images.sh
source scripts/lib/base-images.sh

ensure_compose >&2
if [[ -n "${HARVEST_GO_IMAGE:-}" && -n "${HARVEST_DEBIAN_IMAGE:-}" && -n "${HARVEST_POSTGRES_IMAGE:-}" ]]; then
	log "base images given: $HARVEST_GO_IMAGE $HARVEST_DEBIAN_IMAGE $HARVEST_POSTGRES_IMAGE"
	export HARVEST_GO_IMAGE HARVEST_DEBIAN_IMAGE HARVEST_POSTGRES_IMAGE
else
	base_images >&2
fi
log "base images and compose ready"

if ((env_only)); then
	[[ -z "${DOCKER_CONFIG:-}" ]] || printf 'export DOCKER_CONFIG=%q\n' "$DOCKER_CONFIG"
	printf 'export HARVEST_GO_IMAGE=%q HARVEST_DEBIAN_IMAGE=%q HARVEST_POSTGRES_IMAGE=%q\n' \
		"$HARVEST_GO_IMAGE" "$HARVEST_DEBIAN_IMAGE" "$HARVEST_POSTGRES_IMAGE"
	exit 0
fi

file=docker-compose.cluster.yml
project=harvest-cluster # the file's name:
grep -q "^name: $project\$" "$file" || die "$file no longer names the project $project"
dc() { docker compose -f "$file" "$@"; }

work=$(mktemp -d)
hc_bin="$work/harvestctl"
log "building harvestctl on the host"
go build -o "$hc_bin" ./cmd/harvestctl

# What the project left behind: containers, networks, volumes.
leftovers() {
	docker ps -aq --filter "label=com.docker.compose.project=$project"
	docker network ls -q --filter "label=com.docker.compose.project=$project"
	docker volume ls -q --filter "label=com.docker.compose.project=$project"
}

finished=0
on_exit() {
	local rc=$?
	if ((rc != 0)); then
		log "failed (exit $rc); the cluster as it was:"
		dc ps -a >&2 || true
		dc logs --no-color --tail 40 >&2 || true
	fi
	if ((keep)) && ((finished)); then
		:
	else
		dc down -v --remove-orphans >/dev/null 2>&1 || true
	fi
	rm -rf "$work"
	exit "$rc"
}
trap on_exit EXIT

if [[ -n "$(leftovers)" ]]; then
	log "taking down what an earlier run left (down -v)"
	dc down -v --remove-orphans >&2
fi

# ---------------------------------------------------------------------------
# The header's commands.
log "RUN docker compose -f $file up -d --build --wait"
up_start=$SECONDS
dc up -d --build --wait >&2 || die "up -d --build --wait"
log "up in $((SECONDS - up_start)) s"

log "RUN export HARVEST_TOKEN=\"\$(docker compose -f $file exec -T harvest1 cat /var/lib/harvest/secrets/admin.token)\""
HARVEST_TOKEN="$(dc exec -T harvest1 cat /var/lib/harvest/secrets/admin.token)"
export HARVEST_TOKEN
[[ "$HARVEST_TOKEN" == hvt_* ]] || die "admin.token is not an hvt_ token"
ca="$work/harvest-ca.pem"
log "RUN docker compose -f $file exec -T harvest1 cat /var/lib/harvest/secrets/certs/ca.pem >harvest-ca.pem"
dc exec -T harvest1 cat /var/lib/harvest/secrets/certs/ca.pem >"$ca"
grep -q "BEGIN CERTIFICATE" "$ca" || die "ca.pem is no certificate"
log "RUN harvestctl --addr https://127.0.0.1:7233 --ca-cert harvest-ca.pem cluster members"
"$hc_bin" --addr https://127.0.0.1:7233 --ca-cert "$ca" cluster members >&2 || die "cluster members"

# ---------------------------------------------------------------------------
# Helpers, all through the host ports.
port() { echo $((7230 + $1)); } # node n (1..3) -> its host port
hc() {                          # hc NODE harvestctl-args...
	local n=$1
	shift
	"$hc_bin" --addr "https://127.0.0.1:$(port "$n")" --ca-cert "$ca" "$@"
}
# api NODE METHOD PATH [BODY [KEY]]: prints "<status> <body>".
api() {
	local n=$1 method=$2 path=$3 body=${4:-} key=${5:-} out
	local args=(-sS --max-time 30 --cacert "$ca" -H "Authorization: Bearer $HARVEST_TOKEN" -X "$method"
		-o "$work/api.out" -w '%{http_code}')
	[[ -z "$body" ]] || args+=(-H 'Content-Type: application/json' --data "$body")
	[[ -z "$key" ]] || args+=(-H "Idempotency-Key: $key")
	out=$(curl "${args[@]}" "https://127.0.0.1:$(port "$n")/api/harvest$path" 2>/dev/null) || out=000
	printf '%s %s\n' "$out" "$(tr -d '\n' <"$work/api.out" 2>/dev/null)"
	rm -f "$work/api.out"
}
# start NODE NAME KEY INPUT -> "<status> <execution_id>"
start() {
	local r
	r=$(api "$1" POST "/workflows/$2/start" "{\"input\": $4}" "$3")
	printf '%s %s\n' "${r%% *}" "$(jq -r '.execution_id // empty' <<<"${r#* }" 2>/dev/null)"
}
# start_retry: start, retried with the same key while the answer is 502, 503
# or no answer (an owner changing hands: the API's "retry" answers), up to 90 s.
start_retry() {
	local r deadline=$((SECONDS + 90))
	while :; do
		r=$(start "$@")
		case "${r%% *}" in
		502 | 503 | 000) ((SECONDS < deadline)) || break ;;
		*) break ;;
		esac
		sleep 2
	done
	echo "$r"
}
# psql_all SQL: runs SQL on both shard databases, rows prefixed by the shard.
psql_all() {
	local s
	for s in 0 1; do
		dc exec -T postgres psql -U harvest -d "harvest_shard$s" -AtF ' ' -c "$1" | sed "s/^/$s /"
	done
}
# wait_for SECONDS WHAT COMMAND...: COMMAND until it succeeds.
wait_for() {
	local limit=$1 what=$2 deadline=$((SECONDS + $1))
	shift 2
	until "$@" >/dev/null 2>&1; do
		((SECONDS < deadline)) || die "$what: not within ${limit}s"
		sleep 2
	done
	log "ok: $what"
}
alive_count() { # alive_count NODE: members alive as NODE sees them
	hc "$1" -o json cluster members | jq '[.. | objects | select(.state? == "alive")] | length'
}
members_alive() { [[ "$(alive_count "$1")" == "$2" ]]; }
# owners NODE: "shard owner" lines from shard list.
owners() {
	hc "$1" -o json shard list | jq -r '.. | objects | select(has("shard_id") and has("state")) | "\(.shard_id) \(.owner // "-")"'
}
# owners_settled: every shard owned, and the same owners 5 s later.
owners_settled() {
	local a b
	a=$(owners 1) && sleep 5 && b=$(owners 1) || return 1
	[[ -n "$a" && "$a" == "$b" ]] && ! grep -q ' -$' <<<"$a"
}
all_owned() { # all_owned NODE [EXCLUDED_OWNER]
	local o
	o=$(owners "$1") || return 1
	[[ -n "$o" ]] || return 1
	! grep -q ' -$' <<<"$o" || return 1
	[[ -z "${2:-}" ]] || ! grep -q " $2\$" <<<"$o"
}

# ---------------------------------------------------------------------------
log "CHECK all three nodes healthy, 3 alive, every shard owned"
for n in 1 2 3; do
	curl -fsS --max-time 10 --cacert "$ca" -o /dev/null "https://127.0.0.1:$(port "$n")/readyz" || die "node $n /readyz"
done
for n in 1 2 3; do
	wait_for 60 "node $n sees 3 members alive" members_alive "$n" 3
done
wait_for 60 "every shard owned" all_owned 1
hc 1 shard list >&2

run=$(date +%s)
log "CHECK a keyed start through node 1, the same key through node 3: one run, the second 200"
read -r s1 id1 <<<"$(start 1 onboarding "ct-$run-dedup" '{"user_id": 42}')"
read -r s3 id3 <<<"$(start 3 onboarding "ct-$run-dedup" '{"user_id": 42}')"
[[ "$s1" == 201 && -n "$id1" ]] || die "first keyed start answered $s1"
[[ "$s3" == 200 && "$id3" == "$id1" ]] || die "the retry through node 3 answered $s3 $id3 (want 200 $id1)"
log "ok: 201 $id1, then 200 $id3"

log "CHECK a keyed signal sent twice through node 2 is delivered once; the run completes"
read -r s cid <<<"$(start 1 counter "ct-$run-counter" '{"until": 2}')"
[[ "$s" == 201 ]] || die "counter start answered $s"
for i in 1 2; do
	hc 2 -o json workflow signal "$cid" add --payload-json '{"id": "a", "n": 1}' --idempotency-key "ct-$run-sig-a" >"$work/sig$i.json" ||
		die "signal $i through node 2"
done
jq -c . "$work/sig1.json" "$work/sig2.json" >&2
hc 2 -o json workflow signal "$cid" add --payload-json '{"id": "b", "n": 2}' --idempotency-key "ct-$run-sig-b" >/dev/null || die "signal b"
wait_for 120 "the counter run completes" hc 2 workflow result "$cid"
result=$(hc 2 -o json workflow result "$cid")
jq -e '.. | objects | select(has("ids")) | select(.ids == ["a", "b"] and .count == 2)' <<<"$result" >/dev/null ||
	die "the counter's result is not ids [a, b], count 2 (the signal twice was delivered twice?): $result"
log "ok: result $(jq -c '.. | objects | select(has("ids"))' <<<"$result" | head -n1)"
wait_for 120 "the onboarding run completes" hc 3 workflow result "$id1"

# ---------------------------------------------------------------------------
log "CHECK SIGKILL of harvest2 during 60 keyed starts through nodes 1 and 3"
acks="$work/acks"
: >"$acks"
load() {
	local i n r
	for i in $(seq 1 60); do
		n=$((i % 2 == 0 ? 3 : 1))
		r=$(start "$n" onboarding "ct-$run-kill-$i" "{\"user_id\": $i}")
		echo "$i $r" >>"$acks"
	done
}
load &
load_pid=$!
while (($(wc -l <"$acks") < 10)); do sleep 0.5; done
log "RUN docker compose -f $file kill -s SIGKILL harvest2 (after $(wc -l <"$acks") starts)"
dc kill -s SIGKILL harvest2 >&2
wait "$load_pid"
acked=$(awk '$2 == 200 || $2 == 201' "$acks" | wc -l)
log "load done: $acked of 60 acknowledged; answers: $(awk '{print $2}' "$acks" | sort | uniq -c | tr -s ' \n' ' ')"
log "RUN docker compose -f $file start harvest2"
dc start harvest2 >&2
wait_for 180 "harvest2 healthy again" curl -fsS --max-time 5 --cacert "$ca" -o /dev/null "https://127.0.0.1:$(port 2)/readyz"
for n in 1 2 3; do
	wait_for 120 "node $n sees 3 members alive after the restart" members_alive "$n" 3
done
wait_for 60 "every shard owned after the restart" all_owned 2
psql_all "SELECT idempotency_key, execution_id FROM harvest_executions WHERE idempotency_key LIKE 'ct-$run-kill-%'" >"$work/rows"
dups=$(awk '{print $2}' "$work/rows" | sort | uniq -d)
[[ -z "$dups" ]] || die "keys with more than one run: $dups"
while read -r i status id; do
	[[ "$status" == 200 || "$status" == 201 ]] || continue
	row=$(awk -v k="ct-$run-kill-$i" '$2 == k' "$work/rows")
	[[ -n "$row" ]] || die "acknowledged start ct-$run-kill-$i ($id) is not in PostgreSQL"
	[[ "$(awk '{print $3}' <<<"$row")" == "$id" ]] || die "ct-$run-kill-$i: acknowledged $id, PostgreSQL has $row"
done <"$acks"
# Every key, acknowledged or not, retried once more: at most one run each.
while read -r i status id; do
	read -r s2 id2 <<<"$(start 2 onboarding "ct-$run-kill-$i" "{\"user_id\": $i}")"
	if [[ "$status" == 200 || "$status" == 201 ]]; then
		[[ "$s2" == 200 && "$id2" == "$id" ]] || die "retry of acknowledged ct-$run-kill-$i: $s2 $id2 (want 200 $id)"
	else
		[[ "$s2" == 200 || "$s2" == 201 ]] || die "retry of unacknowledged ct-$run-kill-$i: $s2"
	fi
done <"$acks"
psql_all "SELECT idempotency_key FROM harvest_executions WHERE idempotency_key LIKE 'ct-$run-kill-%'" >"$work/rows2"
[[ "$(awk '{print $2}' "$work/rows2" | sort | uniq -d)" == "" ]] || die "a retry made a second run"
[[ "$(wc -l <"$work/rows2")" == 60 ]] || die "after the retries $(wc -l <"$work/rows2") of 60 keys have a run"
log "ok: all $acked acknowledged starts exactly once in PostgreSQL, with their execution ids; retries of all 60 keys: one run each"

# ---------------------------------------------------------------------------
log "CHECK a partition: the owner of shard 0 disconnected from the network"
owner=$(owners 1 | awk '$1 == 0 {print $2}')
[[ "$owner" =~ ^n[123]$ ]] || die "shard 0's owner is '$owner'"
victim=${owner#n}
others=()
for n in 1 2 3; do ((n == victim)) || others+=("$n"); done
net="${project}_harvest"
cid_victim=$(dc ps -q "harvest$victim")
log "RUN docker network disconnect $net harvest$victim"
docker network disconnect "$net" "$cid_victim"
for n in "${others[@]}"; do
	wait_for 120 "node $n sees 2 members alive" members_alive "$n" 2
done
wait_for 120 "the others own every shard, none on $owner" all_owned "${others[0]}" "$owner"
for i in 1 2 3 4 5 6; do
	n=${others[$((i % 2))]}
	read -r s _ <<<"$(start_retry "$n" onboarding "ct-$run-part-$i" '{"user_id": 7}')"
	[[ "$s" == 201 ]] || die "keyed start $i through node $n during the partition answered $s"
done
log "ok: 6 keyed starts through nodes ${others[*]} during the partition"
log "RUN docker network connect --ip 172.28.0.1$victim $net harvest$victim"
docker network connect --ip "172.28.0.1$victim" "$net" "$cid_victim"
for n in 1 2 3; do
	wait_for 180 "node $n sees 3 members alive after the partition" members_alive "$n" 3
done
wait_for 60 "every shard owned after the partition" all_owned "$victim"
wait_for 120 "shard owners settled after the partition" owners_settled
hc 1 cluster members >&2

# ---------------------------------------------------------------------------
log "CHECK shard drain: keys stay deduplicated across the move; the last writable shard is refused without --force"
# Keys placed on shard 1 before the drain.
for i in $(seq 1 8); do
	read -r s _ <<<"$(start_retry 1 onboarding "ct-$run-drain-$i" '{"user_id": 8}')"
	[[ "$s" == 201 ]] || die "keyed start ct-$run-drain-$i answered $s"
done
psql_all "SELECT idempotency_key, execution_id FROM harvest_executions WHERE idempotency_key LIKE 'ct-$run-drain-%'" >"$work/drain"
awk '$1 == 1' "$work/drain" | grep -q . || die "none of 8 keys was placed on shard 1"
# Harvest refuses only a drain that would break the idempotency promise or
# stop all placement (the last writable shard, an unreachable shard); a
# drain inside the window is safe by design: retries probe the shards of
# every placement epoch still inside the window (README, Cluster).
log "RUN harvestctl shard drain 1 (runs inside its window; shard 0 stays writable)"
hc 2 shard drain 1 >&2 || die "drain of shard 1 was refused although shard 0 stays writable"
wait_for 60 "shard 1 is draining" bash -c "'$hc_bin' --addr https://127.0.0.1:7231 --ca-cert '$ca' -o json shard status 1 | grep -q draining"
while read -r shard key id; do
	n=$((RANDOM % 3 + 1))
	read -r s id2 <<<"$(start_retry "$n" onboarding "$key" '{"user_id": 8}')"
	[[ "$s" == 200 && "$id2" == "$id" ]] || die "$key (on shard $shard) after the drain, through node $n: $s $id2 (want 200 $id)"
done <"$work/drain"
for i in 1 2 3 4; do
	n=$(((i - 1) % 3 + 1))
	read -r s _ <<<"$(start_retry "$n" onboarding "ct-$run-after-$i" '{"user_id": 9}')"
	[[ "$s" == 201 ]] || die "new keyed start ct-$run-after-$i after the drain, through node $n, answered $s"
done
psql_all "SELECT idempotency_key FROM harvest_executions WHERE idempotency_key LIKE 'ct-$run-after-%'" | awk '$1 == 1' | grep -q . &&
	die "a new run was placed on the draining shard 1"
log "ok: 8 keys retried after the drain, each 200 with its first run; new keys go to shard 0"
log "RUN harvestctl shard drain 0 (the last writable shard; no --force)"
if hc 2 shard drain 0 >"$work/drain0.out" 2>&1; then
	cat "$work/drain0.out" >&2
	die "drain of the last writable shard succeeded without --force"
fi
cat "$work/drain0.out" >&2
grep -qi "unsafe\|force" "$work/drain0.out" || die "the refusal does not say why"
log "ok: refused"
log "RUN harvestctl shard drain 0 --force"
hc 2 shard drain 0 --force >&2 || die "drain 0 --force"
log "ok: proceeded"
# Known product behaviour (reported with issue #53, not asserted): with every
# shard draining, a keyed retry of an existing key is answered 503, not 200.
key=$(awk 'NR == 1 {print $2}' "$work/drain")
read -r s _ <<<"$(start 1 onboarding "$key" '{"user_id": 8}')"
log "note: with every shard draining, a keyed retry of $key answered $s (200 expected; 503 is a known finding)"

# ---------------------------------------------------------------------------
if ((keep)); then
	finished=1
	log "all checks passed in $((SECONDS - t0)) s; --keep: the cluster stays up. Next:"
	cp "$ca" "$root/harvest-ca.pem"
	{
		[[ -z "${DOCKER_CONFIG:-}" ]] || printf 'export DOCKER_CONFIG=%q\n' "$DOCKER_CONFIG"
		printf 'export HARVEST_GO_IMAGE=%q HARVEST_DEBIAN_IMAGE=%q HARVEST_POSTGRES_IMAGE=%q\n' \
			"$HARVEST_GO_IMAGE" "$HARVEST_DEBIAN_IMAGE" "$HARVEST_POSTGRES_IMAGE"
		echo "export HARVEST_TOKEN=\"\$(docker compose -f $file exec -T harvest1 cat /var/lib/harvest/secrets/admin.token)\""
		echo "export HARVEST_CA_CERT=$root/harvest-ca.pem"
		echo "go build -o bin/harvestctl ./cmd/harvestctl"
		echo "bin/harvestctl --addr https://127.0.0.1:7233 cluster members"
		echo "bin/harvestctl --addr https://127.0.0.1:7231 shard list"
		echo "docker compose -f $file down -v"
	}
	exit 0
fi

log "RUN docker compose -f $file down -v"
dc down -v >&2
left=$(leftovers)
[[ -z "$left" ]] || die "down -v left: $left"
log "ok: no container, network or volume of $project left"
finished=1
log "PASS: all checks in $((SECONDS - t0)) s"
