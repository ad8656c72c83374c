package mongo

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/event"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/readpref"
	"go.mongodb.org/mongo-driver/v2/x/mongo/driver/connstring"
	"go.mongodb.org/mongo-driver/v2/x/mongo/driver/topology"

	"github.com/keyward/keyward/internal/supervise"
	"github.com/keyward/keyward/storage"
)

// Config says which server and database to use.
type Config struct {
	// URI is a mongodb:// or mongodb+srv:// connection string.
	URI string
	// Database defaults to the database named in the URI path, else DefaultDatabase.
	Database string
	// Sealer encrypts the secrets the server reads back (TOTP secrets, integration signing
	// secrets) before they are written; nil keeps them in clear. When set, Open seals the
	// values still stored in clear and checks that the sealed ones open (the right key).
	Sealer storage.Sealer
	// Monitor, when set, sees every command the store sends (the load tool counts the
	// reads of the periodic work with it).
	Monitor *event.CommandMonitor

	// Client, set by tests only, is a connected client (Connect) to use instead of
	// connecting to URI, which must still name the same server; Close leaves it connected.
	// Tests open hundreds of stores in one process (a fresh one per conformance subtest,
	// one per test node), and connecting warms minPoolSize connections each time: it was
	// most of the conformance suite's CPU, the test process's and FerretDB's.
	Client *mongo.Client
}

// DefaultDatabase is used when neither Config.Database nor the URI names one.
const DefaultDatabase = "keyward"

// Outage detection. A request that needs a server that is down or frozen must fail with
// ErrUnavailable in about a second rather than hang: a stopped server refuses connections,
// so a call fails once server selection gives up; a frozen one (SIGSTOP, a dead link)
// accepts connections and never answers, so the driver's monitor must notice it, which
// it does when two heartbeats in a row time out: it marks the server unknown and
// interrupts the operations in flight on it. No deadline is put on operations themselves:
// analytics aggregations may legitimately run long on a healthy server. A URI that sets
// serverSelectionTimeoutMS, connectTimeoutMS or heartbeatFrequencyMS keeps its value (a
// server reached over a slow link may need a longer connect timeout).
const (
	// serverSelectionTimeout bounds how long one call waits for a reachable server.
	serverSelectionTimeout = 600 * time.Millisecond
	// heartbeatInterval is how often the monitor checks the server (the driver's least).
	heartbeatInterval = 500 * time.Millisecond
	// connectTimeout bounds a connection's dial and each monitor check: a frozen server is
	// found within heartbeatInterval + 2 × connectTimeout.
	connectTimeout = 250 * time.Millisecond
	// openTimeout bounds the wait for the server at Open, so that a wrong or unreachable
	// URI stops start-up with a clear error (a server still starting gets that long).
	openTimeout = 5 * time.Second
	// The pool. The driver (v2) bounds the wait for a connection by the same deadline as
	// server selection (one context, operation.go getServerAndConnection), so a burst that
	// finds no free connection fails like an outage after serverSelectionTimeout; and a
	// connection made during the burst must finish its handshake within connectTimeout, or
	// the driver marks the server unknown and drops the whole pool. The pool is therefore
	// sized so that a burst does not wait and does not handshake: poolWarm connections are
	// made at start and kept by the driver's background maintenance, the pool grows
	// poolGrowth at a time beyond them (the driver's default is 2), up to poolMax. The
	// outage bounds above stay as they are. A URI that sets minPoolSize, maxPoolSize or
	// maxConnecting keeps its value.
	poolWarm   = 128
	poolMax    = 256
	poolGrowth = 16
	// poolWarmWait bounds how long Open waits for the warm connections (they keep being made
	// in the background after it).
	poolWarmWait = 3 * time.Second
	// cleanupTimeout bounds the writes that undo or release something after the caller
	// gave up (a claim, half a batch).
	cleanupTimeout = 3 * time.Second
)

