package sqlite

import (
	"context"
	"database/sql"
	"strings"

	"github.com/keyward/keyward/storage"
)

var (
	_ storage.AppStore      = (*Store)(nil)
	_ storage.AppStatsStore = (*Store)(nil)
)

// appCols is the column order of scanApp.
const appCols = `id, account_id, name, description, version, enabled, paused, anti_debug, anti_vm,
	lock_hwid, lock_ip, lock_pc_name, secret_hash, secret_last6, session_timeout, plain_files, signing_key, sign_responses, grace_seconds,
	license_file_days, portal_enabled, portal_hwid_reset, portal_seat_release, portal_downloads, portal_resend,
	created_at, updated_at`

// appSet assigns every mutable column, in the order of appSetArgs.
const appSet = `name = ?, name_lower = ?, description = ?, version = ?, enabled = ?, paused = ?,
	anti_debug = ?, anti_vm = ?, lock_hwid = ?, lock_ip = ?, lock_pc_name = ?,
	secret_hash = ?, secret_last6 = ?, session_timeout = ?, plain_files = ?, signing_key = ?, sign_responses = ?,
	grace_seconds = ?, license_file_days = ?, portal_enabled = ?, portal_hwid_reset = ?, portal_seat_release = ?,
	portal_downloads = ?, portal_resend = ?, updated_at = ?`

func appSetArgs(a storage.App) []any {
	return []any{a.Name, strings.ToLower(a.Name), a.Description, a.Version, a.Enabled, a.Paused,
		a.AntiDebug, a.AntiVM, a.LockHwid, a.LockIP, a.LockPcName,
		a.SecretHash, a.SecretLast6, a.SessionTimeout, a.PlainFiles, a.SigningKey, a.SignResponses,
		a.GraceSeconds, a.LicenseFileDays, a.Portal.Enabled, a.Portal.HWIDReset, a.Portal.SeatRelease,
		a.Portal.Downloads, a.Portal.Resend, toMillis(a.UpdatedAt)}
}

func scanApp(row scanner) (storage.App, error) {
	var a storage.App
	err := row.Scan(&a.ID, &a.AccountID, &a.Name, &a.Description, &a.Version, &a.Enabled, &a.Paused,
		&a.AntiDebug, &a.AntiVM, &a.LockHwid, &a.LockIP, &a.LockPcName, &a.SecretHash, &a.SecretLast6,
		&a.SessionTimeout, &a.PlainFiles, &a.SigningKey, &a.SignResponses, &a.GraceSeconds, &a.LicenseFileDays,
		&a.Portal.Enabled, &a.Portal.HWIDReset, &a.Portal.SeatRelease, &a.Portal.Downloads, &a.Portal.Resend,
		timeCol{&a.CreatedAt}, timeCol{&a.UpdatedAt})
	return a, err
}

// readApp scans one app and opens its sealed signing key.
func (s *Store) readApp(op string, row scanner) (storage.App, error) {
	a, err := scanApp(row)
	if err != nil {
		return storage.App{}, wrap(op, err)
	}
	if err := storage.OpenApp(s.sealer, &a); err != nil {
		return storage.App{}, wrap(op, err)
	}
	return a, nil
}

// sealedAppArgs answers appSetArgs of a with its signing key sealed.
func (s *Store) sealedAppArgs(a storage.App) ([]any, error) {
	if err := storage.SealApp(s.sealer, &a); err != nil {
		return nil, err
	}
	return appSetArgs(a), nil
}

