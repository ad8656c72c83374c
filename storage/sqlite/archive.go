package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/keyward/keyward/storage"
)

var _ storage.ArchiveStore = (*Store)(nil)

// archiveTable reads one kind for the archive: the table's rows in key order, scanned as
// stored (no secret opened).
type archiveTable struct {
	query string
	scan  func(scanner) (any, error)
}

// as adapts a typed scan function to archiveTable's.
func as[T any](scan func(scanner) (T, error)) func(scanner) (any, error) {
	return func(r scanner) (any, error) { return scan(r) }
}

func table(name, cols, key string, scan func(scanner) (any, error)) archiveTable {
	return archiveTable{query: `SELECT ` + cols + ` FROM ` + name + ` ORDER BY ` + key, scan: scan}
}

// archiveTables is every archived kind: one line per table.
var archiveTables = map[string]archiveTable{
	storage.KindAccounts:         table("accounts", accountCols, "id", as(scanStoredAccount)),
	storage.KindAccountTokens:    table("account_tokens", "hash, account_id, purpose, expires_at, created_at", "hash", as(scanAccountToken)),
	storage.KindAPIKeys:          table("api_keys", apiKeyCols, "id", as(scanAPIKey)),
	storage.KindRevocations:      table("token_revocations", "id, expires_at", "id", as(scanRevocation)),
	storage.KindApps:             table("apps", appCols, "id", as(scanApp)),
	storage.KindUsers:            table("app_users", userCols, "id", as(scanUser)),
	storage.KindLicenses:         table("licenses", licenseCols, "id", as(scanLicense)),
	storage.KindDevices:          table("devices", deviceCols, "id", as(scanDevice)),
	storage.KindAppTokens:        table("app_tokens", tokenCols, "id", as(scanAppToken)),
	storage.KindVariables:        table("variables", variableCols, "id", as(scanVariable)),
	storage.KindFiles:            table("files", fileCols, "id", as(scanFile)),
	storage.KindRules:            table("rules", ruleCols, "id", as(scanRule)),
	storage.KindWSHooks:          table("ws_hooks", wsHookCols, "id", as(scanWSHook)),
	storage.KindIntegrations:     table("integrations", integrationCols, "id", as(scanStoredIntegration)),
	storage.KindDeliveries:       table("webhook_deliveries", deliveryCols, "id", as(scanDelivery)),
	storage.KindDeliveryHistory:  table("webhook_history", deliveryCols, "id", as(scanDelivery)),
	storage.KindDeliveryAttempts: table("webhook_attempts", attemptCols, "id", as(scanAttempt)),
	storage.KindClientSessions:   table("client_sessions", clientSessionCols, "token_hash", as(scanClientSession)),
	storage.KindLogs:             table("logs", logCols, "id", as(scanLog)),
	storage.KindLogPurges:        table("log_purges", logPurgeCols, "id", as(scanLogPurge)),
	storage.KindAudit:            table("audit_log", auditCols, "id", as(scanAudit)),
	storage.KindEvents:           table("events", "pos, id, app_id, seq, type, payload, created_at", "pos", as(scanEvent)),
	storage.KindEventCursors:     table("event_cursors", "consumer, pos", "consumer", as(scanEventCursor)),
	storage.KindOwnerSessions:    table("owner_sessions", ownerSessionCols, "id", as(func(r scanner) (storage.OwnerSession, error) { return scanOwnerSession(r) })),
	storage.KindRecoveryCodes:    table("recovery_codes", "account_id, hash, created_at", "account_id, hash", as(scanRecoveryCode)),
	storage.KindPasskeys:         table("passkeys", passkeyCols, "id", as(scanPasskey)),
	storage.KindStoreConnections: table("store_connections", "doc", "id", as(scanDoc[storage.StoreConnection])),
	storage.KindStoreProducts:    table("store_products", "doc", "id", as(scanDoc[storage.StoreProduct])),
	storage.KindOrders:           table("store_orders", "doc", "id", as(scanDoc[storage.Order])),
	storage.KindOrderEvents:      table("store_order_events", "doc", "id", as(scanDoc[storage.OrderEvent])),
}

// ArchiveTables implements storage.ArchiveStore.
func (s *Store) ArchiveTables() map[string]string {
	return map[string]string{
		"accounts": storage.KindAccounts, "account_tokens": storage.KindAccountTokens, "api_keys": storage.KindAPIKeys,
		"token_revocations": storage.KindRevocations, "apps": storage.KindApps, "app_users": storage.KindUsers,
		"licenses": storage.KindLicenses, "devices": storage.KindDevices, "app_tokens": storage.KindAppTokens,
		"variables": storage.KindVariables, "files": storage.KindFiles, "rules": storage.KindRules,
		"ws_hooks": storage.KindWSHooks, "integrations": storage.KindIntegrations,
		"webhook_deliveries": storage.KindDeliveries, "webhook_history": storage.KindDeliveryHistory,
		"webhook_attempts": storage.KindDeliveryAttempts,
		"client_sessions":  storage.KindClientSessions, "logs": storage.KindLogs, "log_purges": storage.KindLogPurges, "audit_log": storage.KindAudit,
		"events": storage.KindEvents, "event_cursors": storage.KindEventCursors,
		"owner_sessions": storage.KindOwnerSessions, "recovery_codes": storage.KindRecoveryCodes,
		"passkeys": storage.KindPasskeys, "webauthn_challenges": "- ceremony challenges of a few minutes, begun again after a restore",
		"store_connections": storage.KindStoreConnections, "store_products": storage.KindStoreProducts,
		"store_orders": storage.KindOrders, "store_order_events": storage.KindOrderEvents,
		"schema_migrations": "- the schema's own history, written by Open",
		"audit_parts":       "- parts of a bulk request's audit entry, merged into audit_log when the request ends (see auditparts.go)",
		"sqlite_sequence":   "- SQLite's AUTOINCREMENT counters, rebuilt from the events restored",
	}
}