// warmPool makes the pool's warm connections now, so that a burst right after start finds
// them: the driver's own maintenance makes 10 every 10 s. Concurrent pings each need a
// connection of their own. It gives up after poolWarmWait (the maintenance goes on).
func warmPool(ctx context.Context, client *mongo.Client, warm uint64, pooled *atomic.Int64) {
	ctx, cancel := context.WithTimeout(ctx, poolWarmWait)
	defer cancel()
	for pooled.Load() < int64(warm) && ctx.Err() == nil {
		var g supervise.Group // a ping's panic is raised again here, in Open
		for range warm {
			g.Go(func() { _ = client.Ping(ctx, readpref.Primary()) })
		}
		g.Wait()
	}
}

// Collection names.
const (
	collAccounts      = "accounts"
	collAccountTokens = "accountTokens"
	collClaims        = "claims"
	collApps          = "apps"
	collUsers         = "users"
	collLicenses      = "licenses"
	collDevices       = "devices"
	collTokens        = "tokens"
	collVariables     = "variables"
	collFiles         = "files"
	collRules         = "rules"
	collLogs          = "logs"
	collIntegrations  = "integrations"
	collDeliveries    = "webhookDeliveries"
	collHistory       = "webhookHistory"
	collAttempts      = "webhookAttempts"
	collSessions      = "clientSessions"
	collWSHooks       = "wsHooks"
	collRevocations   = "tokenRevocations"
	collOwnerSessions = "ownerSessions"
	collRecoveryCodes = "recoveryCodes"
	collPasskeys      = "passkeys"
	collChallenges    = "webauthnChallenges"
	collAPIKeys       = "apiKeys"
	collAudit         = "auditLog"
	collEvents        = "events"
	collEventCursors  = "eventCursors"
	collEventHeads    = "eventHeads"
	collAuditPending  = "auditPending"
)

// Store is the MongoDB-wire engine. It is safe for concurrent use.
type Store struct {
	client         *mongo.Client
	db             *mongo.Database
	accounts       *mongo.Collection
	accountTokens  *mongo.Collection
	claims         *mongo.Collection
	auditPending   *mongo.Collection
	apps           *mongo.Collection
	users          *mongo.Collection
	licenses       *mongo.Collection
	devices        *mongo.Collection
	tokens         *mongo.Collection // application access tokens
	variables      *mongo.Collection
	files          *mongo.Collection
	rules          *mongo.Collection
	logs           *mongo.Collection
	integrations   *mongo.Collection
	deliveries     *mongo.Collection // the webhook delivery queue: pending deliveries only
	history        *mongo.Collection // finished webhook deliveries (see deliveries.go)
	attempts       *mongo.Collection // webhook delivery attempts
	clientSessions *mongo.Collection // durable copies of client sessions
	wsHooks        *mongo.Collection // WebSocket hooks
	revocations    *mongo.Collection // logged-out dashboard JWTs
	ownerSessions  *mongo.Collection // owners' signed-in dashboard sessions
	recoveryCodes  *mongo.Collection // owners' one-time recovery codes
	passkeys       *mongo.Collection // owners' WebAuthn credentials
	challenges     *mongo.Collection // WebAuthn ceremonies begun, not finished
	apiKeys        *mongo.Collection // scoped API keys
	audit          *mongo.Collection // the audit log
	events         *mongo.Collection // the durable event log, by position
	eventCursors   *mongo.Collection // the event log consumers' cursors
	eventHeads     *mongo.Collection // hints of the log's last position and seqs
	sealer         storage.Sealer
	sharedClient   bool // Config.Client: Close does not disconnect it
	purgeChunk     int  // the entries a chunk of a log purge deletes (0: logPurgeChunk); tests set it small
}

var _ storage.Store = (*Store)(nil)

// Connect connects to the server of uri as Open does (the same timeouts and pool), for a
// client several stores share (Config.Client; tests only).
func Connect(ctx context.Context, uri string) (*mongo.Client, error) {
	cs, err := connstring.ParseAndValidate(uri)
	if err != nil {
		return nil, errors.New("mongo: connect: invalid URI")
	}
	return connect(ctx, Config{URI: uri}, cs, strings.Join(cs.Hosts, ","))
}

