package sqlite

import (
	"context"
	"database/sql"
	"time"
)

// RevokeToken implements storage.RevocationStore; an existing row keeps the later expiry.
func (s *Store) RevokeToken(ctx context.Context, id string, expiresAt time.Time) error {
	// In a write transaction: a sign-out's audit entry (storage.AuditOutbox) goes with it.
	return s.inWriteTx(ctx, "revoke token", func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO token_revocations (id, expires_at) VALUES (?, ?)
ON CONFLICT (id) DO UPDATE SET expires_at = max(expires_at, excluded.expires_at)`, id, expiresAt.UnixMilli())
		return wrapIf("revoke token", err)
	})
}

// IsTokenRevoked implements storage.RevocationStore.
func (s *Store) IsTokenRevoked(ctx context.Context, id string, now time.Time) (bool, error) {
	var n int
	err := s.r.QueryRowContext(ctx, `SELECT count(*) FROM token_revocations WHERE id = ? AND expires_at > ?`,
		id, now.UnixMilli()).Scan(&n)
	if err != nil {
		return false, wrap("is token revoked", err)
	}
	return n > 0, nil
}

// PurgeRevocations implements storage.RevocationStore.
func (s *Store) PurgeRevocations(ctx context.Context, now time.Time) (int, error) {
	res, err := s.w.ExecContext(ctx, `DELETE FROM token_revocations WHERE expires_at <= ?`, now.UnixMilli())
	if err != nil {
		return 0, wrap("purge revocations", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, wrap("purge revocations", err)
	}
	return int(n), nil
}
