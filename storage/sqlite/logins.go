package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/keyward/keyward/storage"
)

// RecordLogins sets last_login_at and last_login_ip of each login's user (and hwid and
// pc_name when the login carries them; an empty one keeps the stored value) in one write
// transaction, through one prepared UPDATE whose condition on last_login_at skips a login
// that is not later than the stored one (a zero time is 0, so before every login after
// 1970). An unknown user, or one of another app, matches no row and is skipped. The logins
// run in order, so of several logins of one user in the batch the latest wins (the first
// of equal ones). updated_at and every other column are left as they are.
func (s *Store) RecordLogins(ctx context.Context, logins []storage.UserLogin) error {
	const op = "record logins"
	if len(logins) == 0 {
		return nil
	}
	return s.inWriteTx(ctx, op, func(tx *sql.Tx) error {
		return s.recordLoginsTx(ctx, tx, op, logins)
	})
}

// recordLogin is RecordLogins' UPDATE (a hot write: every login's round runs it).
const recordLogin = `UPDATE app_users SET last_login_at = ?, last_login_ip = ?, hwid = COALESCE(NULLIF(?, ''), hwid),
	pc_name = COALESCE(NULLIF(?, ''), pc_name) WHERE app_id = ? AND id = ? AND last_login_at < ?`

func (s *Store) recordLoginsTx(ctx context.Context, tx *sql.Tx, op string, logins []storage.UserLogin) error {
	if len(logins) == 0 {
		return nil
	}
	stmt := s.txStmt(ctx, tx, recordLogin)
	for i, l := range logins {
		if l.At.IsZero() {
			continue // a zero time is after nothing
		}
		at := toMillis(l.At)
		if _, err := stmt.ExecContext(ctx, at, l.IP, l.HWID, l.PCName, l.AppID, l.UserID, at); err != nil {
			return wrap(fmt.Sprintf("%s: login %d", op, i), err)
		}
	}
	return nil
}
