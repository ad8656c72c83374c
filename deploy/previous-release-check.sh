#!/usr/bin/env bash
# Usage: deploy/previous-release-check.sh [PREVIOUS_COMMIT]
#
# Checks an upgrade against the previous release's binary, with real processes on the
# embedded default (issue 24, "upgrades that cannot strand anyone"):
#
#   1. the previous binary (PREVIOUS_COMMIT, default: the newest commit whose SQLite schema
#      is older than this tree's) makes a data dir with an account, an app and a license;
#   2. this tree's binary opens it: it migrates, says in its log where it copied the
#      database first, and still serves the account, the app and the license;
#   3. the previous binary, pointed at the upgraded data dir, refuses to start with a message
#      naming both schema versions;
#   4. a rollback: the copy made before the migration, put back, starts under the previous
#      binary again and still holds the license.
#
# Needs only Go and curl; builds both binaries into a temporary folder (about 2 minutes on
# two cores with a warm build cache); listens on a free loopback port. Not part of
# `make test` (it builds an older tree); run it before a release that adds a migration.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tmp=$(mktemp -d)
pid=""
cleanup() {
	if [[ -n $pid ]]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
	git -C "$repo" worktree remove --force "$tmp/prev-src" >/dev/null 2>&1 || true
	rm -rf "$tmp"
}
trap cleanup EXIT
say() { echo "previous-release-check: $*" >&2; }
die() { say "FAIL: $*"; exit 1; }

latest_version() { # tree-ish → the highest `version: N` of its SQLite migrations
	git -C "$repo" show "$1:storage/sqlite/migrations.go" | sed -n 's/^[[:space:]]*version:[[:space:]]*\([0-9]*\),.*/\1/p' | sort -n | tail -1
}

new_version=$(cd "$repo" && sed -n 's/^[[:space:]]*version:[[:space:]]*\([0-9]*\),.*/\1/p' storage/sqlite/migrations.go | sort -n | tail -1)
prev=${1:-}
if [[ -z $prev ]]; then
	for c in $(git -C "$repo" rev-list --first-parent HEAD -- storage/sqlite/migrations.go); do
		if [[ $(latest_version "$c") -lt $new_version ]]; then prev=$c; break; fi
	done
	[[ -n $prev ]] || die "no commit with an older schema than $new_version"
fi
old_version=$(latest_version "$prev")
say "previous release $(git -C "$repo" rev-parse --short "$prev") (schema $old_version) → this tree (schema $new_version)"

git -C "$repo" worktree add --detach "$tmp/prev-src" "$prev" >/dev/null 2>&1
(cd "$tmp/prev-src" && go build -o "$tmp/keyward-prev" ./cmd/keyward)
(cd "$repo" && go build -o "$tmp/keyward-new" ./cmd/keyward)

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
base="http://127.0.0.1:$port"
data="$tmp/data"

start() { # binary log
	KEYWARD_ADDR="127.0.0.1:$port" KEYWARD_DATA_DIR="$data" "$1" serve >"$2" 2>&1 &
	pid=$!
	for _ in $(seq 1 200); do
		curl -fsS "$base/readyz" >/dev/null 2>&1 && return 0
		kill -0 "$pid" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}
stop() {
	kill -TERM "$pid"
	wait "$pid" 2>/dev/null || true
	pid=""
}
# member NAME: the first string member NAME anywhere in the JSON answer on stdin.
member() {
	python3 -c '
import json, sys
def find(v, name):
    if isinstance(v, dict):
        if isinstance(v.get(name), str):
            return v[name]
        v = list(v.values())
    if isinstance(v, list):
        for x in v:
            r = find(x, name)
            if r:
                return r
    return None
print(find(json.load(sys.stdin), sys.argv[1]) or "")' "$1"
}

