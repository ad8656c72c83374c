package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/keyward/keyward/storage"
)

var _ storage.UserStore = (*Store)(nil)

// userCols is the column order of scanUser.
const userCols = `id, app_id, username, password_hash, email, level, expires_at, device_limit, metadata,
	enabled, banned, ban_reason, hwid, display_name, pc_name, locked_ip, last_login_ip,
	hwid_reset_max, hwid_reset_cooldown, ip_reset_max, ip_reset_cooldown,
	hwid_resets, last_hwid_reset_at, ip_resets, last_ip_reset_at, license_id, discord_id,
	last_login_at, created_at, updated_at`

// userSet assigns every mutable column, in the order of userSetArgs.
const userSet = `username = ?, username_lower = ?, password_hash = ?, email = ?, email_lower = ?,
	level = ?, expires_at = ?, device_limit = ?, metadata = ?, enabled = ?, banned = ?, ban_reason = ?,
	hwid = ?, display_name = ?, pc_name = ?, locked_ip = ?, last_login_ip = ?,
	hwid_reset_max = ?, hwid_reset_cooldown = ?, ip_reset_max = ?, ip_reset_cooldown = ?,
	hwid_resets = ?, last_hwid_reset_at = ?, ip_resets = ?, last_ip_reset_at = ?,
	license_id = ?, discord_id = ?, last_login_at = ?, updated_at = ?`

func userSetArgs(u storage.AppUser) []any {
	return []any{u.Username, strings.ToLower(u.Username), u.PasswordHash, u.Email, strings.ToLower(u.Email),
		u.Level, toMillis(u.ExpiresAt), u.DeviceLimit, u.Metadata, u.Enabled, u.Banned, u.BanReason,
		u.HWID, u.DisplayName, u.PCName, u.LockedIP, u.LastLoginIP,
		u.HwidResetMax, u.HwidResetCooldown, u.IPResetMax, u.IPResetCooldown,
		u.HwidResets, toMillis(u.LastHwidResetAt), u.IPResets, toMillis(u.LastIPResetAt),
		u.LicenseID, u.DiscordID, toMillis(u.LastLoginAt), toMillis(u.UpdatedAt)}
}

func scanUser(row scanner) (storage.AppUser, error) {
	var u storage.AppUser
	err := row.Scan(&u.ID, &u.AppID, &u.Username, &u.PasswordHash, &u.Email, &u.Level, timeCol{&u.ExpiresAt},
		&u.DeviceLimit, &u.Metadata, &u.Enabled, &u.Banned, &u.BanReason, &u.HWID, &u.DisplayName, &u.PCName,
		&u.LockedIP, &u.LastLoginIP, &u.HwidResetMax, &u.HwidResetCooldown, &u.IPResetMax, &u.IPResetCooldown,
		&u.HwidResets, timeCol{&u.LastHwidResetAt}, &u.IPResets, timeCol{&u.LastIPResetAt}, &u.LicenseID,
		&u.DiscordID, timeCol{&u.LastLoginAt}, timeCol{&u.CreatedAt}, timeCol{&u.UpdatedAt})
	return u, err
}

// normalizeUser brings u's times to what the columns keep, so the value UpdateUser returns
// equals what a later read answers.
func normalizeUser(u *storage.AppUser) {
	for _, t := range []*time.Time{&u.ExpiresAt, &u.LastHwidResetAt, &u.LastIPResetAt, &u.LastLoginAt, &u.CreatedAt, &u.UpdatedAt} {
		*t = storage.Truncate(*t)
	}
}

// CreateUser inserts u. The unique index on (app_id, username_lower) answers ErrConflict;
// the foreign key answers ErrNotFound when the app does not exist.
func (s *Store) CreateUser(ctx context.Context, u storage.AppUser) error {
	return s.CreateUsers(ctx, []storage.AppUser{u})
}

// CreateUsers inserts every user in one transaction, all or none (see insertAll).
func (s *Store) CreateUsers(ctx context.Context, us []storage.AppUser) error {
	rows := make([][]any, len(us))
	for i, u := range us {
		rows[i] = append([]any{u.ID, u.AppID, toMillis(u.CreatedAt)}, userSetArgs(u)...)
	}
	op := "create user"
	if len(us) != 1 {
		op = "create users"
	}
	return s.insertAll(ctx, op, `INSERT INTO app_users (id, app_id, created_at,
	username, username_lower, password_hash, email, email_lower,
	level, expires_at, device_limit, metadata, enabled, banned, ban_reason,
	hwid, display_name, pc_name, locked_ip, last_login_ip,
	hwid_reset_max, hwid_reset_cooldown, ip_reset_max, ip_reset_cooldown,
	hwid_resets, last_hwid_reset_at, ip_resets, last_ip_reset_at,
	license_id, discord_id, last_login_at, updated_at)
VALUES (`+placeholders(32)+`)`, rows)
}