// CreateApp inserts a; the unique index on (account_id, name_lower) answers ErrConflict.
func (s *Store) CreateApp(ctx context.Context, a storage.App) error {
	set, err := s.sealedAppArgs(a)
	if err != nil {
		return wrap("create app", err)
	}
	args := append([]any{a.ID, a.AccountID, toMillis(a.CreatedAt)}, set...)
	// In a write transaction, so that a creation's audit entry (storage.AuditOutbox) is
	// stored with it.
	return s.inWriteTx(ctx, "create app", func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO apps (id, account_id, created_at,
	name, name_lower, description, version, enabled, paused, anti_debug, anti_vm,
	lock_hwid, lock_ip, lock_pc_name, secret_hash, secret_last6, session_timeout, plain_files,
	signing_key, sign_responses, grace_seconds, license_file_days, portal_enabled, portal_hwid_reset,
	portal_seat_release, portal_downloads, portal_resend, updated_at)
VALUES (`+placeholders(28)+`)`, args...)
		return wrapIf("create app", err)
	})
}

// GetApp reads the account's app; the account is part of the key, so another account's
// app is not found.
func (s *Store) GetApp(ctx context.Context, accountID, id string) (storage.App, error) {
	return s.readApp("get app", s.r.QueryRowContext(ctx, `SELECT `+appCols+` FROM apps WHERE id = ? AND account_id = ?`, id, accountID))
}

// GetAppBySecretHash finds the app whose current secret hashes to hash.
func (s *Store) GetAppBySecretHash(ctx context.Context, hash string) (storage.App, error) {
	// An app without a secret stores "": that must never identify anyone.
	if hash == "" {
		return storage.App{}, wrap("get app by secret", sql.ErrNoRows)
	}
	return s.readApp("get app by secret", s.r.QueryRowContext(ctx, `SELECT `+appCols+` FROM apps WHERE secret_hash = ?`, hash))
}

// GetAppByID reads an app whatever its account.
func (s *Store) GetAppByID(ctx context.Context, id string) (storage.App, error) {
	return s.readApp("get app by id", s.r.QueryRowContext(ctx, `SELECT `+appCols+` FROM apps WHERE id = ?`, id))
}

// ListApps answers every app of the account, oldest first.
func (s *Store) ListApps(ctx context.Context, accountID string) ([]storage.App, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT `+appCols+` FROM apps WHERE account_id = ? ORDER BY created_at, id`, accountID)
	if err != nil {
		return nil, wrap("list apps", err)
	}
	out, err := scanAll(rows, scanApp)
	if err != nil {
		return nil, wrap("list apps", err)
	}
	for i := range out {
		if err := storage.OpenApp(s.sealer, &out[i]); err != nil {
			return nil, wrap("list apps", err)
		}
	}
	return out, nil
}

// CountApps counts the account's apps.
func (s *Store) CountApps(ctx context.Context, accountID string) (int, error) {
	return s.countWhere(ctx, "count apps", "apps", "account_id = ?", accountID)
}

// selectAppForUpdate is UpdateApp's read.
const selectAppForUpdate = `SELECT ` + appCols + ` FROM apps WHERE id = ? AND account_id = ?`

// updateAppSQL answers UpdateApp's statement and its arguments (set: appSetArgs of the
// sealed next record, then the id). It leaves out the indexed columns whose value
// stays (name_lower, secret_hash: most updates change neither): SQLite rewrites an
// index entry for every column assigned, even to the value it holds, and each index page
// it dirties is a page more for the commit to write. The other columns are all assigned,
// as before (the sealed ones get a fresh seal).
func updateAppSQL(cur, next storage.App, set []any, id string) (string, []any) {
	keepName := strings.ToLower(cur.Name) == strings.ToLower(next.Name)
	keepSecret := cur.SecretHash == next.SecretHash
	cols := strings.Split(appSet, ",")
	assign := make([]string, 0, len(cols))
	args := make([]any, 0, len(set)+1)
	for i, c := range cols {
		c = strings.TrimSpace(c)
		if (keepName && c == "name_lower = ?") || (keepSecret && c == "secret_hash = ?") {
			continue
		}
		assign = append(assign, c)
		args = append(args, set[i])
	}
	return `UPDATE apps SET ` + strings.Join(assign, ", ") + ` WHERE id = ?`, append(args, id)
}

// UpdateApp applies fn to the account's app in one write transaction (see updateRecord).
// The id, the owning account and the creation time are kept from the stored record.
func (s *Store) UpdateApp(ctx context.Context, accountID, id string, fn func(*storage.App) error) (storage.App, error) {
	var cur storage.App // as read, for updateAppSQL
	return updateRecord(ctx, s, "update app",
		func(tx *sql.Tx) (storage.App, error) {
			a, err := scanApp(s.txStmt(ctx, tx, selectAppForUpdate).QueryRowContext(ctx, id, accountID))
			if err != nil {
				return a, err
			}
			err = storage.OpenApp(s.sealer, &a)
			cur = a
			return a, err
		},
		fn,
		func(cur storage.App, next *storage.App) {
			next.ID, next.AccountID, next.CreatedAt = cur.ID, cur.AccountID, cur.CreatedAt
			next.UpdatedAt = storage.Truncate(next.UpdatedAt)
		},
		func(tx *sql.Tx, next storage.App) error {
			set, err := s.sealedAppArgs(next)
			if err != nil {
				return err
			}
			q, args := updateAppSQL(cur, next, set, next.ID)
			_, err = tx.ExecContext(ctx, q, args...)
			return err
		})
}

