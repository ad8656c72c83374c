#!/bin/sh
# make-fixture.sh builds keyauth.sql, the KeyAuth database dump the importer's tests read.
#
# It starts a throwaway MariaDB server (Debian's mariadb-server: apt-get install -y
# mariadb-server mariadb-client) on a socket in a temporary directory, creates the tables
# KeyAuth's public schema names with the columns the importer reads (our own DDL, written
# from the schema's facts: KeyAuth keys every row by its app's secret, stores PHP
# password_hash bcrypt "$2y$" hashes, unix-time dates as text, key durations in seconds,
# key status as "Not Used"/"Used"/"Banned", bans by hwid or ip), fills them with rows in
# those formats, and dumps them with mysqldump as KeyAuth owners would. The hashes are
# made by PHP's password_hash (apt-get install -y php-cli).
#
#   sh internal/keyauthimport/testdata/make-fixture.sh
#
# `make test` does not run it: the dump is committed beside it.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
sock="$tmp/mysqld.sock"
cleanup() {
	if [ -f "$tmp/mysqld.pid" ]; then kill "$(cat "$tmp/mysqld.pid")" 2>/dev/null || true; sleep 1; fi
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

mariadb-install-db --no-defaults --user="$(id -un)" --datadir="$tmp/data" --auth-root-authentication-method=socket >"$tmp/install.log" 2>&1
mariadbd --no-defaults --user="$(id -un)" --datadir="$tmp/data" --socket="$sock" --pid-file="$tmp/mysqld.pid" \
	--skip-networking --log-error="$tmp/error.log" &
i=0
until mariadb --no-defaults --socket="$sock" -uroot -e 'SELECT 1' >/dev/null 2>&1; do
	i=$((i + 1))
	if [ "$i" -gt 60 ]; then cat "$tmp/error.log"; echo "make-fixture: MariaDB did not start" >&2; exit 1; fi
	sleep 0.5
done

# bcrypt hashes as KeyAuth writes them: password_hash($pw, PASSWORD_BCRYPT), "$2y$", at
# cost 4 instead of PHP's default 10: the same format, and a verification under the race
# detector takes a fraction of a second instead of seconds.
hash() {
	php -r 'echo password_hash($argv[1], PASSWORD_BCRYPT, ["cost" => 4]);' "$1"
}
h_alice=$(hash 'alice-pass-1')
h_bob=$(hash 'bob-pass-1')
h_dave=$(hash 'dave-pass-1')
h_erin=$(hash 'erin-pass-1')
h_frank=$(hash "frank's p\\ss 1")
h_gina=$(hash 'gina-pass-1')
h_tom=$(hash 'tom-pass-1')

S1=5f0e7b1c3a9d4e8f6a2b7c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f   # "Cheat Loader"
S2=a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90   # "Tool's Pro"
S3=0000111122223333444455556666777788889999aaaabbbbccccddddeeeeffff   # another owner's app
LIVE=2145916800   # 2038-01-01, within KeyAuth's int columns
PAST=1600000000   # 2020-09-13
MADE=1700000000   # 2023-11-14

mariadb --no-defaults --socket="$sock" -uroot <<SQL
CREATE DATABASE keyauth CHARACTER SET utf8mb4;
USE keyauth;
CREATE TABLE accounts (username varchar(65) NOT NULL PRIMARY KEY, email varchar(40) NOT NULL,
  password varchar(60) NOT NULL, ownerid varchar(65), role varchar(65) NOT NULL);
CREATE TABLE apps (id int NOT NULL AUTO_INCREMENT PRIMARY KEY, owner varchar(65) NOT NULL, name varchar(40) NOT NULL,
  secret varchar(64) NOT NULL, ownerid varchar(39) NOT NULL, enabled int NOT NULL, banned int NOT NULL DEFAULT 0,
  paused int NOT NULL DEFAULT 0, hwidcheck int NOT NULL, vpnblock int NOT NULL DEFAULT 0, sellerkey varchar(32) NOT NULL,
  ver varchar(5) NOT NULL DEFAULT '1.0', download varchar(120), webhook varchar(130), auditLogWebhook varchar(130),
  hashcheck int NOT NULL DEFAULT 0, session int NOT NULL DEFAULT 21600,
  format varchar(99) NOT NULL DEFAULT '******-******-******-******-******-******');
CREATE TABLE users (id int NOT NULL AUTO_INCREMENT PRIMARY KEY, username varchar(70) NOT NULL, email varchar(40),
  password varchar(60), hwid varchar(2000), app varchar(64) NOT NULL, owner varchar(65), createdate int, lastlogin int,
  banned varchar(99), ip varchar(49), cooldown int);
CREATE TABLE \`keys\` (id int NOT NULL AUTO_INCREMENT PRIMARY KEY, \`key\` varchar(70) NOT NULL, note varchar(69),
  expires varchar(49) NOT NULL, status varchar(49) NOT NULL, level varchar(12) NOT NULL DEFAULT '', genby varchar(65),
  gendate varchar(49) NOT NULL, usedon int, usedby varchar(70), app varchar(64) NOT NULL, banned varchar(99));
CREATE TABLE subscriptions (id int NOT NULL AUTO_INCREMENT PRIMARY KEY, name varchar(49) NOT NULL, level varchar(49) NOT NULL,
  app varchar(64) NOT NULL);
CREATE TABLE subs (id int NOT NULL AUTO_INCREMENT PRIMARY KEY, user varchar(70) NOT NULL, subscription varchar(49) NOT NULL,
  expiry varchar(49) NOT NULL, app varchar(64) NOT NULL, \`key\` varchar(70), paused int NOT NULL DEFAULT 0);
CREATE TABLE vars (id int NOT NULL AUTO_INCREMENT PRIMARY KEY, varid varchar(49) NOT NULL, msg varchar(1000) NOT NULL,
  app varchar(64) NOT NULL, authed int NOT NULL DEFAULT 1);
CREATE TABLE uservars (id int NOT NULL AUTO_INCREMENT PRIMARY KEY, name varchar(99) NOT NULL, data varchar(500) NOT NULL,
  user varchar(70) NOT NULL, app varchar(64) NOT NULL, readOnly int NOT NULL DEFAULT 0);
CREATE TABLE bans (id int NOT NULL AUTO_INCREMENT PRIMARY KEY, hwid varchar(500), ip varchar(49), type varchar(5),
  app varchar(64));
CREATE TABLE files (pk int NOT NULL AUTO_INCREMENT PRIMARY KEY, name varchar(49) NOT NULL, id varchar(49) NOT NULL,
  url varchar(2048), size varchar(49) NOT NULL, uploaddate varchar(49) NOT NULL, app varchar(64) NOT NULL,
  authed int NOT NULL DEFAULT 1);
CREATE TABLE webhooks (id int NOT NULL AUTO_INCREMENT PRIMARY KEY, webid varchar(10) NOT NULL, baselink varchar(200) NOT NULL,
  useragent varchar(49) NOT NULL DEFAULT 'KeyAuth', app varchar(64) NOT NULL, authed int NOT NULL DEFAULT 1);
CREATE TABLE sessions (pk int NOT NULL AUTO_INCREMENT PRIMARY KEY, id varchar(10) NOT NULL, credential varchar(70),
  app varchar(64) NOT NULL, expiry int NOT NULL, created_at int, enckey varchar(100), validated int NOT NULL DEFAULT 0,
  ip varchar(45));
CREATE TABLE logs (id int NOT NULL AUTO_INCREMENT PRIMARY KEY, logdate varchar(49) NOT NULL, logdata varchar(275) NOT NULL,
  credential varchar(70), pcuser varchar(32), logapp varchar(64) NOT NULL);
CREATE TABLE chats (id int NOT NULL AUTO_INCREMENT PRIMARY KEY, name varchar(50) NOT NULL, delay int NOT NULL,
  app varchar(64) NOT NULL);
CREATE TABLE whitelist (id int NOT NULL AUTO_INCREMENT PRIMARY KEY, ip varchar(49) NOT NULL, app varchar(64) NOT NULL);

INSERT INTO accounts VALUES ('ann', 'ann@example.com', '$(hash 'owner-pass')', 'OWNERANN01', 'seller'),
  ('zed', 'zed@example.com', '$(hash 'owner-pass')', 'OWNERZED01', 'tester');
INSERT INTO apps (owner, name, secret, ownerid, enabled, hwidcheck, vpnblock, sellerkey, ver, webhook, auditLogWebhook, format)
VALUES ('ann', 'Cheat Loader', '$S1', 'OWNERANN01', 1, 1, 1, 'sk1', '1.0',
  'https://discord.com/api/webhooks/1111/tok-en_A', 'https://hooks.example.com/audit', 'LOADER-******-******'),
  ('ann', 'Tool''s Pro', '$S2', 'OWNERANN01', 1, 0, 0, 'sk2', '2.1', NULL, NULL, DEFAULT),
  ('zed', 'Other Owner App', '$S3', 'OWNERZED01', 1, 0, 0, 'sk3', '1.0', NULL, NULL, DEFAULT);
INSERT INTO subscriptions (name, level, app) VALUES ('default', '1', '$S1'), ('premium', '5', '$S1'), ('default', '1', '$S2');
INSERT INTO \`keys\` (\`key\`, note, expires, status, level, genby, gendate, usedon, usedby, app, banned) VALUES
  ('LOADER-AB12CD-EF34GH', 'for a reseller', '2592000', 'Not Used', '1', 'ann', '$MADE', NULL, NULL, '$S1', NULL),
  ('LOADER-PREM01-XYZ789', NULL, '2592000', 'Used', '5', 'ann', '$MADE', $((MADE + 3600)), 'alice', '$S1', NULL),
  ('LOADER-BANNED-000001', NULL, '86400', 'Banned', '1', 'ann', '$MADE', NULL, NULL, '$S1', 'chargeback'),
  ('LOADER-LIFETM-999999', 'lifetime', '3153600000', 'Not Used', '1', 'ann', '$MADE', NULL, NULL, '$S1', NULL),
  ('loader-lower-case-key', NULL, '604800', 'Not Used', '1', 'ann', '$MADE', NULL, NULL, '$S1', NULL),
  ('LOADER-AB12CD-EF34GH', 'the same key again', '60', 'Not Used', '1', 'ann', '$MADE', NULL, NULL, '$S1', NULL),
  ('LOADER-BADLVL-000002', NULL, '3600', 'Not Used', 'gold', 'ann', '$MADE', NULL, NULL, '$S1', NULL),
  ('TOOL-KEY-0001', NULL, '86400', 'Not Used', '1', 'ann', '$MADE', NULL, NULL, '$S2', NULL),
  ('ZED-KEY-0001', NULL, '86400', 'Not Used', '1', 'zed', '$MADE', NULL, NULL, '$S3', NULL);
INSERT INTO users (username, email, password, hwid, app, owner, createdate, lastlogin, banned, ip) VALUES
  ('alice', SHA(LOWER('Alice@Example.com')), '$h_alice', 'HWID-ALICE-1', '$S1', 'ann', $MADE, $((MADE + 7200)), NULL, '203.0.113.7'),
  ('bob', 'bob@example.com', '$h_bob', NULL, '$S1', 'ann', $MADE, NULL, 'caught speedhacking', '198.51.100.2'),
  ('carol', NULL, NULL, NULL, '$S1', 'ann', $MADE, NULL, NULL, NULL),
  ('dave', NULL, '$h_dave', NULL, '$S1', 'ann', $MADE, $MADE, NULL, NULL),
  ('erin', NULL, '$h_erin', NULL, '$S1', 'ann', $MADE, NULL, NULL, NULL),
  ('frank', NULL, '$h_frank', REPEAT('HWID-FRANK-', 30), '$S1', 'ann', $MADE, NULL, NULL, NULL),
  ('gina', 'gina@example.com', '$h_gina', NULL, '$S1', 'ann', $MADE, NULL, NULL, NULL),
  ('x', NULL, '$h_erin', NULL, '$S1', 'ann', $MADE, NULL, NULL, NULL),
  ('o''neil', NULL, '$h_erin', NULL, '$S1', 'ann', $MADE, NULL, NULL, NULL),
  ('Gina', NULL, '$h_erin', NULL, '$S1', 'ann', $MADE, NULL, NULL, NULL),
  ('tom', NULL, '$h_tom', NULL, '$S2', 'ann', $MADE, NULL, NULL, NULL),
  ('zoe', NULL, '$h_tom', NULL, '$S3', 'zed', $MADE, NULL, NULL, NULL);
INSERT INTO subs (user, subscription, expiry, app, \`key\`, paused) VALUES
  ('alice', 'premium', '$LIVE', '$S1', 'LOADER-PREM01-XYZ789', 0),
  ('alice', 'default', '$((LIVE - 86400))', '$S1', NULL, 0),
  ('bob', 'default', '$LIVE', '$S1', NULL, 0),
  ('carol', 'default', '$LIVE', '$S1', NULL, 1),
  ('dave', 'default', '$PAST', '$S1', NULL, 0),
  ('frank', 'default', '$LIVE', '$S1', NULL, 0),
  ('gina', 'vip', '$LIVE', '$S1', NULL, 0),
  ('tom', 'default', '$LIVE', '$S2', 'TOOL-KEY-0001', 0),
  ('zoe', 'default', '$LIVE', '$S3', NULL, 0);
INSERT INTO vars (varid, msg, app, authed) VALUES
  ('download', 'https://cdn.example.com/loader.exe', '$S1', 1),
  ('motd', 'Line one\nIt''s "quoted" \\\\ with a backslash\ttab', '$S1', 0),
  ('download', 'https://cdn.example.com/tool.exe', '$S2', 1);
INSERT INTO uservars (name, data, user, app, readOnly) VALUES
  ('theme', 'dark', 'alice', '$S1', 0), ('credits', '100', 'alice', '$S1', 1), ('theme', 'light', 'ghost', '$S1', 0);
INSERT INTO bans (hwid, ip, type, app) VALUES
  ('HWID-CRACKER-9', NULL, 'hwid', '$S1'), (NULL, '192.0.2.66', 'ip', '$S1'), (NULL, 'not-an-ip', 'ip', '$S1'),
  ('HWID-CRACKER-9', NULL, 'hwid', '$S1');
INSERT INTO files (name, id, url, size, uploaddate, app) VALUES
  ('loader.dll', '123456', 'https://cdn.example.com/loader.dll', '1.2 MB', '$MADE', '$S1');
INSERT INTO webhooks (webid, baselink, app) VALUES ('Ab3dE5gH7j', 'https://api.example.com/check?user=', '$S1');
INSERT INTO sessions (id, credential, app, expiry, created_at, validated, ip) VALUES
  ('s3ss10n0ne', 'alice', '$S1', $LIVE, $MADE, 1, '203.0.113.7');
INSERT INTO logs (logdate, logdata, credential, pcuser, logapp) VALUES ('$MADE', 'opened the menu', 'alice', 'DESKTOP-1', '$S1');
INSERT INTO chats (name, delay, app) VALUES ('general', 5, '$S1');
INSERT INTO whitelist (ip, app) VALUES ('198.51.100.9', '$S1');
SQL

# What an owner runs to back KeyAuth up; --skip-dump-date keeps the file stable.
mysqldump --no-defaults --socket="$sock" -uroot --skip-dump-date keyauth >"$here/keyauth.sql"
echo "make-fixture: wrote $here/keyauth.sql ($(wc -c <"$here/keyauth.sql") bytes)"
