package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// migration is one step of the schema. The pending steps are applied in order, all in one
// transaction together with their rows in schema_migrations (see migrate), so a failure or
// a crash mid-way leaves the database at the version it had.
type migration struct {
	version int
	name    string
	sql     string
}

// migrations is the schema's whole history. Append only: a released step is never edited,
// a later feature adds version N+1 here (ALTER TABLE, CREATE INDEX, …).
var migrations = []migration{
	{
		version: 1,
		name:    "accounts and account tokens",
		sql: `
CREATE TABLE accounts (
	id                   TEXT    NOT NULL PRIMARY KEY,
	username             TEXT    NOT NULL,
	username_lower       TEXT    NOT NULL,
	email                TEXT    NOT NULL,
	email_lower          TEXT    NOT NULL,
	password_hash        TEXT    NOT NULL,
	role                 TEXT    NOT NULL,
	plan                 TEXT    NOT NULL,
	email_verified       INTEGER NOT NULL,
	two_factor_enabled   INTEGER NOT NULL,
	two_factor_secret    TEXT    NOT NULL,
	two_factor_pending   TEXT    NOT NULL,
	two_factor_last_step INTEGER NOT NULL,
	api_key_hash         TEXT    NOT NULL,
	api_key_prefix       TEXT    NOT NULL,
	api_key_last4        TEXT    NOT NULL,
	tokens_valid_after   INTEGER NOT NULL,
	api_calls_used       INTEGER NOT NULL,
	api_calls_reset_at   INTEGER NOT NULL,
	last_login_at        INTEGER NOT NULL,
	created_at           INTEGER NOT NULL,
	updated_at           INTEGER NOT NULL
) STRICT;

CREATE UNIQUE INDEX accounts_username_lower ON accounts (username_lower);
CREATE UNIQUE INDEX accounts_email_lower ON accounts (email_lower);
-- Not unique, to behave as the MongoDB engine does (FerretDB has no reliable partial
-- unique index); keys are random, so collisions are not a concern. Accounts without a key
-- stay out of the index.
CREATE INDEX accounts_api_key_hash ON accounts (api_key_hash) WHERE api_key_hash <> '';
-- The list order, with id as tie-breaker so that pages never overlap.
CREATE INDEX accounts_created ON accounts (created_at, id);

CREATE TABLE account_tokens (
	hash       TEXT    NOT NULL PRIMARY KEY,
	account_id TEXT    NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
	purpose    TEXT    NOT NULL,
	expires_at INTEGER NOT NULL,
	created_at INTEGER NOT NULL
) STRICT;

CREATE INDEX account_tokens_account ON account_tokens (account_id, purpose);
`,
	},
	{
		version: 2,
		name:    "apps, app users, licenses, devices and app tokens",
		sql: `
-- apps.account_id has no foreign key: DeleteAccount's contract removes only the account
-- and its mailed tokens, and the MongoDB engine cannot cascade either.
CREATE TABLE apps (
	id           TEXT    NOT NULL PRIMARY KEY,
	account_id   TEXT    NOT NULL,
	name         TEXT    NOT NULL,
	name_lower   TEXT    NOT NULL,
	description  TEXT    NOT NULL,
	version      TEXT    NOT NULL,
	enabled      INTEGER NOT NULL,
	paused       INTEGER NOT NULL,
	anti_debug   INTEGER NOT NULL,
	anti_vm      INTEGER NOT NULL,
	lock_hwid    INTEGER NOT NULL,
	lock_ip      INTEGER NOT NULL,
	lock_pc_name INTEGER NOT NULL,
	secret_hash  TEXT    NOT NULL,
	secret_last6 TEXT    NOT NULL,
	created_at   INTEGER NOT NULL,
	updated_at   INTEGER NOT NULL
) STRICT;

-- Names are unique per account, case-insensitively (name_lower is strings.ToLower(name)).
CREATE UNIQUE INDEX apps_account_name ON apps (account_id, name_lower);
-- ListApps order (oldest first, id breaking ties) and CountApps.
CREATE INDEX apps_account_created ON apps (account_id, created_at, id);
-- Client init finds the app by its secret's hash. Not unique, as for account API keys
-- (secrets are random); apps without a secret stay out of the index.
CREATE INDEX apps_secret_hash ON apps (secret_hash) WHERE secret_hash <> '';

CREATE TABLE app_users (
	id                  TEXT    NOT NULL PRIMARY KEY,
	app_id              TEXT    NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
	username            TEXT    NOT NULL,
	username_lower      TEXT    NOT NULL,
	password_hash       TEXT    NOT NULL,
	email               TEXT    NOT NULL,
	email_lower         TEXT    NOT NULL,
	level               INTEGER NOT NULL,
	expires_at          INTEGER NOT NULL,
	device_limit        INTEGER NOT NULL,
	metadata            TEXT    NOT NULL,
	enabled             INTEGER NOT NULL,
	banned              INTEGER NOT NULL,
	ban_reason          TEXT    NOT NULL,
	hwid                TEXT    NOT NULL,
	display_name        TEXT    NOT NULL,
	pc_name             TEXT    NOT NULL,
	locked_ip           TEXT    NOT NULL,
	last_login_ip       TEXT    NOT NULL,
	hwid_reset_max      INTEGER NOT NULL,
	hwid_reset_cooldown INTEGER NOT NULL,
	ip_reset_max        INTEGER NOT NULL,
	ip_reset_cooldown   INTEGER NOT NULL,
	hwid_resets         INTEGER NOT NULL,
	last_hwid_reset_at  INTEGER NOT NULL,
	ip_resets           INTEGER NOT NULL,
	last_ip_reset_at    INTEGER NOT NULL,
	license_id          TEXT    NOT NULL,
	discord_id          TEXT    NOT NULL,
	last_login_at       INTEGER NOT NULL,
	created_at          INTEGER NOT NULL,
	updated_at          INTEGER NOT NULL
) STRICT;

-- Usernames are unique per app, case-insensitively; the index also serves the username
-- sort and GetUserByUsername.
CREATE UNIQUE INDEX app_users_username ON app_users (app_id, username_lower);
-- The target of the devices' foreign key, which names the app as well as the user so that
-- a device can never point at a user of another app.
CREATE UNIQUE INDEX app_users_app_id ON app_users (app_id, id);
-- The other list sorts, id breaking ties; last_login_at also serves the login stats.
CREATE INDEX app_users_created ON app_users (app_id, created_at, id);
CREATE INDEX app_users_last_login ON app_users (app_id, last_login_at, id);
CREATE INDEX app_users_expires ON app_users (app_id, expires_at, id);

CREATE TABLE licenses (
	id            TEXT    NOT NULL PRIMARY KEY,
	app_id        TEXT    NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
	key           TEXT    NOT NULL,
	key_lower     TEXT    NOT NULL,
	level         INTEGER NOT NULL,
	max_uses      INTEGER NOT NULL,
	used_count    INTEGER NOT NULL,
	duration      INTEGER NOT NULL,
	expires_at    INTEGER NOT NULL,
	note          TEXT    NOT NULL,
	note_lower    TEXT    NOT NULL,
	used_by       TEXT    NOT NULL,
	used_by_lower TEXT    NOT NULL,
	device_limit  INTEGER NOT NULL,
	display_name  TEXT    NOT NULL,
	enabled       INTEGER NOT NULL,
	banned        INTEGER NOT NULL,
	discord_id    TEXT    NOT NULL,
	activated_at  INTEGER NOT NULL,
	created_at    INTEGER NOT NULL,
	updated_at    INTEGER NOT NULL
) STRICT;

-- Keys are unique per app as stored (generated upper-case); the index also serves the key
-- sort and GetLicenseByKey. The *_lower copies exist only for the case-insensitive search.
CREATE UNIQUE INDEX licenses_key ON licenses (app_id, key);
CREATE INDEX licenses_created ON licenses (app_id, created_at, id);
CREATE INDEX licenses_expires ON licenses (app_id, expires_at, id);
CREATE INDEX licenses_used_count ON licenses (app_id, used_count, id);

CREATE TABLE devices (
	id             TEXT    NOT NULL PRIMARY KEY,
	app_id         TEXT    NOT NULL,
	user_id        TEXT    NOT NULL,
	username       TEXT    NOT NULL,
	username_lower TEXT    NOT NULL,
	hwid           TEXT    NOT NULL,
	hwid_lower     TEXT    NOT NULL,
	pc_name        TEXT    NOT NULL,
	ip             TEXT    NOT NULL,
	created_at     INTEGER NOT NULL,
	last_seen_at   INTEGER NOT NULL,
	FOREIGN KEY (app_id, user_id) REFERENCES app_users (app_id, id) ON DELETE CASCADE
) STRICT;

-- A hwid is unique per user, compared as stored (user ids are unique across apps).
CREATE UNIQUE INDEX devices_user_hwid ON devices (user_id, hwid);
-- ListDevices (newest first) of the app, and of one user; the second also serves the
-- foreign key and DeleteUserDevices.
CREATE INDEX devices_app_created ON devices (app_id, created_at, id);
CREATE INDEX devices_app_user ON devices (app_id, user_id, created_at, id);

CREATE TABLE app_tokens (
	id         TEXT    NOT NULL PRIMARY KEY,
	app_id     TEXT    NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
	value      TEXT    NOT NULL,
	level      INTEGER NOT NULL,
	max_uses   INTEGER NOT NULL,
	used_count INTEGER NOT NULL,
	expires_at INTEGER NOT NULL,
	note       TEXT    NOT NULL,
	enabled    INTEGER NOT NULL,
	created_at INTEGER NOT NULL,
	updated_at INTEGER NOT NULL
) STRICT;

-- Values are unique per app as stored; the index serves GetTokenByValue too.
CREATE UNIQUE INDEX app_tokens_value ON app_tokens (app_id, value);
CREATE INDEX app_tokens_created ON app_tokens (app_id, created_at, id);
`,
	},
	{
		version: 3,
		name:    "variables, files, rules and logs",
		sql: `
-- owner_id is '' for app variables, the user or license id otherwise. It has no foreign
-- key (it points at one of two tables by scope): CreateVariables checks the owner in its
-- write transaction, and DeleteUser and the license deletes remove the owner's variables.
CREATE TABLE variables (
	id         TEXT    NOT NULL PRIMARY KEY,
	app_id     TEXT    NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
	scope      TEXT    NOT NULL,
	owner_id   TEXT    NOT NULL,
	key        TEXT    NOT NULL,
	value      TEXT    NOT NULL,
	type       TEXT    NOT NULL,
	created_at INTEGER NOT NULL,
	updated_at INTEGER NOT NULL
) STRICT;

-- Keys are unique per scope and owner, as stored; the index serves the lists (sorted by
-- key), GetVariableByKey, the owner sweeps and the count of app variables.
CREATE UNIQUE INDEX variables_key ON variables (app_id, scope, owner_id, key);

CREATE TABLE files (
	id           TEXT    NOT NULL PRIMARY KEY,
	app_id       TEXT    NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
	name         TEXT    NOT NULL,
	version      TEXT    NOT NULL,
	size         INTEGER NOT NULL,
	sha256       TEXT    NOT NULL,
	blob_key     TEXT    NOT NULL,
	content_type TEXT    NOT NULL,
	created_at   INTEGER NOT NULL,
	updated_at   INTEGER NOT NULL
) STRICT;

-- ListFiles and LatestFile of the app (newest first), and LatestFile of one name.
CREATE INDEX files_created ON files (app_id, created_at, id);
CREATE INDEX files_name_created ON files (app_id, name, created_at, id);

CREATE TABLE rules (
	id         TEXT    NOT NULL PRIMARY KEY,
	app_id     TEXT    NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
	type       TEXT    NOT NULL,
	action     TEXT    NOT NULL,
	value      TEXT    NOT NULL,
	note       TEXT    NOT NULL,
	enabled    INTEGER NOT NULL,
	created_at INTEGER NOT NULL,
	updated_at INTEGER NOT NULL
) STRICT;

CREATE UNIQUE INDEX rules_value ON rules (app_id, type, action, value);
CREATE INDEX rules_created ON rules (app_id, created_at, id);

-- Log entries have no foreign key: they are written in bulk on a hot path without a parent
-- check, and DeleteApp sweeps the app's entries itself.
CREATE TABLE logs (
	id             TEXT    NOT NULL PRIMARY KEY,
	app_id         TEXT    NOT NULL,
	event          TEXT    NOT NULL,
	message        TEXT    NOT NULL,
	username       TEXT    NOT NULL,
	username_lower TEXT    NOT NULL,
	ip             TEXT    NOT NULL,
	country        TEXT    NOT NULL,
	level          TEXT    NOT NULL,
	data           TEXT    NOT NULL,
	created_at     INTEGER NOT NULL
) STRICT;

-- The aggregations read these indexes only, never the table. They count with a
-- skip-scan: one seek to each distinct event, level, country or time bucket, then a count
-- of its range (see logs.go), which reads the entries in the window once and sorts nothing.
-- Beyond the list order, id is left out to keep them narrow: the log is the largest table
-- and takes the most writes.
--
-- The list (newest first, id breaking ties), its time bounds, DeleteLogsBefore, TrimLogs,
-- LogApps and the series of every event.
CREATE INDEX logs_app_created ON logs (app_id, created_at, id);
-- The list filtered by event, LogEvents, CountLogs, LogSeries and LogStats per event.
CREATE INDEX logs_app_event_created ON logs (app_id, event, created_at);
-- The list filtered by level, and LogStats per level.
CREATE INDEX logs_app_level_created ON logs (app_id, level, created_at);
-- LogCountries.
CREATE INDEX logs_app_country_created ON logs (app_id, country, created_at);
`,
	},
	{
		version: 4,
		name:    "integrations and the webhook delivery queue",
		sql: `
-- Events is the JSON array of the subscribed event names, in the owner's order.
CREATE TABLE integrations (
	id                   TEXT    NOT NULL PRIMARY KEY,
	app_id               TEXT    NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
	name                 TEXT    NOT NULL,
	kind                 TEXT    NOT NULL,
	url                  TEXT    NOT NULL,
	events               TEXT    NOT NULL,
	enabled              INTEGER NOT NULL,
	secret               TEXT    NOT NULL,
	consecutive_failures INTEGER NOT NULL,
	disabled_reason      TEXT    NOT NULL,
	created_at           INTEGER NOT NULL,
	updated_at           INTEGER NOT NULL
) STRICT;

-- ListIntegrations (oldest first).
CREATE INDEX integrations_created ON integrations (app_id, created_at, id);

-- Deliveries and attempts have no foreign keys: the contract lets a delivery of an
-- integration deleted meanwhile be queued (ClaimDeliveries removes it), attempts are
-- records of what happened, and DeleteIntegration and DeleteApp sweep both themselves.
-- lease_until is 0 when the delivery is not leased.
CREATE TABLE webhook_deliveries (
	id              TEXT    NOT NULL PRIMARY KEY,
	app_id          TEXT    NOT NULL,
	integration_id  TEXT    NOT NULL,
	event_id        TEXT    NOT NULL,
	event           TEXT    NOT NULL,
	payload         BLOB    NOT NULL,
	state           TEXT    NOT NULL,
	attempts        INTEGER NOT NULL,
	next_attempt_at INTEGER NOT NULL,
	lease_owner     TEXT    NOT NULL,
	lease_until     INTEGER NOT NULL,
	last_error      TEXT    NOT NULL,
	created_at      INTEGER NOT NULL,
	updated_at      INTEGER NOT NULL
) STRICT;

-- ClaimDeliveries: the due pending deliveries, oldest next_attempt_at first.
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (state, next_attempt_at, id);
-- PurgeDeliveries: finished deliveries by last update.
CREATE INDEX webhook_deliveries_updated ON webhook_deliveries (state, updated_at);
-- The sweeps of DeleteIntegration and DeleteApp.
CREATE INDEX webhook_deliveries_integration ON webhook_deliveries (app_id, integration_id);

-- latency_ms is the attempt's latency in whole milliseconds.
CREATE TABLE webhook_attempts (
	id             TEXT    NOT NULL PRIMARY KEY,
	app_id         TEXT    NOT NULL,
	integration_id TEXT    NOT NULL,
	delivery_id    TEXT    NOT NULL,
	event          TEXT    NOT NULL,
	attempt        INTEGER NOT NULL,
	success        INTEGER NOT NULL,
	status_code    INTEGER NOT NULL,
	latency_ms     INTEGER NOT NULL,
	error          TEXT    NOT NULL,
	response       TEXT    NOT NULL,
	created_at     INTEGER NOT NULL
) STRICT;

-- ListDeliveryAttempts (newest first, id breaking ties) and the sweeps of
-- DeleteIntegration and DeleteApp.
CREATE INDEX webhook_attempts_integration_created ON webhook_attempts (app_id, integration_id, created_at, id);
-- PurgeDeliveries.
CREATE INDEX webhook_attempts_created ON webhook_attempts (created_at);
`,
	},
	{
		version: 5,
		name:    "app session timeout and plain files, client session copies",
		sql: `
-- session_timeout is in seconds, 0 for the server's default.
ALTER TABLE apps ADD COLUMN session_timeout INTEGER NOT NULL DEFAULT 0;
ALTER TABLE apps ADD COLUMN plain_files INTEGER NOT NULL DEFAULT 0;

-- The durable copies of client sessions, keyed by the SHA-256 (hex) of the token. No
-- foreign key: a session of an app that does not exist may be saved (the copies are
-- written lazily, in batches), and DeleteApp sweeps the app's copies itself. user_id is ''
-- before login; login_at is 0 then.
CREATE TABLE client_sessions (
	token_hash TEXT    NOT NULL PRIMARY KEY,
	app_id     TEXT    NOT NULL,
	account_id TEXT    NOT NULL,
	user_id    TEXT    NOT NULL,
	username   TEXT    NOT NULL,
	hwid       TEXT    NOT NULL,
	ip         TEXT    NOT NULL,
	country    TEXT    NOT NULL,
	version    TEXT    NOT NULL,
	created_at INTEGER NOT NULL,
	login_at   INTEGER NOT NULL,
	expires_at INTEGER NOT NULL
) STRICT;

-- DeleteUserClientSessions, and the sweep of DeleteApp.
CREATE INDEX client_sessions_app_user ON client_sessions (app_id, user_id);
-- DeleteExpiredClientSessions.
CREATE INDEX client_sessions_expires ON client_sessions (expires_at);
`,
	},
	{
		version: 6,
		name:    "websocket hooks",
		sql: `
-- conditions and actions are the hook's JSON arrays, kept as the bytes given (an empty
-- BLOB for none; never NULL).
CREATE TABLE ws_hooks (
	id          TEXT    NOT NULL PRIMARY KEY,
	app_id      TEXT    NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
	name        TEXT    NOT NULL,
	event       TEXT    NOT NULL,
	description TEXT    NOT NULL,
	conditions  BLOB    NOT NULL,
	actions     BLOB    NOT NULL,
	enabled     INTEGER NOT NULL,
	priority    INTEGER NOT NULL,
	created_at  INTEGER NOT NULL,
	updated_at  INTEGER NOT NULL
) STRICT;

-- ListWSHooks (priority, then creation time, then id) and CountWSHooks.
CREATE INDEX ws_hooks_priority ON ws_hooks (app_id, priority, created_at, id);
`,
	},
	{
		version: 7,
		name:    "revoked dashboard tokens",
		sql: `
-- A logged-out JWT, by its id, until its own expiry (unix milliseconds); the purge goes
-- by expiry.
CREATE TABLE token_revocations (
	id         TEXT    NOT NULL PRIMARY KEY,
	expires_at INTEGER NOT NULL
) STRICT, WITHOUT ROWID;

CREATE INDEX token_revocations_expires ON token_revocations (expires_at);
`,
	},
	{
		version: 11,
		name:    "licensing: signing keys, grace, license files, seats",
		sql: `
-- signing_key is the sealed Ed25519 seed ('' until made); grace_seconds 0 = no grace;
-- license_file_days 0 = the default check-in deadline; max_seats 0 = unlimited.
ALTER TABLE apps ADD COLUMN signing_key TEXT NOT NULL DEFAULT '';
ALTER TABLE apps ADD COLUMN sign_responses INTEGER NOT NULL DEFAULT 0;
ALTER TABLE apps ADD COLUMN grace_seconds INTEGER NOT NULL DEFAULT 0;
ALTER TABLE apps ADD COLUMN license_file_days INTEGER NOT NULL DEFAULT 0;
ALTER TABLE licenses ADD COLUMN max_seats INTEGER NOT NULL DEFAULT 0;
`,
	},
	{
		version: 12,
		name:    "scoped API keys",
		sql: `
-- Scoped keys of an account (issue 14). scopes and apps are JSON arrays of strings. The
-- hash is unique: a key is found by it on every request.
CREATE TABLE api_keys (
	id           TEXT    NOT NULL PRIMARY KEY,
	account_id   TEXT    NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
	name         TEXT    NOT NULL,
	hash         TEXT    NOT NULL,
	prefix       TEXT    NOT NULL,
	last4        TEXT    NOT NULL,
	scopes       TEXT    NOT NULL,
	apps         TEXT    NOT NULL,
	expires_at   INTEGER NOT NULL,
	last_used_at INTEGER NOT NULL,
	last_used_ip TEXT    NOT NULL,
	created_at   INTEGER NOT NULL,
	updated_at   INTEGER NOT NULL
) STRICT;

CREATE UNIQUE INDEX api_keys_hash ON api_keys (hash);
CREATE INDEX api_keys_account ON api_keys (account_id, created_at, id);
`,
	},
	{
		version: 13,
		name:    "audit log",
		sql: `
-- Changes made through the Dashboard and admin APIs (issue 14). No foreign key: the trail
-- outlives what it describes.
CREATE TABLE audit_log (
	id          TEXT    NOT NULL PRIMARY KEY,
	account_id  TEXT    NOT NULL,
	app_id      TEXT    NOT NULL,
	actor_type  TEXT    NOT NULL,
	actor_id    TEXT    NOT NULL,
	actor_name  TEXT    NOT NULL,
	ip          TEXT    NOT NULL,
	method      TEXT    NOT NULL,
	route       TEXT    NOT NULL,
	path        TEXT    NOT NULL,
	record_type TEXT    NOT NULL,
	record_id   TEXT    NOT NULL,
	status      INTEGER NOT NULL,
	before      TEXT    NOT NULL,
	after       TEXT    NOT NULL,
	created_at  INTEGER NOT NULL
) STRICT;

CREATE INDEX audit_log_account ON audit_log (account_id, created_at, id);
CREATE INDEX audit_log_created ON audit_log (created_at, id);
`,
	},
	{
		version: 14,
		name:    "event log",
		sql: `
-- The durable event log (issue 21): every event of a change is stored with it, and the
-- consumers (log entries, webhooks, sockets, actors) read it with their cursors. pos is
-- the order consumers read in; AUTOINCREMENT keeps a pos from being given twice even
-- after the newest row is gone. seq numbers an app's events; both are assigned in one
-- write transaction, so they agree. No foreign key: events outlive their app until
-- compaction.
CREATE TABLE events (
	pos        INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
	id         TEXT    NOT NULL UNIQUE,
	app_id     TEXT    NOT NULL,
	seq        INTEGER NOT NULL,
	type       TEXT    NOT NULL,
	payload    BLOB    NOT NULL,
	created_at INTEGER NOT NULL
) STRICT;

CREATE UNIQUE INDEX events_app_seq ON events (app_id, seq);
CREATE INDEX events_created ON events (created_at, pos);

-- A consumer's cursor: the pos of the last event it handled.
CREATE TABLE event_cursors (
	consumer   TEXT    NOT NULL PRIMARY KEY,
	pos        INTEGER NOT NULL,
	updated_at INTEGER NOT NULL
) STRICT;
`,
	},
	{
		version: 15,
		name:    "audit chain",
		sql: `
-- Tamper evidence (issue 21): each entry carries its place in its account's chain and the
-- hash of the entry before. Entries written before this step keep seq 0, outside the chain.
ALTER TABLE audit_log ADD COLUMN seq       INTEGER NOT NULL DEFAULT 0;
ALTER TABLE audit_log ADD COLUMN prev_hash TEXT    NOT NULL DEFAULT '';
ALTER TABLE audit_log ADD COLUMN hash      TEXT    NOT NULL DEFAULT '';

CREATE UNIQUE INDEX audit_log_chain ON audit_log (account_id, seq) WHERE seq > 0;
`,
	},
	{
		version: 20,
		name:    "owner sessions",
		sql: `
-- The owner's signed-in dashboard sessions (issues 22, 25): a JWT names its session, so a
-- deleted row refuses it on every node. refresh_hash is the SHA-256 of the cookie's secret.
CREATE TABLE owner_sessions (
	id           TEXT    NOT NULL PRIMARY KEY,
	account_id   TEXT    NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
	refresh_hash TEXT    NOT NULL,
	user_agent   TEXT    NOT NULL,
	ip           TEXT    NOT NULL,
	created_at   INTEGER NOT NULL,
	last_used_at INTEGER NOT NULL,
	auth_at      INTEGER NOT NULL,
	expires_at   INTEGER NOT NULL
) STRICT;

CREATE INDEX owner_sessions_account ON owner_sessions (account_id, last_used_at);
CREATE INDEX owner_sessions_expires ON owner_sessions (expires_at);
`,
	},
	{
		version: 21,
		name:    "recovery codes",
		sql: `
-- One-time recovery codes of an owner (issue 25), by their SHA-256; a used code is deleted.
CREATE TABLE recovery_codes (
	account_id TEXT    NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
	hash       TEXT    NOT NULL,
	created_at INTEGER NOT NULL,
	PRIMARY KEY (account_id, hash)
) STRICT, WITHOUT ROWID;
`,
	},
	// 30: the stores (issue 23).
	{
		version: 30,
		name:    "store connections, product mappings, orders and their events",
		sql: `
-- Commerce records are kept whole as JSON (doc); the columns beside it are what lookups
-- and uniqueness need. The signing secret inside a connection's doc is sealed.
CREATE TABLE store_connections (
	id          TEXT NOT NULL PRIMARY KEY,
	app_id      TEXT NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
	receiver_id TEXT NOT NULL UNIQUE,
	created_at  INTEGER NOT NULL,
	doc         TEXT NOT NULL
) STRICT;
CREATE INDEX store_connections_app ON store_connections (app_id, created_at);

CREATE TABLE store_products (
	id            TEXT NOT NULL PRIMARY KEY,
	app_id        TEXT NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
	connection_id TEXT NOT NULL REFERENCES store_connections (id) ON DELETE CASCADE,
	product_id    TEXT NOT NULL,
	variant_id    TEXT NOT NULL,
	doc           TEXT NOT NULL,
	UNIQUE (connection_id, product_id, variant_id)
) STRICT;

-- Orders outlive their connection (the owner's sales history); an order is unique per
-- (connection, store order id): two deliveries of one sale insert one row.
CREATE TABLE store_orders (
	id              TEXT NOT NULL PRIMARY KEY,
	app_id          TEXT NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
	connection_id   TEXT NOT NULL,
	order_id        TEXT NOT NULL,
	subscription_id TEXT NOT NULL,
	created_at      INTEGER NOT NULL,
	doc             TEXT NOT NULL,
	UNIQUE (connection_id, order_id)
) STRICT;
CREATE INDEX store_orders_app ON store_orders (app_id, created_at);
CREATE INDEX store_orders_subscription ON store_orders (connection_id, subscription_id) WHERE subscription_id <> '';

CREATE TABLE store_order_events (
	id          TEXT NOT NULL PRIMARY KEY,
	app_id      TEXT NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
	order_ref   TEXT NOT NULL,
	received_at INTEGER NOT NULL,
	doc         TEXT NOT NULL
) STRICT;
CREATE INDEX store_order_events_order ON store_order_events (app_id, order_ref, received_at);
`,
	},
	// 31: passkeys (issue 25); 32: the request a delivery sent (issue 22). Numbered after 30
	// because a database at 30 runs only what comes after it.
	{
		version: 31,
		name:    "passkeys and webauthn challenges",
		sql: `
-- An owner's passkeys (issue 25): credential is the WebAuthn library's record as JSON
-- (public key, flags, sign counter); credential_id is unique across accounts.
CREATE TABLE passkeys (
	id            TEXT    NOT NULL PRIMARY KEY,
	account_id    TEXT    NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
	name          TEXT    NOT NULL,
	credential_id BLOB    NOT NULL UNIQUE,
	credential    BLOB    NOT NULL,
	created_at    INTEGER NOT NULL,
	last_used_at  INTEGER NOT NULL
) STRICT;
CREATE INDEX passkeys_account ON passkeys (account_id, created_at);

-- Ceremonies begun and not finished (a few minutes at most), deleted when used, so any
-- node finishes what another began and a challenge works once.
CREATE TABLE webauthn_challenges (
	id         TEXT    NOT NULL PRIMARY KEY,
	account_id TEXT    NOT NULL,
	purpose    TEXT    NOT NULL,
	data       BLOB    NOT NULL,
	expires_at INTEGER NOT NULL,
	created_at INTEGER NOT NULL
) STRICT;
CREATE INDEX webauthn_challenges_expires ON webauthn_challenges (expires_at);
`,
	},
	{
		version: 32,
		name:    "the request a webhook delivery sent",
		sql: `
-- The last attempt's request as it went out (issue 22): headers as written and body bytes,
-- in core/webhooks' stored form; empty until an attempt reached a receiver.
ALTER TABLE webhook_deliveries ADD COLUMN sent BLOB NOT NULL DEFAULT x'';
`,
	},
	{
		version: 33,
		name:    "finished webhook deliveries move out of the queue into webhook_history",
		sql: `
-- The queue (webhook_deliveries) keeps only pending deliveries; finished ones (delivered,
-- failed for good) live here until PurgeDeliveries, for the dashboard's detail and
-- redeliver. Same columns as the queue, so a delivery moves between the two as it is.
CREATE TABLE webhook_history (
	id              TEXT    NOT NULL PRIMARY KEY,
	app_id          TEXT    NOT NULL,
	integration_id  TEXT    NOT NULL,
	event_id        TEXT    NOT NULL,
	event           TEXT    NOT NULL,
	payload         BLOB    NOT NULL,
	state           TEXT    NOT NULL,
	attempts        INTEGER NOT NULL,
	next_attempt_at INTEGER NOT NULL,
	lease_owner     TEXT    NOT NULL,
	lease_until     INTEGER NOT NULL,
	last_error      TEXT    NOT NULL,
	created_at      INTEGER NOT NULL,
	updated_at      INTEGER NOT NULL,
	sent            BLOB    NOT NULL
) STRICT;

-- PurgeDeliveries: by last update.
CREATE INDEX webhook_history_updated ON webhook_history (updated_at);
-- The sweeps of DeleteIntegration and DeleteApp.
CREATE INDEX webhook_history_integration ON webhook_history (app_id, integration_id);

INSERT INTO webhook_history (id, app_id, integration_id, event_id, event, payload, state, attempts, next_attempt_at,
	lease_owner, lease_until, last_error, created_at, updated_at, sent)
SELECT id, app_id, integration_id, event_id, event, payload, state, attempts, next_attempt_at,
	lease_owner, lease_until, last_error, created_at, updated_at, sent
FROM webhook_deliveries WHERE state IN ('delivered', 'failed');
DELETE FROM webhook_deliveries WHERE state IN ('delivered', 'failed');

-- The queue no longer keeps finished deliveries to purge.
DROP INDEX webhook_deliveries_updated;
`,
	},
	{
		version: 34,
		name:    "the buyer portal's settings on the app",
		sql: `
-- The buyer portal's settings move from a store connection of kind portal (issue 23) to
-- the app: whether it is served, and each buyer action's switch.
ALTER TABLE apps ADD COLUMN portal_enabled      INTEGER NOT NULL DEFAULT 0;
ALTER TABLE apps ADD COLUMN portal_hwid_reset   INTEGER NOT NULL DEFAULT 0;
ALTER TABLE apps ADD COLUMN portal_seat_release INTEGER NOT NULL DEFAULT 0;
ALTER TABLE apps ADD COLUMN portal_downloads    INTEGER NOT NULL DEFAULT 0;
ALTER TABLE apps ADD COLUMN portal_resend       INTEGER NOT NULL DEFAULT 0;

-- An app with a portal connection keeps its switches: the connection's doc is the record
-- as JSON (Go field names; the switches under Portal with their JSON names). One portal
-- per app was enforced; should there be two, the oldest wins.
UPDATE apps SET (portal_enabled, portal_hwid_reset, portal_seat_release, portal_downloads, portal_resend) = (
	SELECT coalesce(json_extract(c.doc, '$.Enabled'), 0) <> 0,
		coalesce(json_extract(c.doc, '$.Portal.hwidReset'), 0) <> 0,
		coalesce(json_extract(c.doc, '$.Portal.seatRelease'), 0) <> 0,
		coalesce(json_extract(c.doc, '$.Portal.downloads'), 0) <> 0,
		coalesce(json_extract(c.doc, '$.Portal.resend'), 0) <> 0
	FROM store_connections c
	WHERE c.app_id = apps.id AND json_extract(c.doc, '$.Provider') = 'portal'
	ORDER BY c.created_at, c.id LIMIT 1)
WHERE id IN (SELECT app_id FROM store_connections WHERE json_extract(doc, '$.Provider') = 'portal');
`,
	},
	{
		version: 35,
		name:    "parts of the audit entries of bulk requests, stored with each record's change",
		sql: `
-- A bulk request that changes each record in a write of its own (users bulk and import,
-- licenses add-time) stores each record's part of its one audit entry in that write's
-- transaction; the parts of a request (group_id) are merged into one entry of audit_log
-- and removed in one transaction once the request is done, or at the next start.
CREATE TABLE audit_parts (
	id         TEXT    NOT NULL PRIMARY KEY,
	group_id   TEXT    NOT NULL,
	entry      TEXT    NOT NULL,
	created_at INTEGER NOT NULL
) STRICT;
CREATE INDEX audit_parts_group ON audit_parts (group_id, created_at);
`,
	},
	{
		version: 36,
		name:    "purges of app logs stored as intents with their audit entry",
		sql: `
-- A purge of an app's logs (DELETE .../logs) is stored here, with its audit entry in the
-- same transaction, before any entry is deleted; the logs then go in chunks and the row
-- goes when they are gone. A row left by a stopped node is resumed (logs.Janitor) to the
-- same cutoff (before_at).
CREATE TABLE log_purges (
	id         TEXT    NOT NULL PRIMARY KEY,
	app_id     TEXT    NOT NULL,
	days       INTEGER NOT NULL,
	before_at  INTEGER NOT NULL,
	account_id TEXT    NOT NULL,
	actor      TEXT    NOT NULL,
	request_id TEXT    NOT NULL,
	created_at INTEGER NOT NULL,
	touched_at INTEGER NOT NULL
) STRICT;
`,
	},
	{
		version: 37,
		name:    "the history of finished webhook deliveries is bounded per integration by count",
		sql: `
-- TrimDeliveries keeps an integration's newest finished deliveries by last update (then
-- id) and removes the rest in bounded batches; IntegrationsOverHistory counts them per
-- integration. Both read this index alone. It also serves the sweeps of DeleteIntegration
-- and DeleteApp, which the narrower index it replaces served.
CREATE INDEX webhook_history_integration_updated ON webhook_history (app_id, integration_id, updated_at, id);
DROP INDEX webhook_history_integration;
`,
	},
	{
		version: 38,
		name:    "a user's standing is read from an index alone",
		sql: `
-- GetUserStandings (a socket's admission) reads these columns of one user by app and id:
-- from this index alone, one b-tree, rather than the app_users_app_id index and then the
-- user's whole row (it names the index: the planner prefers the unique one). 9.0 against
-- 6.8 us a read (BenchmarkUserStanding). A login's updates change none of these columns
-- but expires_at, and only when a license extends it.
CREATE INDEX app_users_standing ON app_users (app_id, id, enabled, banned, expires_at, username, ban_reason);
`,
	},
}

