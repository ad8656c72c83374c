#!/usr/bin/env bash
# Usage: deploy/testenv.sh CMD [ARGS...]
#
# Runs CMD with a throwaway Redis and a throwaway FerretDB (MongoDB wire
# protocol on SQLite) listening on free loopback ports, and exports:
#
#   KEYWARD_TEST_REDIS_URL        redis://127.0.0.1:PORT/0
#   KEYWARD_TEST_MONGO_URI        mongodb://127.0.0.1:PORT/
#   KEYWARD_TEST_REQUIRE_SERVERS  1 (tests must fail, not skip, without servers)
#   KEYWARD_TEST_REDIS_SERVER     path of redis-server (to start more servers)
#   KEYWARD_TEST_FERRETDB_BIN     path of the FerretDB test server binary
#   KEYWARD_TEST_CHROMIUM         path of Chromium (the dashboard's browser tests, web/e2e)
#   KEYWARD_TEST_AXE              axe-core's axe.min.js (installed with npm into the cache dir)
#   KEYWARD_TEST_PROMTOOL         path of promtool (deploy/'s check of the alert rules)
#   KEYWARD_TEST_SCRATCH          a directory the test processes of this run share (removed
#                                 at the end): the keyward program the process tests start
#                                 is built there once, and test databases migrated once
#                                 are kept there to be copied (internal/testenv)
#   KEYWARD_TEST_SENTINEL_URL     with KEYWARD_TEST_SENTINEL=1 only: a Sentinel group
#                                 (master, replica, three sentinels), in the URL form
#                                 KEYWARD_REDIS_URL takes
#   KEYWARD_TEST_REDIS_CLUSTER_URL  with KEYWARD_TEST_REDIS_CLUSTER=1 only: a Redis Cluster
#                                 of three masters, each with one replica (six servers), in
#                                 the URL form KEYWARD_REDIS_URL takes
#
# redis-server, Debian's chromium and prometheus (for promtool) are installed with apt-get when missing. The FerretDB program in
# deploy/ferretdb is built once into a cache directory and rebuilt only when
# its sources change. Both servers are stopped, and their temporary
# directories removed, when CMD ends, fails or is interrupted; the script
# exits with CMD's status.
set -euo pipefail

readonly START_TIMEOUT=30 # seconds to wait for each server to accept connections

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tmp=""
ferret_bin=""
ferret_pid=""
ferret_dir=""
extra_pids=() # every redis-server started by start_redis

log() { echo "testenv: $*" >&2; }
die() {
	log "error: $*"
	exit 1
}

# --- cleanup ----------------------------------------------------------------

# shellcheck disable=SC2317 # called from the EXIT trap
stop_server() { # pid
	local pid=$1 i
	[[ -n $pid ]] || return 0
	kill -TERM "$pid" 2>/dev/null || return 0
	for ((i = 0; i < 50; i++)); do # up to 5 s, then SIGKILL
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
}

# shellcheck disable=SC2317 # called from the EXIT trap
cleanup() {
	local pid
	for pid in "${extra_pids[@]}"; do stop_server "$pid"; done
	stop_server "$ferret_pid"
	if [[ -n $tmp ]]; then rm -rf "$tmp"; fi
	if [[ $ferret_dir == /dev/shm/keyward-testenv-* ]]; then rm -rf "$ferret_dir"; fi
	if [[ -n $ferret_bin ]]; then rm -f "$ferret_bin.tmp.$$"; fi
}
# On a signal: clean up, then die of the same signal so callers see it.
# shellcheck disable=SC2317 # called from the signal traps
on_signal() {
	cleanup
	trap - EXIT "$1"
	kill -s "$1" $$
}
trap cleanup EXIT
trap 'on_signal INT' INT
trap 'on_signal TERM' TERM
trap 'on_signal HUP' HUP

