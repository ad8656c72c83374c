package storage

import (
	"context"
	"time"
)

// Record kinds of the engine-neutral archive (internal/backup): one per table of the
// SQLite engine and per collection of the MongoDB engine that holds records. Each kind's
// records are the record type named beside it, as the engine stores them: sealed secrets
// stay sealed, hashes stay hashes. A new table is a new kind here, a line in each engine's
// archive.go and a line in internal/backup's kind list; the engines' every-table tests
// fail until it is.
const (
	KindAccounts         = "accounts"           // Account
	KindAccountTokens    = "account_tokens"     // AccountToken
	KindAPIKeys          = "api_keys"           // APIKey
	KindRevocations      = "token_revocations"  // Revocation
	KindApps             = "apps"               // App
	KindUsers            = "users"              // AppUser
	KindLicenses         = "licenses"           // License
	KindDevices          = "devices"            // Device
	KindAppTokens        = "app_tokens"         // Token
	KindVariables        = "variables"          // Variable
	KindFiles            = "files"              // File (the bytes travel as blobs)
	KindRules            = "rules"              // Rule
	KindWSHooks          = "ws_hooks"           // WSHook
	KindIntegrations     = "integrations"       // Integration
	KindDeliveries       = "webhook_deliveries" // Delivery (the queue: pending ones)
	KindDeliveryHistory  = "webhook_history"    // Delivery (finished ones; older archives keep them in KindDeliveries)
	KindDeliveryAttempts = "webhook_attempts"   // DeliveryAttempt
	KindClientSessions   = "client_sessions"    // ClientSession
	KindLogs             = "logs"               // LogEntry
	KindLogPurges        = "log_purges"         // LogPurge (purges asked, not finished yet)
	KindAudit            = "audit_log"          // AuditEntry (the chain kept: seq, hashes)
	KindEvents           = "events"             // EventRecord (positions and seqs kept)
	KindEventCursors     = "event_cursors"      // EventCursor
	KindOwnerSessions    = "owner_sessions"     // OwnerSession
	KindRecoveryCodes    = "recovery_codes"     // RecoveryCode
	KindPasskeys         = "passkeys"           // Passkey
	KindStoreConnections = "store_connections"  // StoreConnection (the signing secret sealed)
	KindStoreProducts    = "store_products"     // StoreProduct
	KindOrders           = "store_orders"       // Order
	KindOrderEvents      = "store_order_events" // OrderEvent
)

// Revocation is a revoked dashboard token as the archive carries it.
type Revocation struct {
	ID        string
	ExpiresAt time.Time
}

// EventCursor is a consumer's stored cursor as the archive carries it.
type EventCursor struct {
	Consumer string
	Pos      int64
}

// RecoveryCode is an owner's unused recovery code (its hash) as the archive carries it.
type RecoveryCode struct {
	AccountID string
	Hash      string
	CreatedAt time.Time
}

// ArchiveStore is what an engine adds for the archive. Reading goes through it (the
// store's own reads open sealed secrets and page by app); writing goes through the
// ordinary Create methods of a store opened without a Sealer (values are written as
// given, so sealed values stay sealed), except for the kinds whose Create methods assign
// what the archive must keep, which have a Restore method here.
type ArchiveStore interface {
	// ArchiveRecords calls emit with every record of kind as stored, ordered by its key
	// (the event log by position). An unknown kind is an error.
	ArchiveRecords(ctx context.Context, kind string, emit func(record any) error) error
	// ArchiveTables answers every table or collection the engine keeps, each with the
	// kind that carries it, or with "-" and why it is not carried (bookkeeping the engine
	// rebuilds). The every-table test compares it with the database itself.
	ArchiveTables() map[string]string
	// RestoreAudit writes audit entries as they are (seq, prev hash and hash kept).
	RestoreAudit(ctx context.Context, entries []AuditEntry) error
	// RestoreEvents writes events as they are (pos and seq kept).
	RestoreEvents(ctx context.Context, evs []EventRecord) error
	// RestoreRecoveryCodes adds codes as they are (ReplaceRecoveryCodes would drop the
	// account's codes of an earlier batch); ErrNotFound when an account is missing.
	RestoreRecoveryCodes(ctx context.Context, codes []RecoveryCode) error
	// SchemaVersion answers the version of the stored schema.
	SchemaVersion(ctx context.Context) (int, error)
}