// ArchiveRecords implements storage.ArchiveStore. The rows are read in one read
// transaction, so each kind is one snapshot.
func (s *Store) ArchiveRecords(ctx context.Context, kind string, emit func(any) error) error {
	t, ok := archiveTables[kind]
	if !ok {
		return fmt.Errorf("sqlite: archive: unknown record kind %q", kind)
	}
	op := "archive " + kind
	return s.inReadTx(ctx, op, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, t.query)
		if err != nil {
			return wrap(op, err)
		}
		defer rows.Close()
		for rows.Next() {
			rec, err := t.scan(rows)
			if err != nil {
				return wrap(op, err)
			}
			if err := emit(rec); err != nil {
				return err
			}
		}
		if err := rows.Err(); err != nil {
			return wrap(op, err)
		}
		return nil
	})
}

func scanAccountToken(r scanner) (storage.AccountToken, error) {
	var t storage.AccountToken
	err := r.Scan(&t.Hash, &t.AccountID, &t.Purpose, timeCol{&t.ExpiresAt}, timeCol{&t.CreatedAt})
	return t, err
}

func scanRevocation(r scanner) (storage.Revocation, error) {
	var v storage.Revocation
	err := r.Scan(&v.ID, timeCol{&v.ExpiresAt})
	return v, err
}

func scanEvent(r scanner) (storage.EventRecord, error) {
	var e storage.EventRecord
	err := r.Scan(&e.Pos, &e.ID, &e.AppID, &e.Seq, &e.Type, &e.Payload, timeCol{&e.At})
	return e, err
}

func scanEventCursor(r scanner) (storage.EventCursor, error) {
	var c storage.EventCursor
	err := r.Scan(&c.Consumer, &c.Pos)
	return c, err
}

func scanRecoveryCode(r scanner) (storage.RecoveryCode, error) {
	var c storage.RecoveryCode
	err := r.Scan(&c.AccountID, &c.Hash, timeCol{&c.CreatedAt})
	return c, err
}

// RestoreRecoveryCodes implements storage.ArchiveStore: the codes go in as they are, a
// missing account refused by the foreign key as ErrNotFound.
func (s *Store) RestoreRecoveryCodes(ctx context.Context, codes []storage.RecoveryCode) error {
	rows := make([][]any, len(codes))
	for i, c := range codes {
		rows[i] = []any{c.AccountID, c.Hash, toMillis(c.CreatedAt)}
	}
	return s.insertAll(ctx, "restore recovery codes", `INSERT INTO recovery_codes (account_id, hash, created_at) VALUES (?, ?, ?)`, rows)
}

// RestoreAudit implements storage.ArchiveStore: the entries go in as they are.
func (s *Store) RestoreAudit(ctx context.Context, entries []storage.AuditEntry) error {
	rows := make([][]any, len(entries))
	for i, e := range entries {
		rows[i] = []any{e.ID, e.AccountID, e.AppID, e.ActorType, e.ActorID, e.ActorName, e.IP, e.Method,
			e.Route, e.Path, e.RecordType, e.RecordID, e.Status, e.Before, e.After, toMillis(e.CreatedAt), e.Seq, e.PrevHash, e.Hash}
	}
	return s.insertAll(ctx, "restore audit", `INSERT INTO audit_log (`+auditCols+`) VALUES (`+placeholders(19)+`)`, rows)
}

// RestoreEvents implements storage.ArchiveStore: positions and seqs are kept, and the
// AUTOINCREMENT counter follows the largest position inserted.
func (s *Store) RestoreEvents(ctx context.Context, evs []storage.EventRecord) error {
	rows := make([][]any, len(evs))
	for i, e := range evs {
		payload := e.Payload
		if payload == nil {
			payload = []byte{}
		}
		rows[i] = []any{e.Pos, e.ID, e.AppID, e.Seq, e.Type, payload, toMillis(e.At)}
	}
	return s.insertAll(ctx, "restore events", `INSERT INTO events (pos, id, app_id, seq, type, payload, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)`, rows)
}

// SchemaVersion implements storage.ArchiveStore: the last migration applied.
func (s *Store) SchemaVersion(ctx context.Context) (int, error) {
	var v sql.NullInt64
	if err := s.r.QueryRowContext(ctx, `SELECT max(version) FROM schema_migrations`).Scan(&v); err != nil {
		return 0, wrap("schema version", err)
	}
	return int(v.Int64), nil
}

// LatestSchemaVersion is the schema version this build migrates to.
func LatestSchemaVersion() int { return migrations[len(migrations)-1].version }

// Snapshot writes a consistent copy of the database to path (which must not exist) with
// VACUUM INTO on a connection of its own, while the server keeps writing: the copy is the
// database as of one read transaction, compacted, with no -wal file to carry.
func (s *Store) Snapshot(ctx context.Context, path string) error {
	// Not a reader of the pool: those are query_only, which VACUUM INTO refuses.
	db, err := sql.Open("sqlite", s.path+"?_busy_timeout="+fmt.Sprint(busyTimeout.Milliseconds()))
	if err != nil {
		return wrap("snapshot", err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(ctx, `VACUUM INTO ?`, path); err != nil {
		return wrap("snapshot to "+path, err)
	}
	return nil
}
