package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/keyward/keyward/storage"
)

var _ storage.LicenseStore = (*Store)(nil)

// licenseCols is the column order of scanLicense.
const licenseCols = `id, app_id, key, level, max_uses, used_count, duration, expires_at, note, used_by,
	device_limit, display_name, enabled, banned, discord_id, activated_at, max_seats, created_at, updated_at`

// licenseSet assigns every mutable column, in the order of licenseSetArgs.
const licenseSet = `key = ?, key_lower = ?, level = ?, max_uses = ?, used_count = ?, duration = ?,
	expires_at = ?, note = ?, note_lower = ?, used_by = ?, used_by_lower = ?, device_limit = ?,
	display_name = ?, enabled = ?, banned = ?, discord_id = ?, activated_at = ?, max_seats = ?, updated_at = ?`

func licenseSetArgs(l storage.License) []any {
	return []any{l.Key, strings.ToLower(l.Key), l.Level, l.MaxUses, l.UsedCount, l.Duration,
		toMillis(l.ExpiresAt), l.Note, strings.ToLower(l.Note), l.UsedBy, strings.ToLower(l.UsedBy), l.DeviceLimit,
		l.DisplayName, l.Enabled, l.Banned, l.DiscordID, toMillis(l.ActivatedAt), l.MaxSeats, toMillis(l.UpdatedAt)}
}

func scanLicense(row scanner) (storage.License, error) {
	var l storage.License
	err := row.Scan(&l.ID, &l.AppID, &l.Key, &l.Level, &l.MaxUses, &l.UsedCount, &l.Duration, timeCol{&l.ExpiresAt},
		&l.Note, &l.UsedBy, &l.DeviceLimit, &l.DisplayName, &l.Enabled, &l.Banned, &l.DiscordID,
		timeCol{&l.ActivatedAt}, &l.MaxSeats, timeCol{&l.CreatedAt}, timeCol{&l.UpdatedAt})
	return l, err
}

func normalizeLicense(l *storage.License) {
	for _, t := range []*time.Time{&l.ExpiresAt, &l.ActivatedAt, &l.CreatedAt, &l.UpdatedAt} {
		*t = storage.Truncate(*t)
	}
}

// CreateLicenses inserts every license with one prepared statement in one transaction, so
// a taken key (ErrConflict) or an unknown app (ErrNotFound) leaves none of them inserted.
func (s *Store) CreateLicenses(ctx context.Context, ls []storage.License) error {
	rows := make([][]any, len(ls))
	for i, l := range ls {
		rows[i] = append([]any{l.ID, l.AppID, toMillis(l.CreatedAt)}, licenseSetArgs(l)...)
	}
	return s.insertAll(ctx, "create licenses", `INSERT INTO licenses (id, app_id, created_at,
	key, key_lower, level, max_uses, used_count, duration, expires_at, note, note_lower,
	used_by, used_by_lower, device_limit, display_name, enabled, banned, discord_id, activated_at, max_seats, updated_at)
VALUES (`+placeholders(22)+`)`, rows)
}

func (s *Store) getLicenseWhere(ctx context.Context, op, cond string, args ...any) (storage.License, error) {
	l, err := scanLicense(s.r.QueryRowContext(ctx, `SELECT `+licenseCols+` FROM licenses WHERE `+cond, args...))
	if err != nil {
		return storage.License{}, wrap(op, err)
	}
	return l, nil
}

// GetLicense reads the app's license by id.
func (s *Store) GetLicense(ctx context.Context, appID, id string) (storage.License, error) {
	return s.getLicenseWhere(ctx, "get license", `app_id = ? AND id = ?`, appID, id)
}

// GetLicenseByKey finds the app's license with exactly this key.
func (s *Store) GetLicenseByKey(ctx context.Context, appID, key string) (storage.License, error) {
	return s.getLicenseWhere(ctx, "get license by key", `app_id = ? AND key = ?`, appID, key)
}

var licenseSortCols = map[string]string{
	"":                           "created_at",
	storage.LicenseSortCreatedAt: "created_at",
	storage.LicenseSortKey:       "key",
	storage.LicenseSortExpiresAt: "expires_at",
	storage.LicenseSortUsedCount: "used_count",
}

// ListLicenses answers one page of the app's licenses matching q, and their total.
func (s *Store) ListLicenses(ctx context.Context, appID string, q storage.LicenseQuery) ([]storage.License, int, error) {
	col, ok := licenseSortCols[q.SortBy]
	if !ok {
		return nil, 0, fmt.Errorf("sqlite: list licenses: unknown sort %q", q.SortBy)
	}
	var w where
	w.add("app_id = ?", appID)
	w.search(q.Search, "key_lower", "used_by_lower", "note_lower")
	if q.Used != nil {
		if *q.Used {
			w.add("used_count > 0")
		} else {
			w.add("used_count = 0")
		}
	}
	if q.Banned != nil {
		w.add("banned = ?", *q.Banned)
	}
	if q.Expired {
		w.add("expires_at <> 0 AND expires_at <= ?", q.Now.UnixMilli())
	}
	return listPage(ctx, s, "list licenses", "licenses", licenseCols, w, orderBy(col, q.Desc), q.Page, scanLicense)
}