// connect connects to the server of the URI, waits until it answers (up to openTimeout)
// and warms the pool.
func connect(ctx context.Context, cfg Config, cs *connstring.ConnString, where string) (*mongo.Client, error) {
	opts := options.Client().ApplyURI(cfg.URI).SetServerMonitoringMode(options.ServerMonitoringModePoll)
	if cfg.Monitor != nil {
		opts.SetMonitor(cfg.Monitor)
	}
	if !cs.ServerSelectionTimeoutSet {
		opts.SetServerSelectionTimeout(serverSelectionTimeout)
	}
	if !cs.ConnectTimeoutSet {
		opts.SetConnectTimeout(connectTimeout)
	}
	if !cs.HeartbeatIntervalSet {
		opts.SetHeartbeatInterval(heartbeatInterval)
	}
	warm := uint64(poolWarm)
	if cs.MinPoolSizeSet {
		warm = cs.MinPoolSize
	} else {
		opts.SetMinPoolSize(poolWarm)
	}
	var pooled atomic.Int64 // connections ready in the pool
	opts.SetPoolMonitor(&event.PoolMonitor{Event: func(e *event.PoolEvent) {
		switch e.Type {
		case event.ConnectionReady:
			pooled.Add(1)
		case event.ConnectionClosed:
			pooled.Add(-1)
		}
	}})
	if !cs.MaxPoolSizeSet {
		opts.SetMaxPoolSize(poolMax)
	}
	if !cs.MaxConnectingSet {
		opts.SetMaxConnecting(poolGrowth)
	}
	if !cs.RetryReadsSet {
		// A read interrupted because the server froze would otherwise wait for a server
		// again, doubling the time to the 503.
		opts.SetRetryReads(false)
	}
	client, err := mongo.Connect(opts)
	if err != nil {
		return nil, fmt.Errorf("mongo: open %s: %w", where, err)
	}

	// Ping until the server answers or openTimeout passes: one ping gives up after the
	// short server-selection timeout.
	pingCtx, cancel := context.WithTimeout(ctx, openTimeout)
	defer cancel()
	for {
		err := client.Ping(pingCtx, readpref.Primary())
		if err == nil {
			break
		}
		select {
		case <-pingCtx.Done():
			_ = client.Disconnect(context.WithoutCancel(ctx))
			return nil, fmt.Errorf("mongo: open %s: %w: %v", where, storage.ErrUnavailable, err)
		case <-time.After(100 * time.Millisecond):
		}
	}

	warmPool(ctx, client, warm, &pooled)
	return client, nil
}

