package sqlite

import (
	"context"
	"database/sql"
	"time"
)

// ReplaceRecoveryCodes implements storage.RecoveryCodeStore in one transaction.
func (s *Store) ReplaceRecoveryCodes(ctx context.Context, accountID string, hashes []string, now time.Time) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return wrap("replace recovery codes", err)
	}
	defer tx.Rollback() //nolint:errcheck // after Commit this is a no-op
	if _, err := tx.ExecContext(ctx, `DELETE FROM recovery_codes WHERE account_id = ?`, accountID); err != nil {
		return wrap("replace recovery codes", err)
	}
	for _, h := range hashes {
		if _, err := tx.ExecContext(ctx, `INSERT INTO recovery_codes (account_id, hash, created_at) VALUES (?, ?, ?)`,
			accountID, h, toMillis(now)); err != nil {
			if isForeignKey(err) {
				return wrap("replace recovery codes", errNoAccount)
			}
			return wrap("replace recovery codes", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return wrap("replace recovery codes", err)
	}
	return nil
}

// RecoveryCodeHashes implements storage.RecoveryCodeStore.
func (s *Store) RecoveryCodeHashes(ctx context.Context, accountID string) ([]string, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT hash FROM recovery_codes WHERE account_id = ? ORDER BY hash`, accountID)
	if err != nil {
		return nil, wrap("recovery codes", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var h string
		if err := rows.Scan(&h); err != nil {
			return nil, wrap("recovery codes", err)
		}
		out = append(out, h)
	}
	if err := rows.Err(); err != nil {
		return nil, wrap("recovery codes", err)
	}
	return out, nil
}

// UseRecoveryCode implements storage.RecoveryCodeStore: one DELETE under the write lock.
func (s *Store) UseRecoveryCode(ctx context.Context, accountID, hash string) error {
	res, err := s.w.ExecContext(ctx, `DELETE FROM recovery_codes WHERE account_id = ? AND hash = ?`, accountID, hash)
	if err != nil {
		return wrap("use recovery code", err)
	}
	return affectedOne(res, "use recovery code")
}

// errNoAccount maps a foreign key refusal (no such account) onto ErrNotFound.
var errNoAccount = sql.ErrNoRows