// CountLicenses counts the app's licenses.
func (s *Store) CountLicenses(ctx context.Context, appID string) (int, error) {
	return s.countWhere(ctx, "count licenses", "licenses", "app_id = ?", appID)
}

// UpdateLicense applies fn to the app's license in one write transaction (see
// updateRecord). The id, the app and the creation time are kept.
func (s *Store) UpdateLicense(ctx context.Context, appID, id string, fn func(*storage.License) error) (storage.License, error) {
	return updateRecord(ctx, s, "update license",
		func(tx *sql.Tx) (storage.License, error) {
			return scanLicense(tx.QueryRowContext(ctx, `SELECT `+licenseCols+` FROM licenses WHERE app_id = ? AND id = ?`, appID, id))
		},
		fn,
		func(cur storage.License, next *storage.License) {
			next.ID, next.AppID, next.CreatedAt = cur.ID, cur.AppID, cur.CreatedAt
			normalizeLicense(next)
		},
		func(tx *sql.Tx, next storage.License) error {
			_, err := tx.ExecContext(ctx, `UPDATE licenses SET `+licenseSet+` WHERE id = ?`, append(licenseSetArgs(next), next.ID)...)
			return err
		})
}

// DeleteLicense removes the app's license and its variables in one transaction.
func (s *Store) DeleteLicense(ctx context.Context, appID, id string) error {
	const op = "delete license"
	return s.inWriteTx(ctx, op, func(tx *sql.Tx) error {
		n, err := execCount(ctx, tx, `DELETE FROM licenses WHERE app_id = ? AND id = ?`, appID, id)
		if err != nil {
			return wrap(op, err)
		}
		if n == 0 {
			return wrap(op, sql.ErrNoRows)
		}
		if err := deleteOwnedVariables(ctx, tx, appID, storage.ScopeLicense, id); err != nil {
			return wrap(op+": variables", err)
		}
		return nil
	})
}

// deleteChunk bounds the ids bound to one DELETE, well below SQLite's limit on variables.
const deleteChunk = 500

// DeleteLicenses removes the app's licenses with these ids, and their variables, in one
// transaction; unknown ids and other apps' licenses are left alone.
func (s *Store) DeleteLicenses(ctx context.Context, appID string, ids []string) (int, error) {
	const op = "delete licenses"
	total := 0
	err := s.inWriteTx(ctx, op, func(tx *sql.Tx) error {
		total = 0
		for chunk := range slices.Chunk(ids, deleteChunk) {
			args := make([]any, 0, len(chunk)+1)
			args = append(args, appID)
			for _, id := range chunk {
				args = append(args, id)
			}
			n, err := execCount(ctx, tx, `DELETE FROM licenses WHERE app_id = ? AND id IN (`+placeholders(len(chunk))+`)`, args...)
			if err != nil {
				return wrap(op, err)
			}
			total += n
			// The app has no license with any of these ids now, so variables naming them
			// as owner are the deleted licenses'.
			if err := deleteOwnedVariables(ctx, tx, appID, storage.ScopeLicense, chunk...); err != nil {
				return wrap(op+": variables", err)
			}
		}
		storage.OutboxCounted(ctx, total) // a bulk change's events name its count
		return nil
	})
	if err != nil {
		return 0, err
	}
	return total, nil
}

// DeleteLicensesWhere removes the app's licenses matching a LicenseFilter*, and their
// variables, in one transaction.
func (s *Store) DeleteLicensesWhere(ctx context.Context, appID, filter string, now time.Time) (int, error) {
	var (
		cond string
		args = []any{appID}
	)
	switch filter {
	case storage.LicenseFilterUsed:
		cond = "used_count > 0"
	case storage.LicenseFilterBanned:
		cond = "banned"
	case storage.LicenseFilterExpired:
		cond, args = "expires_at <> 0 AND expires_at <= ?", append(args, now.UnixMilli())
	default:
		return 0, fmt.Errorf("sqlite: delete licenses: unknown filter %q", filter)
	}
	op := "delete licenses where " + filter
	n := 0
	err := s.inWriteTx(ctx, op, func(tx *sql.Tx) error {
		// The variables first, while the licenses they belong to can still be selected.
		if _, err := tx.ExecContext(ctx, `DELETE FROM variables WHERE app_id = ? AND scope = ? AND owner_id IN
	(SELECT id FROM licenses WHERE app_id = ? AND `+cond+`)`, append([]any{appID, storage.ScopeLicense}, args...)...); err != nil {
			return wrap(op+": variables", err)
		}
		var err error
		if n, err = execCount(ctx, tx, `DELETE FROM licenses WHERE app_id = ? AND `+cond, args...); err != nil {
			return wrap(op, err)
		}
		storage.OutboxCounted(ctx, n) // a bulk change's events name its count
		return nil
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}
