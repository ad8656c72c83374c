package sqlite

import (
	"context"
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