# 1. The previous binary makes a data dir with an account, an app and a license.
start "$tmp/keyward-prev" "$tmp/prev.log" || { cat "$tmp/prev.log" >&2; die "previous binary did not start"; }
KEYWARD_DATA_DIR="$data" "$tmp/keyward-prev" admin create --username owner --email owner@example.com --password 'Upgrade-Pass-1' --role admin >/dev/null
jwt=$(curl -fsS "$base/api/auth/login" -H 'Content-Type: application/json' \
	-d '{"username":"owner","password":"Upgrade-Pass-1"}' | member token)
app=$(curl -fsS "$base/api/apps" -H "Authorization: Bearer $jwt" -H 'Content-Type: application/json' \
	-d '{"name":"Upgrade check"}' | member id)
key=$(curl -fsS "$base/api/apps/$app/licenses" -H "Authorization: Bearer $jwt" -H 'Content-Type: application/json' \
	-d '{"count":1,"level":1}' | member key)
# A previous release that made the buyer portal a store connection (kind portal) gets one:
# the upgrade must carry it to the app's settings. Older releases refuse the kind: skipped.
portal=""
if curl -fsS "$base/api/apps/$app/stores" -H "Authorization: Bearer $jwt" -H 'Content-Type: application/json' \
	-d '{"provider":"portal","name":"Buyers"}' >/dev/null 2>&1; then portal=1; fi
stop
[[ -n $jwt && -n $app && -n $key ]] || die "could not make the account, app and license (jwt=${jwt:0:8} app=$app key=$key)"
say "1. previous binary wrote account, app $app and license $key${portal:+ and a portal connection}"

has_license() { # jwt → 0 when the license is listed
	curl -fsS "$base/api/apps/$app/licenses" -H "Authorization: Bearer $1" | grep -q "$key"
}
login() {
	curl -fsS "$base/api/auth/login" -H 'Content-Type: application/json' \
		-d '{"username":"owner","password":"Upgrade-Pass-1"}' | member token
}

# 2. This tree's binary migrates it, says where it copied the database, and serves it.
start "$tmp/keyward-new" "$tmp/new.log" || { cat "$tmp/new.log" >&2; die "new binary did not start on the old data dir"; }
grep -q "keyward-schema$old_version-" "$tmp/new.log" || { cat "$tmp/new.log" >&2; die "the log does not say where the pre-migration copy is"; }
copy=$(ls "$data"/backups/keyward-schema"$old_version"-*.db | head -1)
[[ -f $copy ]] || die "no pre-migration copy in $data/backups"
has_license "$(login)" || die "the license is gone after the upgrade"
if [[ -n $portal ]]; then
	curl -fsS "$base/api/apps/$app/portal" -H "Authorization: Bearer $(login)" | grep -q '"enabled":true' ||
		die "the portal connection's settings did not reach the app"
fi
stop
say "2. new binary migrated $old_version → $new_version, copy at ${copy#"$tmp"/}, license kept"

# 3. The previous binary refuses the upgraded data dir, naming both versions.
if start "$tmp/keyward-prev" "$tmp/refused.log"; then stop; die "the previous binary started on schema $new_version"; fi
pid=""
grep -q "$new_version" "$tmp/refused.log" && grep -q "$old_version" "$tmp/refused.log" ||
	{ cat "$tmp/refused.log" >&2; die "the refusal does not name both versions"; }
say "3. previous binary refused: $(grep -o "database schema version [0-9]* is newer than this build's [0-9]*" "$tmp/refused.log" | head -1)"

# 4. Rollback: the pre-migration copy runs under the previous binary again.
rm -f "$data"/keyward.db "$data"/keyward.db-wal "$data"/keyward.db-shm
cp "$copy" "$data/keyward.db"
start "$tmp/keyward-prev" "$tmp/rollback.log" || { cat "$tmp/rollback.log" >&2; die "rollback did not start"; }
has_license "$(login)" || die "the license is gone after the rollback"
stop
say "4. rollback to the pre-migration copy runs under the previous binary"
say "ok"