[[ $# -gt 0 ]] || die "usage: deploy/testenv.sh CMD [ARGS...]"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/keyward-testenv.XXXXXX")

# --- redis-server -------------------------------------------------------------

if ! command -v redis-server >/dev/null 2>&1; then
	log "redis-server not found; installing it with apt-get"
	sudo=()
	if [[ $(id -u) -ne 0 ]]; then sudo=(sudo -n); fi
	if ! {
		"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
			"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server
	} >"$tmp/apt.log" 2>&1; then
		cat "$tmp/apt.log" >&2
		die "could not install redis-server (apt-get failed, output above); install it by hand"
	fi
	command -v redis-server >/dev/null 2>&1 || die "redis-server still not found after apt-get install"
fi
redis_server=$(command -v redis-server)

# --- chromium (the dashboard's browser tests) -----------------------------------

find_chromium() {
	if [[ -n ${KEYWARD_TEST_CHROMIUM:-} && -x ${KEYWARD_TEST_CHROMIUM} ]]; then
		echo "$KEYWARD_TEST_CHROMIUM"
		return
	fi
	command -v chromium 2>/dev/null || command -v chromium-browser 2>/dev/null || true
}
chromium_bin=$(find_chromium)
if [[ -z $chromium_bin ]]; then
	log "chromium not found; installing it with apt-get (the dashboard's browser tests need it)"
	sudo=()
	if [[ $(id -u) -ne 0 ]]; then sudo=(sudo -n); fi
	if ! {
		"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
			"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium
	} >"$tmp/apt-chromium.log" 2>&1; then
		cat "$tmp/apt-chromium.log" >&2
		die "could not install chromium (apt-get failed, output above); install it by hand or set KEYWARD_TEST_CHROMIUM"
	fi
	chromium_bin=$(find_chromium)
	[[ -n $chromium_bin ]] || die "chromium still not found after apt-get install"
fi

# --- promtool (checks deploy/prometheus/ rules) ------------------------------------

find_promtool() {
	if [[ -n ${KEYWARD_TEST_PROMTOOL:-} && -x ${KEYWARD_TEST_PROMTOOL} ]]; then
		echo "$KEYWARD_TEST_PROMTOOL"
		return
	fi
	command -v promtool 2>/dev/null || true
}
promtool_bin=$(find_promtool)
if [[ -z $promtool_bin ]]; then
	log "promtool not found; installing Debian's prometheus package with apt-get (go test ./deploy/ checks the alert rules with it)"
	sudo=()
	if [[ $(id -u) -ne 0 ]]; then sudo=(sudo -n); fi
	if ! {
		"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
			"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus
	} >"$tmp/apt-prometheus.log" 2>&1; then
		cat "$tmp/apt-prometheus.log" >&2
		die "could not install prometheus (apt-get failed, output above); install it by hand or set KEYWARD_TEST_PROMTOOL"
	fi
	promtool_bin=$(find_promtool)
	[[ -n $promtool_bin ]] || die "promtool still not found after apt-get install prometheus"
fi

# --- FerretDB test server binary ------------------------------------------------

src="$repo/deploy/ferretdb"
# FerretDB v1.24's SQLite backend indexes _id as _ferretdb_sjson->"_id" but looks documents
# up by _ferretdb_sjson->'$._id': SQLite does not see the two as one expression, so every
# find, update and delete by _id scans its table (EXPLAIN QUERY PLAN: SCAN), and a test
# collection's writes slow down as it grows. The build patches the one constant (in a
# vendored copy outside the repo) so lookups name the indexed expression; the two are the
# same JSON value. MongoDB itself has no such limit.
id_patch='s/IDColumn = DefaultColumn + "->'"'"'\$\._id'"'"'"/IDColumn = DefaultColumn + `->"_id"`/'
hash=$(cat "$src/go.mod" "$src/go.sum" "$src/main.go" <(echo "$id_patch") <(go env GOVERSION GOOS GOARCH) |
	sha256sum | cut -c1-16)
cache="${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/keyward"
ferret_bin="$cache/ferretdb-$hash"
if [[ ! -x $ferret_bin ]]; then
	log "building the FerretDB test server into $ferret_bin (takes about 2 minutes the first time)"
	mkdir -p "$cache"
	build_dir=$(mktemp -d "$cache/build-ferretdb-XXXXXX")
	cp "$src/go.mod" "$src/go.sum" "$src/main.go" "$build_dir/"
	meta="$build_dir/vendor/github.com/FerretDB/FerretDB/internal/backends/sqlite/metadata/metadata.go"
	(cd "$build_dir" && GOWORK=off go mod vendor && sed -i "$id_patch" "$meta" && grep -q 'IDColumn = DefaultColumn + `->"_id"`' "$meta" &&
		GOWORK=off CGO_ENABLED=0 go build -mod=vendor -trimpath -buildvcs=false -o "$ferret_bin.tmp.$$" .) ||
		{ rm -rf "$build_dir"; die "building deploy/ferretdb (with its _id lookup patch) failed"; }
	rm -rf "$build_dir"
	mv -f "$ferret_bin.tmp.$$" "$ferret_bin"
	# Drop binaries built from older sources.
	find "$cache" -maxdepth 1 -name 'ferretdb-*' ! -name "ferretdb-$hash" -delete 2>/dev/null || true
fi

# --- axe-core (the dashboard's accessibility check, web/e2e) ----------------------
# Installed with npm into the cache, never into the repository; pinned. Without npm (or
# offline) the accessibility tests skip, as they do without KEYWARD_TEST_AXE.
axe_version=4.14.1
axe_js="$cache/axe-core-$axe_version/node_modules/axe-core/axe.min.js"
if [[ -z ${KEYWARD_TEST_AXE:-} ]]; then
	if [[ ! -f $axe_js ]] && command -v npm >/dev/null 2>&1; then
		log "installing axe-core $axe_version with npm into $cache"
		mkdir -p "$cache/axe-core-$axe_version"
		npm install --silent --no-audit --no-fund --prefix "$cache/axe-core-$axe_version" "axe-core@$axe_version" >"$tmp/npm-axe.log" 2>&1 ||
			log "npm could not install axe-core (the accessibility tests will skip): $(tail -1 "$tmp/npm-axe.log")"
	fi
	if [[ -f $axe_js ]]; then export KEYWARD_TEST_AXE="$axe_js"; fi
fi

# --- helpers --------------------------------------------------------------------

# redis_ping PORT: true when a Redis server on 127.0.0.1:PORT answers PING.
redis_ping() {
	local reply
	reply=$(
		exec 2>/dev/null
		exec 3<>"/dev/tcp/127.0.0.1/$1" || exit
		printf 'PING\r\n' >&3
		IFS= read -r -t 2 line <&3 && echo "$line"
	) || true
	[[ $reply == "+PONG"* ]]
}

# port_in_use PORT: true when something accepts connections on 127.0.0.1:PORT.
port_in_use() {
	(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# show_log NAME FILE: print the last lines of a server's log.
show_log() {
	log "last lines of the $1 log:"
	tail -n 20 "$2" >&2 || true
}

# --- start Redis ------------------------------------------------------------------
# Redis cannot report a port it picked, so try random free-looking ports below
# Linux's ephemeral range (32768-60999) and retry when the bind fails (another
# process may take the port in between).

# start_redis NAME [ARGS...]: starts redis-server with ARGS on a free loopback port, its
# log in $tmp/NAME.log and its files in $tmp/NAME; waits until it answers PING and sets
# started_port and started_pid (the pid is also kept for cleanup).
start_redis() {
	local name=$1 attempt port i
	shift
	mkdir -p "$tmp/$name"
	started_port=""
	for attempt in 1 2 3 4 5 6 7 8 9 10; do
		port=$((16384 + RANDOM % 16384))
		port_in_use "$port" && continue
		"$redis_server" "$@" --bind 127.0.0.1 --port "$port" \
			--dir "$tmp/$name" --logfile "$tmp/$name.log" --loglevel warning \
			--daemonize no </dev/null &
		started_pid=$!
		for ((i = 0; i < START_TIMEOUT * 10; i++)); do
			kill -0 "$started_pid" 2>/dev/null || break
			if redis_ping "$port"; then
				started_port=$port
				break
			fi
			sleep 0.1
		done
		if [[ -n $started_port ]]; then
			extra_pids+=("$started_pid")
			return 0
		fi
		if kill -0 "$started_pid" 2>/dev/null; then
			show_log "$name" "$tmp/$name.log"
			die "$name on 127.0.0.1:$port did not answer PING within ${START_TIMEOUT}s"
		fi
		wait "$started_pid" 2>/dev/null || true
		log "$name could not start on port $port (attempt $attempt: $(tail -n 1 "$tmp/$name.log")), trying another port"
	done
	show_log "$name" "$tmp/$name.log"
	die "could not start $name"
}

start_redis redis --save '' --appendonly no
redis_port=$started_port

# --- the opt-in Sentinel group -------------------------------------------------------
# KEYWARD_TEST_SENTINEL=1 also starts a Sentinel group named kwtest: a master, a replica
# and three sentinels (quorum 2, master down after 1 s), and exports its URL.

sentinel_url=""
if [[ ${KEYWARD_TEST_SENTINEL:-} == 1 ]]; then
	# No diskless-sync delay: the replica is in sync at once, not 5 s after it attached.
	start_redis sentinel-master --save '' --appendonly no --repl-diskless-sync-delay 0
	master_port=$started_port
	start_redis sentinel-replica --save '' --appendonly no --replicaof 127.0.0.1 "$master_port"
	for ((i = 0; ; i++)); do
		[[ $(redis-cli -p "$started_port" info replication 2>/dev/null) == *master_link_status:up* ]] && break
		((i < START_TIMEOUT * 10)) || die "the Sentinel group's replica did not sync within ${START_TIMEOUT}s"
		sleep 0.1
	done
	sentinel_ports=()
	for n in 1 2 3; do
		# A sentinel rewrites its config file, so each gets its own.
		printf 'sentinel monitor kwtest 127.0.0.1 %s 2\nsentinel down-after-milliseconds kwtest 1000\nsentinel failover-timeout kwtest 5000\n' \
			"$master_port" >"$tmp/sentinel$n.conf"
		start_redis "sentinel$n" "$tmp/sentinel$n.conf" --sentinel
		sentinel_ports+=("$started_port")
	done
	# Ready once every sentinel sees the replica and the two other sentinels (they find
	# each other through the master's hello channel, every 2 s).
	for port in "${sentinel_ports[@]}"; do
		for ((i = 0; ; i++)); do
			info=$(redis-cli -p "$port" sentinel master kwtest 2>/dev/null | tr '\n' ' ')
			[[ $info == *"num-slaves 1 "* && $info == *"num-other-sentinels 2 "* ]] && break
			((i < START_TIMEOUT * 10)) || die "sentinel on port $port did not see the whole group within ${START_TIMEOUT}s: $info"
			sleep 0.1
		done
	done
	sentinel_url="redis://127.0.0.1:${sentinel_ports[0]}/0?master_name=kwtest&addr=127.0.0.1:${sentinel_ports[1]}&addr=127.0.0.1:${sentinel_ports[2]}"
fi

# --- the opt-in Redis Cluster ----------------------------------------------------------
# KEYWARD_TEST_REDIS_CLUSTER=1 also starts a Redis Cluster: three masters and a replica of
# each (six servers; a node's cluster bus listens on its port + 10000, and start_redis tries
# another port when that one is taken), joined by redis-cli --cluster create, and exports
# its URL once every node reports cluster_state:ok. A node is judged failed after 2 s
# (cluster-node-timeout), so a test that kills a master sees its replica promoted soon.

cluster_url=""
if [[ ${KEYWARD_TEST_REDIS_CLUSTER:-} == 1 ]]; then
	cluster_started=$SECONDS
	cluster_ports=()
	for n in 1 2 3 4 5 6; do
		start_redis "cluster$n" --save '' --appendonly no --cluster-enabled yes \
			--cluster-config-file nodes.conf --cluster-node-timeout 2000 --repl-diskless-sync-delay 0
		cluster_ports+=("$started_port")
	done
	cluster_addrs=()
	for port in "${cluster_ports[@]}"; do cluster_addrs+=("127.0.0.1:$port"); done
	# The first three become masters, the last three their replicas.
	if ! redis-cli --cluster create "${cluster_addrs[@]}" --cluster-replicas 1 --cluster-yes \
		>"$tmp/cluster-create.log" 2>&1; then
		cat "$tmp/cluster-create.log" >&2
		die "redis-cli --cluster create failed (output above)"
	fi
	for port in "${cluster_ports[@]}"; do
		for ((i = 0; ; i++)); do
			[[ $(redis-cli -p "$port" cluster info 2>/dev/null) == *cluster_state:ok* ]] && break
			((i < START_TIMEOUT * 10)) || die "the Redis Cluster node on port $port did not reach cluster_state:ok within ${START_TIMEOUT}s"
			sleep 0.1
		done
	done
	# The replicas attach once the masters agree; wait for their sync too.
	for port in "${cluster_ports[@]:3}"; do
		for ((i = 0; ; i++)); do
			[[ $(redis-cli -p "$port" info replication 2>/dev/null) == *master_link_status:up* ]] && break
			((i < START_TIMEOUT * 10)) || die "the Redis Cluster replica on port $port did not sync within ${START_TIMEOUT}s"
			sleep 0.1
		done
	done
	cluster_url="redis://${cluster_addrs[0]}?addr=${cluster_addrs[1]}&addr=${cluster_addrs[2]}&cluster=true"
	log "Redis Cluster of six servers ready in $((SECONDS - cluster_started)) s"
fi

# --- start FerretDB ----------------------------------------------------------------
# Port 0: the server picks a free port and prints its URI on stdout once listening.

# Create the output file first: the background job opens it for writing only when it gets
# scheduled, and under load the loop below can look before that.
: >"$tmp/ferretdb.out"
# Its data lives in memory (tmpfs /dev/shm) where the machine has it: FerretDB's SQLite waits
# for the disk after every write, and on a shared disk that stalls it for seconds. GOGC=400:
# at the default it spends about a fifth of its CPU in the garbage collector decoding whole
# collections (measured in internal/clusterproof); it stays well under 1 GiB.
ferret_dir="$tmp/ferretdb"
if [[ -d /dev/shm && -w /dev/shm ]]; then
	ferret_dir=$(mktemp -d /dev/shm/keyward-testenv-XXXXXX) || ferret_dir="$tmp/ferretdb"
fi
GOGC=400 "$ferret_bin" -listen 127.0.0.1:0 -dir "$ferret_dir" \
	>"$tmp/ferretdb.out" 2>"$tmp/ferretdb.log" </dev/null &
ferret_pid=$!
mongo_uri=""
for ((i = 0; i < START_TIMEOUT * 10; i++)); do
	kill -0 "$ferret_pid" 2>/dev/null || break
	mongo_uri=$(head -n 1 "$tmp/ferretdb.out" 2>/dev/null || true)
	[[ $mongo_uri == mongodb://* ]] && break
	mongo_uri=""
	sleep 0.1
done
if [[ -z $mongo_uri ]]; then
	show_log ferretdb "$tmp/ferretdb.log"
	die "FerretDB did not start listening within ${START_TIMEOUT}s"
fi
hostport=${mongo_uri#mongodb://}
hostport=${hostport%/}
port_in_use "${hostport##*:}" || die "FerretDB reported $mongo_uri but does not accept connections"

# --- run CMD ---------------------------------------------------------------------

export KEYWARD_TEST_REDIS_URL="redis://127.0.0.1:$redis_port/0"
export KEYWARD_TEST_MONGO_URI="$mongo_uri"
export KEYWARD_TEST_REQUIRE_SERVERS=1
export KEYWARD_TEST_REDIS_SERVER="$redis_server"
export KEYWARD_TEST_FERRETDB_BIN="$ferret_bin"
export KEYWARD_TEST_CHROMIUM="$chromium_bin"
export KEYWARD_TEST_PROMTOOL="$promtool_bin"
mkdir -p "$tmp/scratch"
export KEYWARD_TEST_SCRATCH="$tmp/scratch"
log "redis at $KEYWARD_TEST_REDIS_URL, FerretDB at $KEYWARD_TEST_MONGO_URI"
if [[ -n $sentinel_url ]]; then
	export KEYWARD_TEST_SENTINEL_URL="$sentinel_url"
	log "Sentinel group at $KEYWARD_TEST_SENTINEL_URL"
fi
if [[ -n $cluster_url ]]; then
	export KEYWARD_TEST_REDIS_CLUSTER_URL="$cluster_url"
	log "Redis Cluster at $KEYWARD_TEST_REDIS_CLUSTER_URL"
fi

status=0
"$@" || status=$?
exit "$status"