func (s *Store) getUserWhere(ctx context.Context, op, cond string, args ...any) (storage.AppUser, error) {
	// cond is one of a few fixed texts: the read is prepared once.
	u, err := scanUser(s.readRow(ctx, `SELECT `+userCols+` FROM app_users WHERE `+cond, args...))
	if err != nil {
		return storage.AppUser{}, wrap(op, err)
	}
	return u, nil
}

// GetUser reads the app's user by id; a user of another app is not found.
func (s *Store) GetUser(ctx context.Context, appID, id string) (storage.AppUser, error) {
	return s.getUserWhere(ctx, "get user", `app_id = ? AND id = ?`, appID, id)
}

// GetUserByUsername finds the app's user by username, ignoring case.
func (s *Store) GetUserByUsername(ctx context.Context, appID, username string) (storage.AppUser, error) {
	return s.getUserWhere(ctx, "get user by username", `app_id = ? AND username_lower = ?`, appID, strings.ToLower(username))
}

// userSortCols maps the sort keys onto columns. The username sort is on the lower-cased
// copy, so that case does not split the order (the MongoDB engine sorts the same copy).
var userSortCols = map[string]string{
	"":                          "created_at",
	storage.UserSortCreatedAt:   "created_at",
	storage.UserSortUsername:    "username_lower",
	storage.UserSortLastLoginAt: "last_login_at",
	storage.UserSortExpiresAt:   "expires_at",
}

// ListUsers answers one page of the app's users matching q, and their total.
func (s *Store) ListUsers(ctx context.Context, appID string, q storage.UserQuery) ([]storage.AppUser, int, error) {
	col, ok := userSortCols[q.SortBy]
	if !ok {
		return nil, 0, fmt.Errorf("sqlite: list users: unknown sort %q", q.SortBy)
	}
	var w where
	w.add("app_id = ?", appID)
	w.search(q.Search, "username_lower", "email_lower")
	if q.Banned != nil {
		w.add("banned = ?", *q.Banned)
	}
	if q.Expired {
		w.add("expires_at <> 0 AND expires_at <= ?", q.Now.UnixMilli())
	}
	if !q.ExpiredAfter.IsZero() {
		w.add("expires_at > ?", q.ExpiredAfter.UnixMilli())
	}
	return listPage(ctx, s, "list users", "app_users", userCols, w, orderBy(col, q.Desc), q.Page, scanUser)
}

// CountUsers counts the app's users.
func (s *Store) CountUsers(ctx context.Context, appID string) (int, error) {
	return s.countWhere(ctx, "count users", "app_users", "app_id = ?", appID)
}

// UpdateUser applies fn to the app's user in one write transaction (see updateRecord).
// The id, the app and the creation time are kept from the stored record.
func (s *Store) UpdateUser(ctx context.Context, appID, id string, fn func(*storage.AppUser) error) (storage.AppUser, error) {
	return updateRecord(ctx, s, "update user",
		func(tx *sql.Tx) (storage.AppUser, error) {
			return scanUser(tx.QueryRowContext(ctx, `SELECT `+userCols+` FROM app_users WHERE app_id = ? AND id = ?`, appID, id))
		},
		fn,
		func(cur storage.AppUser, next *storage.AppUser) {
			next.ID, next.AppID, next.CreatedAt = cur.ID, cur.AppID, cur.CreatedAt
			normalizeUser(next)
		},
		func(tx *sql.Tx, next storage.AppUser) error {
			_, err := tx.ExecContext(ctx, `UPDATE app_users SET `+userSet+` WHERE id = ?`, append(userSetArgs(next), next.ID)...)
			return err
		})
}

// DeleteUser removes the user, its devices and its variables in one transaction. The
// devices are deleted explicitly rather than left to the foreign key's cascade, as
// DeleteApp does; the variables have no foreign key to their owner.
func (s *Store) DeleteUser(ctx context.Context, appID, id string) error {
	const op = "delete user"
	return s.inWriteTx(ctx, op, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM devices WHERE app_id = ? AND user_id = ?`, appID, id); err != nil {
			return wrap(op+": devices", err)
		}
		if err := deleteOwnedVariables(ctx, tx, appID, storage.ScopeUser, id); err != nil {
			return wrap(op+": variables", err)
		}
		n, err := execCount(ctx, tx, `DELETE FROM app_users WHERE app_id = ? AND id = ?`, appID, id)
		if err != nil {
			return wrap(op, err)
		}
		if n == 0 {
			return wrap(op, sql.ErrNoRows)
		}
		return nil
	})
}