// Open connects, checks the server answers, and creates the indexes the contract relies on.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	cs, err := connstring.ParseAndValidate(cfg.URI)
	if err != nil {
		// The parse error may quote the URI, password included: keep only its kind.
		return nil, errors.New("mongo: open: invalid URI")
	}
	dbName := databaseName(cfg, cs)
	where := strings.Join(cs.Hosts, ",") + "/" + dbName

	client := cfg.Client
	if client == nil {
		if client, err = connect(ctx, cfg, cs, where); err != nil {
			return nil, err
		}
	}
	// closeClient undoes the connect of an Open that fails.
	closeClient := func() {
		if cfg.Client == nil {
			_ = client.Disconnect(context.WithoutCancel(ctx))
		}
	}

	db := client.Database(dbName)
	s := &Store{
		client:         client,
		sharedClient:   cfg.Client != nil,
		db:             db,
		accounts:       db.Collection(collAccounts),
		accountTokens:  db.Collection(collAccountTokens),
		claims:         db.Collection(collClaims),
		auditPending:   db.Collection(collAuditPending),
		apps:           db.Collection(collApps),
		users:          db.Collection(collUsers),
		licenses:       db.Collection(collLicenses),
		devices:        db.Collection(collDevices),
		tokens:         db.Collection(collTokens),
		variables:      db.Collection(collVariables),
		files:          db.Collection(collFiles),
		rules:          db.Collection(collRules),
		logs:           db.Collection(collLogs),
		integrations:   db.Collection(collIntegrations),
		deliveries:     db.Collection(collDeliveries),
		history:        db.Collection(collHistory),
		attempts:       db.Collection(collAttempts),
		clientSessions: db.Collection(collSessions),
		wsHooks:        db.Collection(collWSHooks),
		revocations:    db.Collection(collRevocations),
		ownerSessions:  db.Collection(collOwnerSessions),
		recoveryCodes:  db.Collection(collRecoveryCodes),
		passkeys:       db.Collection(collPasskeys),
		challenges:     db.Collection(collChallenges),
		apiKeys:        db.Collection(collAPIKeys),
		audit:          db.Collection(collAudit),
		events:         db.Collection(collEvents),
		eventCursors:   db.Collection(collEventCursors),
		eventHeads:     db.Collection(collEventHeads),
		sealer:         cfg.Sealer,
	}
	if err := s.createIndexes(ctx); err != nil {
		closeClient()
		return nil, fmt.Errorf("mongo: open %s: %w", where, err)
	}
	if err := s.sealStored(ctx); err != nil {
		closeClient()
		return nil, fmt.Errorf("mongo: open %s: %w", where, err)
	}
	if err := s.copyPortalSwitches(ctx); err != nil {
		_ = client.Disconnect(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("mongo: open %s: %w", where, err)
	}
	return s, nil
}

// databaseName picks the database: the configured one, else the URI's, else the default.
func databaseName(cfg Config, cs *connstring.ConnString) string {
	switch {
	case cfg.Database != "":
		return cfg.Database
	case cs.Database != "":
		return cs.Database
	}
	return DefaultDatabase
}

