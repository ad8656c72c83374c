package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/keyward/keyward/storage"
)

var (
	_ storage.DeviceStore = (*Store)(nil)
	_ storage.TokenStore  = (*Store)(nil)
)

// deviceCols is the column order of scanDevice.
const deviceCols = `id, app_id, user_id, username, hwid, pc_name, ip, created_at, last_seen_at`

func scanDevice(row scanner) (storage.Device, error) {
	var d storage.Device
	err := row.Scan(&d.ID, &d.AppID, &d.UserID, &d.Username, &d.HWID, &d.PCName, &d.IP,
		timeCol{&d.CreatedAt}, timeCol{&d.LastSeenAt})
	return d, err
}

// CreateDevice inserts d. The unique index on (user_id, hwid) answers ErrConflict; the
// foreign key on (app_id, user_id) answers ErrNotFound when the app has no such user.
func (s *Store) CreateDevice(ctx context.Context, d storage.Device) error {
	return s.insertAll(ctx, "create device", createDevice(), [][]any{deviceRow(d)})
}

// createDevice inserts a device; its arguments are deviceRow's.
func createDevice() string {
	return `INSERT INTO devices (id, app_id, user_id, username, username_lower,
	hwid, hwid_lower, pc_name, ip, created_at, last_seen_at)
VALUES (` + placeholders(11) + `)`
}

func deviceRow(d storage.Device) []any {
	return []any{d.ID, d.AppID, d.UserID, d.Username, strings.ToLower(d.Username),
		d.HWID, strings.ToLower(d.HWID), d.PCName, d.IP, toMillis(d.CreatedAt), toMillis(d.LastSeenAt)}
}