// appChildTables are the tables holding records that belong to an app, children before
// parents. DeleteApp empties them explicitly, so that deleting an app never depends on
// the connection having foreign keys enabled (the ON DELETE CASCADE clauses are a second
// line of defence, not the mechanism). Every later record kind of an app (sessions,
// variables, files, rules, …) must be added here, and counted in CountAppRecords when
// SPEC 4.2 counts it (integrations and their deliveries, and WebSocket hooks, are not
// counted).
var appChildTables = []string{"client_sessions", "webhook_attempts", "webhook_deliveries", "webhook_history", "integrations",
	"ws_hooks", "variables", "files", "rules", "logs", "devices", "app_tokens", "licenses", "app_users"}

// DeleteApp removes the account's app and every record that belongs to it, in one
// transaction: either all of it goes or nothing does.
func (s *Store) DeleteApp(ctx context.Context, accountID, id string) error {
	const op = "delete app"
	return s.inWriteTx(ctx, op, func(tx *sql.Tx) error {
		// Ownership first: another account's app must keep its records.
		var one int
		if err := tx.QueryRowContext(ctx, `SELECT 1 FROM apps WHERE id = ? AND account_id = ?`, id, accountID).Scan(&one); err != nil {
			return wrap(op, err)
		}
		for _, table := range appChildTables {
			if _, err := tx.ExecContext(ctx, `DELETE FROM `+table+` WHERE app_id = ?`, id); err != nil {
				return wrap(op+": "+table, err)
			}
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM apps WHERE id = ?`, id); err != nil {
			return wrap(op, err)
		}
		return nil
	})
}

// CountAppRecords counts the app's records of each kind in one snapshot. Variables are the
// app's own (scope app), as SPEC 4.2 counts them. Sessions are left 0: the live sessions
// are the cluster engine's, and client_sessions holds only their lazily written copies
// (expired ones included), so the caller counts them there.
func (s *Store) CountAppRecords(ctx context.Context, appID string) (storage.AppCounts, error) {
	var c storage.AppCounts
	err := s.inReadTx(ctx, "count app records", func(tx *sql.Tx) error {
		err := tx.QueryRowContext(ctx, `SELECT
	(SELECT count(*) FROM app_users WHERE app_id = ?1),
	(SELECT count(*) FROM licenses WHERE app_id = ?1),
	(SELECT count(*) FROM app_tokens WHERE app_id = ?1),
	(SELECT count(*) FROM variables WHERE app_id = ?1 AND scope = ?2 AND owner_id = ''),
	(SELECT count(*) FROM files WHERE app_id = ?1),
	(SELECT count(*) FROM rules WHERE app_id = ?1)`, appID, storage.ScopeApp).
			Scan(&c.Users, &c.Licenses, &c.Tokens, &c.Variables, &c.Files, &c.Rules)
		if err != nil {
			return wrap("count app records", err)
		}
		return nil
	})
	return c, err
}

// AppStats computes the figures with two aggregate queries (users, licenses) in one
// snapshot: rows are counted by SQLite, never loaded.
func (s *Store) AppStats(ctx context.Context, appID string, q storage.AppStatsQuery) (storage.AppStats, error) {
	const op = "app stats"
	var st storage.AppStats
	err := s.inReadTx(ctx, op, func(tx *sql.Tx) error {
		// A zero last_login_at means never: it must not count as a login at or after an
		// instant, even a zero one.
		err := tx.QueryRowContext(ctx, `SELECT count(*),
	count(*) FILTER (WHERE enabled AND NOT banned AND (expires_at = 0 OR expires_at > ?2)),
	count(*) FILTER (WHERE banned),
	count(*) FILTER (WHERE last_login_at <> 0 AND last_login_at >= ?3),
	count(*) FILTER (WHERE last_login_at <> 0 AND last_login_at >= ?4),
	count(*) FILTER (WHERE ?5 <> 0 AND created_at >= ?5)
FROM app_users WHERE app_id = ?1`, appID, q.Now.UnixMilli(), toMillis(q.DayStart), toMillis(q.WeekStart), toMillis(q.NewSince)).
			Scan(&st.Users, &st.ActiveUsers, &st.BannedUsers, &st.LoginsSinceDay, &st.LoginsSinceWeek, &st.NewUsers)
		if err != nil {
			return wrap(op+": users", err)
		}
		err = tx.QueryRowContext(ctx, `SELECT count(*), count(*) FILTER (WHERE used_count > 0)
FROM licenses WHERE app_id = ?`, appID).Scan(&st.Licenses, &st.UsedLicenses)
		if err != nil {
			return wrap(op+": licenses", err)
		}
		return nil
	})
	return st, err
}
