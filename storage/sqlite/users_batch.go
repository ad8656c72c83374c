package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"strings"

	"github.com/keyward/keyward/storage"
)

// GetUsers reads the app's users with the given ids in one query.
func (s *Store) GetUsers(ctx context.Context, appID string, ids []string) ([]storage.AppUser, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	args := make([]any, 0, len(ids)+1)
	args = append(args, appID)
	for _, id := range ids {
		args = append(args, id)
	}
	rows, err := s.r.QueryContext(ctx, `SELECT `+userCols+` FROM app_users WHERE app_id = ? AND id IN (?`+
		strings.Repeat(",?", len(ids)-1)+`)`, args...)
	if err != nil {
		return nil, wrap("get users", err)
	}
	defer rows.Close()
	var out []storage.AppUser
	for rows.Next() {
		u, err := scanUser(rows)
		if err != nil {
			return nil, wrap("get users", err)
		}
		out = append(out, u)
	}
	if err := rows.Err(); err != nil {
		return nil, wrap("get users", err)
	}
	return out, nil
}

// standingCols are the columns of a storage.UserStanding.
const standingCols = `id, username, enabled, banned, ban_reason, expires_at`

// GetUserStandings reads the standing of the app's users with the given ids in one query.
// One id (a socket's admission) is a statement prepared once.
func (s *Store) GetUserStandings(ctx context.Context, appID string, ids []string) ([]storage.UserStanding, error) {
	// Lookups by key, at most a gathered batch of them: nothing long to interrupt, so no
	// cancellation watch (a goroutine per statement in the driver: see txQuery). Read at
	// every socket's admission.
	ctx = context.WithoutCancel(ctx)
	switch len(ids) {
	case 0:
		return nil, nil
	case 1:
		var u storage.UserStanding
		err := s.readRow(ctx, `SELECT `+standingCols+` FROM app_users INDEXED BY app_users_standing WHERE app_id = ? AND id = ?`, appID, ids[0]).
			Scan(&u.ID, &u.Username, &u.Enabled, &u.Banned, &u.BanReason, timeCol{&u.ExpiresAt})
		if errors.Is(err, sql.ErrNoRows) {
			return nil, nil
		}
		if err != nil {
			return nil, wrap("get user standings", err)
		}
		return []storage.UserStanding{u}, nil
	}
	args := make([]any, 0, len(ids)+1)
	args = append(args, appID)
	for _, id := range ids {
		args = append(args, id)
	}
	rows, err := s.r.QueryContext(ctx, `SELECT `+standingCols+` FROM app_users INDEXED BY app_users_standing WHERE app_id = ? AND id IN (?`+
		strings.Repeat(",?", len(ids)-1)+`)`, args...)
	if err != nil {
		return nil, wrap("get user standings", err)
	}
	defer rows.Close()
	out := make([]storage.UserStanding, 0, len(ids))
	for rows.Next() {
		var u storage.UserStanding
		if err := rows.Scan(&u.ID, &u.Username, &u.Enabled, &u.Banned, &u.BanReason, timeCol{&u.ExpiresAt}); err != nil {
			return nil, wrap("get user standings", err)
		}
		out = append(out, u)
	}
	if err := rows.Err(); err != nil {
		return nil, wrap("get user standings", err)
	}
	return out, nil
}