// migrate brings the database at db (the writer pool) to the last migration, and answers
// the version it found. Every pending step runs in one transaction with its rows in
// schema_migrations: a step that fails leaves the database as it was before the first
// (no half-migrated schema for an older binary to meet). before, when not nil, runs
// first when there are pending steps on a database that has a schema (the server copies
// the database aside there).
func migrate(ctx context.Context, db *sql.DB, before func(from, to int) error) (int, error) {
	// schema_migrations is created outside the numbered steps: it is what records them.
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
	version    INTEGER NOT NULL PRIMARY KEY,
	name       TEXT    NOT NULL,
	applied_at INTEGER NOT NULL
) STRICT`); err != nil {
		return 0, fmt.Errorf("create schema_migrations: %w", err)
	}

	// A database migrated by a newer Keyward has a schema this build does not know; writing
	// to it could corrupt data the newer version relies on.
	var latest sql.NullInt64
	if err := db.QueryRowContext(ctx, `SELECT max(version) FROM schema_migrations`).Scan(&latest); err != nil {
		return 0, fmt.Errorf("read schema version: %w", err)
	}
	known := migrations[len(migrations)-1].version
	if latest.Valid && latest.Int64 > int64(known) {
		return int(latest.Int64), fmt.Errorf("database schema version %d is newer than this build's %d: upgrade Keyward", latest.Int64, known)
	}
	from := int(latest.Int64)
	if from == known {
		return from, nil
	}
	if before != nil && from > 0 {
		if err := before(from, known); err != nil {
			return from, err
		}
	}
	// The writer pool begins transactions IMMEDIATE, so when two processes open the same
	// new file at once, one applies the steps and the other then sees them recorded.
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return from, err
	}
	defer tx.Rollback() //nolint:errcheck // after Commit this is a no-op
	for _, m := range migrations {
		var applied int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM schema_migrations WHERE version = ?`, m.version).Scan(&applied); err != nil {
			return from, err
		}
		if applied > 0 {
			continue
		}
		if _, err := tx.ExecContext(ctx, m.sql); err != nil {
			// As text: the step's name must reach the log (wrap keeps a driver error's own text only).
			return from, fmt.Errorf("migration %d (%s) failed, nothing was changed: %v", m.version, m.name, err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
			m.version, m.name, time.Now().UnixMilli()); err != nil {
			return from, fmt.Errorf("migration %d (%s): %w", m.version, m.name, err)
		}
	}
	return from, tx.Commit()
}