// createIndexes creates what the contract needs; creating an index that exists with the
// same spec is a no-op, so this runs at every Open.
//
// Every unique index is on a field every document has: FerretDB does not reliably support
// sparse or partial indexes, so uniqueness must not depend on skipping documents. For the
// same reason the API key hash index is not unique (accounts without a key all hold "").
func (s *Store) createIndexes(ctx context.Context) error {
	unique := func(name string) *options.IndexOptionsBuilder {
		return options.Index().SetName(name).SetUnique(true)
	}
	plain := func(name string) *options.IndexOptionsBuilder { return options.Index().SetName(name) }

	sets := []struct {
		coll   *mongo.Collection
		models []mongo.IndexModel
	}{
		{s.accounts, []mongo.IndexModel{
			{Keys: bson.D{{Key: "usernameLower", Value: 1}}, Options: unique("usernameLower_unique")},
			{Keys: bson.D{{Key: "emailLower", Value: 1}}, Options: unique("emailLower_unique")},
			{Keys: bson.D{{Key: "apiKeyHash", Value: 1}}, Options: plain("apiKeyHash")},
			{Keys: bson.D{{Key: "createdAt", Value: 1}, {Key: "_id", Value: 1}}, Options: plain("createdAt_id")},
		}},
		// Scoped API keys are found by hash on every request, listed per account.
		{s.apiKeys, []mongo.IndexModel{
			{Keys: bson.D{{Key: "hash", Value: 1}}, Options: unique("hash_unique")},
			{Keys: bson.D{{Key: "accountId", Value: 1}, {Key: "createdAt", Value: 1}, {Key: "_id", Value: 1}}, Options: plain("accountId_createdAt_id")},
		}},
		// The audit log is listed newest first per account or overall, purged by age.
		{s.audit, []mongo.IndexModel{
			{Keys: bson.D{{Key: "accountId", Value: 1}, {Key: "createdAt", Value: 1}, {Key: "_id", Value: 1}}, Options: plain("accountId_createdAt_id")},
			{Keys: bson.D{{Key: "createdAt", Value: 1}, {Key: "_id", Value: 1}}, Options: plain("createdAt_id")},
			// The chain: its end per account (AppendAudit), its walk (AuditChain), and the id
			// a retried append looks for. Uniqueness per account and seq is the _id's.
			{Keys: bson.D{{Key: "accountId", Value: 1}, {Key: "seq", Value: 1}}, Options: plain("accountId_seq")},
			{Keys: bson.D{{Key: "entryId", Value: 1}}, Options: plain("entryId")},
		}},
		// Revocations are looked up by token id, purged by expiry.
		{s.revocations, []mongo.IndexModel{
			{Keys: bson.D{{Key: "jti", Value: 1}, {Key: "expiresAt", Value: 1}}, Options: plain("jti_expiresAt")},
			{Keys: bson.D{{Key: "expiresAt", Value: 1}}, Options: plain("expiresAt")},
		}},
		// Recovery codes: _id is account and hash; listed per account.
		{s.recoveryCodes, []mongo.IndexModel{
			{Keys: bson.D{{Key: "accountId", Value: 1}}, Options: plain("accountId")},
		}},
		// Passkeys: a credential id is one account's; listed per account.
		{s.passkeys, []mongo.IndexModel{
			{Keys: bson.D{{Key: "credentialId", Value: 1}}, Options: unique("credentialId")},
			{Keys: bson.D{{Key: "accountId", Value: 1}, {Key: "createdAt", Value: 1}}, Options: plain("accountId_createdAt")},
		}},
		// WebAuthn challenges are purged by expiry.
		{s.challenges, []mongo.IndexModel{
			{Keys: bson.D{{Key: "expiresAt", Value: 1}}, Options: plain("expiresAt")},
		}},
		// Owner sessions are listed per account, purged by expiry.
		{s.ownerSessions, []mongo.IndexModel{
			{Keys: bson.D{{Key: "accountId", Value: 1}, {Key: "lastUsedAt", Value: -1}}, Options: plain("accountId_lastUsedAt")},
			{Keys: bson.D{{Key: "expiresAt", Value: 1}}, Options: plain("expiresAt")},
		}},
		// A token's hash is its _id, unique by construction.
		{s.accountTokens, []mongo.IndexModel{
			{Keys: bson.D{{Key: "accountId", Value: 1}, {Key: "purpose", Value: 1}}, Options: plain("accountId_purpose")},
		}},
		// A claim's _id names the document and version it reserves (see updateDoc); owner
		// lets the deletion of an account or app sweep claims of dead updaters.
		{s.claims, []mongo.IndexModel{
			{Keys: bson.D{{Key: "owner", Value: 1}}, Options: plain("owner")},
		}},
		// App names are unique per account, case-insensitively; ListApps sorts by creation.
		{s.apps, []mongo.IndexModel{
			{Keys: bson.D{{Key: "accountId", Value: 1}, {Key: "nameLower", Value: 1}}, Options: unique("accountId_nameLower_unique")},
			{Keys: bson.D{{Key: "accountId", Value: 1}, {Key: "createdAt", Value: 1}, {Key: "_id", Value: 1}}, Options: plain("accountId_createdAt_id")},
			{Keys: bson.D{{Key: "secretHash", Value: 1}}, Options: plain("secretHash")},
		}},
		// Usernames are unique per app, case-insensitively (the index also serves the
		// username sort); the others serve the list sorts, and lastLoginAt the stats.
		{s.users, []mongo.IndexModel{
			{Keys: bson.D{{Key: "appId", Value: 1}, {Key: "usernameLower", Value: 1}}, Options: unique("appId_usernameLower_unique")},
			{Keys: bson.D{{Key: "appId", Value: 1}, {Key: "createdAt", Value: 1}, {Key: "_id", Value: 1}}, Options: plain("appId_createdAt_id")},
			{Keys: bson.D{{Key: "appId", Value: 1}, {Key: "lastLoginAt", Value: 1}, {Key: "_id", Value: 1}}, Options: plain("appId_lastLoginAt_id")},
			{Keys: bson.D{{Key: "appId", Value: 1}, {Key: "expiresAt", Value: 1}, {Key: "_id", Value: 1}}, Options: plain("appId_expiresAt_id")},
		}},
		// License keys are unique per app as stored (the index also serves the key sort).
		{s.licenses, []mongo.IndexModel{
			{Keys: bson.D{{Key: "appId", Value: 1}, {Key: "key", Value: 1}}, Options: unique("appId_key_unique")},
			{Keys: bson.D{{Key: "appId", Value: 1}, {Key: "createdAt", Value: 1}, {Key: "_id", Value: 1}}, Options: plain("appId_createdAt_id")},
			{Keys: bson.D{{Key: "appId", Value: 1}, {Key: "expiresAt", Value: 1}, {Key: "_id", Value: 1}}, Options: plain("appId_expiresAt_id")},
			{Keys: bson.D{{Key: "appId", Value: 1}, {Key: "usedCount", Value: 1}, {Key: "_id", Value: 1}}, Options: plain("appId_usedCount_id")},
		}},
		// A hwid is unique per user (user ids are unique across apps); devices are listed
		// newest first per app, and per user of an app.
		{s.devices, []mongo.IndexModel{
			{Keys: bson.D{{Key: "userId", Value: 1}, {Key: "hwid", Value: 1}}, Options: unique("userId_hwid_unique")},
			{Keys: bson.D{{Key: "appId", Value: 1}, {Key: "createdAt", Value: 1}, {Key: "_id", Value: 1}}, Options: plain("appId_createdAt_id")},
			{Keys: bson.D{{Key: "appId", Value: 1}, {Key: "userId", Value: 1}, {Key: "createdAt", Value: 1}, {Key: "_id", Value: 1}}, Options: plain("appId_userId_createdAt_id")},
		}},
		// Token values are unique per app as stored; tokens are listed newest first.
		{s.tokens, []mongo.IndexModel{
			{Keys: bson.D{{Key: "appId", Value: 1}, {Key: "value", Value: 1}}, Options: unique("appId_value_unique")},
			{Keys: bson.D{{Key: "appId", Value: 1}, {Key: "createdAt", Value: 1}, {Key: "_id", Value: 1}}, Options: plain("appId_createdAt_id")},
		}},
		// Variable keys are unique per scope and owner (ownerId is "" for app variables, so
		// every document has the fields); the index serves the lists, sorted by key, and
		// the sweeps of an owner's variables.
		{s.variables, []mongo.IndexModel{
			{Keys: bson.D{{Key: "appId", Value: 1}, {Key: "scope", Value: 1}, {Key: "ownerId", Value: 1}, {Key: "key", Value: 1}},
				Options: unique("appId_scope_ownerId_key_unique")},
		}},
		// Files are listed newest first, of the app and of one name (LatestFile).
		{s.files, []mongo.IndexModel{
			{Keys: bson.D{{Key: "appId", Value: 1}, {Key: "createdAt", Value: 1}, {Key: "_id", Value: 1}}, Options: plain("appId_createdAt_id")},
			{Keys: bson.D{{Key: "appId", Value: 1}, {Key: "name", Value: 1}, {Key: "createdAt", Value: 1}, {Key: "_id", Value: 1}},
				Options: plain("appId_name_createdAt_id")},
		}},
		// A rule is unique by (app, type, action, value); rules are listed oldest first.
		{s.rules, []mongo.IndexModel{
			{Keys: bson.D{{Key: "appId", Value: 1}, {Key: "type", Value: 1}, {Key: "action", Value: 1}, {Key: "value", Value: 1}},
				Options: unique("appId_type_action_value_unique")},
			{Keys: bson.D{{Key: "appId", Value: 1}, {Key: "createdAt", Value: 1}, {Key: "_id", Value: 1}}, Options: plain("appId_createdAt_id")},
		}},
		// Log entries: the list (newest first) and its time bounds, the aggregations since an
		// instant, DeleteLogsBefore, TrimLogs and LogApps; the list filtered by event, and
		// CountLogs and LogSeries; the list filtered by level; LogCountries; and the sweep
		// of every app by age.
		{s.logs, []mongo.IndexModel{
			{Keys: bson.D{{Key: "appId", Value: 1}, {Key: "createdAt", Value: 1}, {Key: "_id", Value: 1}}, Options: plain("appId_createdAt_id")},
			{Keys: bson.D{{Key: "appId", Value: 1}, {Key: "event", Value: 1}, {Key: "createdAt", Value: 1}}, Options: plain("appId_event_createdAt")},
			{Keys: bson.D{{Key: "appId", Value: 1}, {Key: "level", Value: 1}, {Key: "createdAt", Value: 1}}, Options: plain("appId_level_createdAt")},
			{Keys: bson.D{{Key: "appId", Value: 1}, {Key: "country", Value: 1}, {Key: "createdAt", Value: 1}}, Options: plain("appId_country_createdAt")},
			{Keys: bson.D{{Key: "createdAt", Value: 1}}, Options: plain("createdAt")},
		}},
		// An event's _id is its position. (appId, seq) is unique: with the _id, it is what
		// gives a position and an app's seq to one appender only (see AppendEvents); it
		// also answers an app's last seq. An appender that lost a race finds its own
		// events by eventId.
		{s.events, []mongo.IndexModel{
			{Keys: bson.D{{Key: "appId", Value: 1}, {Key: "seq", Value: 1}}, Options: unique("appId_seq_unique")},
			{Keys: bson.D{{Key: "eventId", Value: 1}}, Options: plain("eventId")},
		}},
		// Integrations are listed oldest first.
		{s.integrations, []mongo.IndexModel{
			{Keys: bson.D{{Key: "appId", Value: 1}, {Key: "createdAt", Value: 1}, {Key: "_id", Value: 1}}, Options: plain("appId_createdAt_id")},
		}},
		// ClaimDeliveries reads the due pending deliveries, oldest nextAttemptAt first;
		// PurgeDeliveries the finished ones by last update; DeleteIntegration and DeleteApp
		// sweep an integration's and an app's.
		{s.deliveries, []mongo.IndexModel{
			{Keys: bson.D{{Key: "state", Value: 1}, {Key: "nextAttemptAt", Value: 1}, {Key: "_id", Value: 1}}, Options: plain("state_nextAttemptAt_id")},
			{Keys: bson.D{{Key: "state", Value: 1}, {Key: "updatedAt", Value: 1}}, Options: plain("state_updatedAt")},
			{Keys: bson.D{{Key: "appId", Value: 1}, {Key: "integrationId", Value: 1}}, Options: plain("appId_integrationId")},
		}},
		// The history of finished deliveries: PurgeDeliveries removes them by last update,
		// DeleteIntegration and DeleteApp sweep an integration's and an app's, and
		// TrimDeliveries keeps an integration's newest by last update, then _id: one
		// index serves the three last (as SQLite's migration 37; a deployment made before
		// keeps its narrower appId_integrationId, which nothing needs).
		{s.history, []mongo.IndexModel{
			{Keys: bson.D{{Key: "updatedAt", Value: 1}}, Options: plain("updatedAt")},
			{Keys: bson.D{{Key: "appId", Value: 1}, {Key: "integrationId", Value: 1}, {Key: "updatedAt", Value: 1}, {Key: "_id", Value: 1}},
				Options: plain("appId_integrationId_updatedAt_id")},
		}},
		// Attempts are listed newest first per integration (the index also serves the
		// sweeps); PurgeDeliveries removes them by age.
		{s.attempts, []mongo.IndexModel{
			{Keys: bson.D{{Key: "appId", Value: 1}, {Key: "integrationId", Value: 1}, {Key: "createdAt", Value: 1}, {Key: "_id", Value: 1}},
				Options: plain("appId_integrationId_createdAt_id")},
			{Keys: bson.D{{Key: "createdAt", Value: 1}}, Options: plain("createdAt")},
		}},
		// A session copy's _id is its token hash. DeleteUserClientSessions (and DeleteApp's
		// sweep) select by app and user, DeleteExpiredClientSessions by expiry.
		{s.clientSessions, []mongo.IndexModel{
			{Keys: bson.D{{Key: "appId", Value: 1}, {Key: "userId", Value: 1}}, Options: plain("appId_userId")},
			{Keys: bson.D{{Key: "expiresAt", Value: 1}}, Options: plain("expiresAt")},
		}},
		// Hooks are listed by priority, then creation time, then id (the index also serves
		// CountWSHooks and DeleteApp's sweep).
		{s.wsHooks, []mongo.IndexModel{
			{Keys: bson.D{{Key: "appId", Value: 1}, {Key: "priority", Value: 1}, {Key: "createdAt", Value: 1}, {Key: "_id", Value: 1}},
				Options: plain("appId_priority_createdAt_id")},
		}},
	}
	// One createIndexes command per index: FerretDB 1.24 panics (and drops the
	// connection) when one command lists several indexes that already exist, which is
	// what every Open after the first sends.
	for _, set := range append(sets, s.commerceIndexes()...) {
		for _, m := range set.models {
			if _, err := set.coll.Indexes().CreateOne(ctx, m); err != nil {
				return wrap("create indexes on "+set.coll.Name(), err)
			}
		}
	}
	return nil
}