// CreateDeviceWithin inserts the device when storage.RoomForDevice allows it, judged on
// the user's devices read in the insert's write transaction: SQLite's one writer makes
// the count and the insert one step.
func (s *Store) CreateDeviceWithin(ctx context.Context, d storage.Device, limit int, bound string) error {
	const op = "create device within limit"
	return s.insertChecked(ctx, op, createDevice(), [][]any{deviceRow(d)}, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT hwid FROM devices WHERE app_id = ? AND user_id = ?`, d.AppID, d.UserID)
		if err != nil {
			return wrap(op+": read the user's devices", err)
		}
		hwids, err := scanAll(rows, func(row scanner) (string, error) {
			var h string
			return h, row.Scan(&h)
		})
		if err != nil {
			return wrap(op+": read the user's devices", err)
		}
		if err := storage.RoomForDevice(hwids, d.HWID, limit, bound); err != nil {
			return fmt.Errorf("sqlite: %s: %w", op, err)
		}
		return nil
	})
}

// ListDevices answers one page of the app's devices, newest first, and their total.
func (s *Store) ListDevices(ctx context.Context, appID string, q storage.DeviceQuery) ([]storage.Device, int, error) {
	var w where
	w.add("app_id = ?", appID)
	if q.UserID != "" {
		w.add("user_id = ?", q.UserID)
	}
	w.search(q.Search, "hwid_lower", "username_lower")
	return listPage(ctx, s, "list devices", "devices", deviceCols, w, orderBy("created_at", true), q.Page, scanDevice)
}

// DeleteDevice removes the app's device and answers it.
func (s *Store) DeleteDevice(ctx context.Context, appID, id string) (storage.Device, error) {
	d, err := scanDevice(s.w.QueryRowContext(ctx, `DELETE FROM devices WHERE app_id = ? AND id = ? RETURNING `+deviceCols, appID, id))
	if err != nil {
		return storage.Device{}, wrap("delete device", err)
	}
	return d, nil
}

// DeleteUserDevices removes every device of the app's user.
func (s *Store) DeleteUserDevices(ctx context.Context, appID, userID string) (int, error) {
	const op = "delete user devices"
	const query = `DELETE FROM devices WHERE app_id = ? AND user_id = ?`
	if storage.EventOutboxFrom(ctx) != nil {
		// The change's events (an HWID reset's, which names the devices removed) go in
		// its transaction.
		var n int
		err := s.inWriteTx(ctx, op, func(tx *sql.Tx) error {
			var err error
			if n, err = execCount(ctx, tx, query, appID, userID); err != nil {
				return wrap(op, err)
			}
			storage.OutboxCounted(ctx, n)
			return nil
		})
		return n, err
	}
	n, err := execCount(ctx, s.w, query, appID, userID)
	if err != nil {
		return 0, wrap(op, err)
	}
	return n, nil
}

// tokenCols is the column order of scanAppToken.
const tokenCols = `id, app_id, value, level, max_uses, used_count, expires_at, note, enabled, created_at, updated_at`

const tokenSet = `value = ?, level = ?, max_uses = ?, used_count = ?, expires_at = ?, note = ?, enabled = ?, updated_at = ?`

func tokenSetArgs(t storage.Token) []any {
	return []any{t.Value, t.Level, t.MaxUses, t.UsedCount, toMillis(t.ExpiresAt), t.Note, t.Enabled, toMillis(t.UpdatedAt)}
}

func scanAppToken(row scanner) (storage.Token, error) {
	var t storage.Token
	err := row.Scan(&t.ID, &t.AppID, &t.Value, &t.Level, &t.MaxUses, &t.UsedCount, timeCol{&t.ExpiresAt},
		&t.Note, &t.Enabled, timeCol{&t.CreatedAt}, timeCol{&t.UpdatedAt})
	return t, err
}

// CreateTokens inserts every token with one prepared statement in one transaction, so a
// taken value (ErrConflict) or an unknown app (ErrNotFound) leaves none inserted.
func (s *Store) CreateTokens(ctx context.Context, ts []storage.Token) error {
	rows := make([][]any, len(ts))
	for i, t := range ts {
		rows[i] = append([]any{t.ID, t.AppID, toMillis(t.CreatedAt)}, tokenSetArgs(t)...)
	}
	return s.insertAll(ctx, "create tokens", `INSERT INTO app_tokens (id, app_id, created_at,
	value, level, max_uses, used_count, expires_at, note, enabled, updated_at)
VALUES (`+placeholders(11)+`)`, rows)
}

func (s *Store) getTokenWhere(ctx context.Context, op, cond string, args ...any) (storage.Token, error) {
	t, err := scanAppToken(s.r.QueryRowContext(ctx, `SELECT `+tokenCols+` FROM app_tokens WHERE `+cond, args...))
	if err != nil {
		return storage.Token{}, wrap(op, err)
	}
	return t, nil
}

// GetToken reads the app's token by id.
func (s *Store) GetToken(ctx context.Context, appID, id string) (storage.Token, error) {
	return s.getTokenWhere(ctx, "get token", `app_id = ? AND id = ?`, appID, id)
}

// GetTokenByValue finds the app's token with exactly this value.
func (s *Store) GetTokenByValue(ctx context.Context, appID, value string) (storage.Token, error) {
	return s.getTokenWhere(ctx, "get token by value", `app_id = ? AND value = ?`, appID, value)
}

// ListTokens answers one page of the app's tokens, newest first, and their total.
func (s *Store) ListTokens(ctx context.Context, appID string, p storage.Page) ([]storage.Token, int, error) {
	var w where
	w.add("app_id = ?", appID)
	return listPage(ctx, s, "list tokens", "app_tokens", tokenCols, w, orderBy("created_at", true), p, scanAppToken)
}

// UpdateToken applies fn to the app's token in one write transaction (see updateRecord):
// concurrent validations are serialised by the single writer, so a use counted against
// MaxUses is never lost.
func (s *Store) UpdateToken(ctx context.Context, appID, id string, fn func(*storage.Token) error) (storage.Token, error) {
	return updateRecord(ctx, s, "update token",
		func(tx *sql.Tx) (storage.Token, error) {
			return scanAppToken(tx.QueryRowContext(ctx, `SELECT `+tokenCols+` FROM app_tokens WHERE app_id = ? AND id = ?`, appID, id))
		},
		fn,
		func(cur storage.Token, next *storage.Token) {
			next.ID, next.AppID, next.CreatedAt = cur.ID, cur.AppID, cur.CreatedAt
			for _, t := range []*time.Time{&next.ExpiresAt, &next.UpdatedAt} {
				*t = storage.Truncate(*t)
			}
		},
		func(tx *sql.Tx, next storage.Token) error {
			_, err := tx.ExecContext(ctx, `UPDATE app_tokens SET `+tokenSet+` WHERE id = ?`, append(tokenSetArgs(next), next.ID)...)
			return err
		})
}

// DeleteToken removes the app's token.
func (s *Store) DeleteToken(ctx context.Context, appID, id string) error {
	return s.deleteOne(ctx, "delete token", `DELETE FROM app_tokens WHERE app_id = ? AND id = ?`, appID, id)
}