// Ping reports whether the server answers.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.client.Ping(ctx, readpref.Primary()); err != nil {
		return wrap("ping", err)
	}
	return nil
}

// Close disconnects, waiting at most a few seconds for in-flight operations; a store
// opened on a test's shared client (Config.Client) leaves it connected.
func (s *Store) Close() error {
	if s.sharedClient {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.client.Disconnect(ctx); err != nil {
		return fmt.Errorf("mongo: close: %w", err)
	}
	return nil
}

// wrap adds the operation to err and maps driver errors onto the storage sentinels. The
// driver's message is kept as text, never its type, so callers match sentinels only.
// Errors that are not the driver's (context cancellation) stay matchable as they are.
func wrap(op string, err error) error {
	switch {
	case errors.Is(err, mongo.ErrNoDocuments):
		return fmt.Errorf("mongo: %s: %w", op, storage.ErrNotFound)
	case isDuplicateKey(err):
		return fmt.Errorf("mongo: %s: %w: %v", op, storage.ErrConflict, err)
	case isUnavailable(err):
		return fmt.Errorf("mongo: %s: %w: %v", op, storage.ErrUnavailable, err)
	}
	return fmt.Errorf("mongo: %s: %w", op, err)
}

// isDuplicateKey reports a unique index violation. FerretDB 1.24 answers the standard
// E11000 to an insert but a generic InternalError quoting its backend's constraint message
// to an update, so those messages (SQLite's and PostgreSQL's) count too.
func isDuplicateKey(err error) bool {
	if mongo.IsDuplicateKeyError(err) {
		return true
	}
	var se mongo.ServerError
	return errors.As(err, &se) &&
		(se.HasErrorMessage("UNIQUE constraint failed") ||
			se.HasErrorMessage("duplicate key value violates unique constraint"))
}

// isUnavailable reports errors caused by the server being unreachable rather than by the
// request. A caller's own cancelled context is not an outage.
func isUnavailable(err error) bool {
	if errors.Is(err, context.Canceled) {
		return false
	}
	var sel topology.ServerSelectionError
	return errors.As(err, &sel) ||
		mongo.IsNetworkError(err) ||
		errors.Is(err, mongo.ErrClientDisconnected) ||
		(mongo.IsTimeout(err) && !errors.Is(err, context.DeadlineExceeded))
}

// fromDate brings a decoded BSON date to the contract's form: UTC, or the zero time for a
// field that was absent.
func fromDate(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return t.UTC()
}

// Database is the engine's database, for the GridFS blob store that keeps file bytes next
// to the records (storage/blobs/gridfs).
func (s *Store) Database() *mongo.Database { return s.db }
