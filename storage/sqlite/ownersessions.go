package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/keyward/keyward/storage"
)

const ownerSessionCols = `id, account_id, refresh_hash, user_agent, ip, created_at, last_used_at, auth_at, expires_at`

// CreateOwnerSession implements storage.OwnerSessionStore.
func (s *Store) CreateOwnerSession(ctx context.Context, o storage.OwnerSession) error {
	_, err := s.w.ExecContext(ctx, `INSERT INTO owner_sessions (`+ownerSessionCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		o.ID, o.AccountID, o.RefreshHash, o.UserAgent, o.IP, toMillis(o.CreatedAt), toMillis(o.LastUsedAt),
		toMillis(o.AuthAt), toMillis(o.ExpiresAt))
	if isForeignKey(err) {
		return fmt.Errorf("sqlite: create owner session: %w", storage.ErrNotFound)
	}
	if err != nil {
		return wrap("create owner session", err)
	}
	return nil
}

type rowScanner interface{ Scan(dest ...any) error }

func scanOwnerSession(r rowScanner) (storage.OwnerSession, error) {
	var o storage.OwnerSession
	var created, used, auth, expires int64
	if err := r.Scan(&o.ID, &o.AccountID, &o.RefreshHash, &o.UserAgent, &o.IP, &created, &used, &auth, &expires); err != nil {
		return storage.OwnerSession{}, err
	}
	o.CreatedAt, o.LastUsedAt, o.AuthAt, o.ExpiresAt = fromMillis(created), fromMillis(used), fromMillis(auth), fromMillis(expires)
	return o, nil
}

// GetOwnerSession implements storage.OwnerSessionStore.
func (s *Store) GetOwnerSession(ctx context.Context, id string) (storage.OwnerSession, error) {
	o, err := scanOwnerSession(s.r.QueryRowContext(ctx, `SELECT `+ownerSessionCols+` FROM owner_sessions WHERE id = ?`, id))
	if err != nil {
		return storage.OwnerSession{}, wrap("get owner session", err)
	}
	return o, nil
}

// UpdateOwnerSession implements storage.OwnerSessionStore.
func (s *Store) UpdateOwnerSession(ctx context.Context, id string, ch storage.OwnerSessionChange) error {
	var sets []string
	var args []any
	add := func(col string, v any) { sets = append(sets, col+" = ?"); args = append(args, v) }
	if !ch.LastUsedAt.IsZero() {
		add("last_used_at", ch.LastUsedAt.UnixMilli())
	}
	if ch.IP != "" {
		add("ip", ch.IP)
	}
	if !ch.AuthAt.IsZero() {
		add("auth_at", ch.AuthAt.UnixMilli())
	}
	if !ch.ExpiresAt.IsZero() {
		add("expires_at", ch.ExpiresAt.UnixMilli())
	}
	if len(sets) == 0 {
		_, err := s.GetOwnerSession(ctx, id)
		return err
	}
	res, err := s.w.ExecContext(ctx, `UPDATE owner_sessions SET `+strings.Join(sets, ", ")+` WHERE id = ?`, append(args, id)...)
	if err != nil {
		return wrap("update owner session", err)
	}
	return affectedOne(res, "update owner session")
}

func affectedOne(res sql.Result, op string) error {
	n, err := res.RowsAffected()
	if err != nil {
		return wrap(op, err)
	}
	if n == 0 {
		return wrap(op, sql.ErrNoRows)
	}
	return nil
}

// ListOwnerSessions implements storage.OwnerSessionStore.
func (s *Store) ListOwnerSessions(ctx context.Context, accountID string, now time.Time) ([]storage.OwnerSession, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT `+ownerSessionCols+` FROM owner_sessions
WHERE account_id = ? AND expires_at > ? ORDER BY last_used_at DESC, id`, accountID, now.UnixMilli())
	if err != nil {
		return nil, wrap("list owner sessions", err)
	}
	defer rows.Close()
	var out []storage.OwnerSession
	for rows.Next() {
		o, err := scanOwnerSession(rows)
		if err != nil {
			return nil, wrap("list owner sessions", err)
		}
		out = append(out, o)
	}
	if err := rows.Err(); err != nil {
		return nil, wrap("list owner sessions", err)
	}
	return out, nil
}

// DeleteOwnerSession implements storage.OwnerSessionStore.
func (s *Store) DeleteOwnerSession(ctx context.Context, accountID, id string) error {
	res, err := s.w.ExecContext(ctx, `DELETE FROM owner_sessions WHERE id = ? AND account_id = ?`, id, accountID)
	if err != nil {
		return wrap("delete owner session", err)
	}
	return affectedOne(res, "delete owner session")
}

// DeleteOwnerSessions implements storage.OwnerSessionStore.
func (s *Store) DeleteOwnerSessions(ctx context.Context, accountID, keepID string) (int, error) {
	res, err := s.w.ExecContext(ctx, `DELETE FROM owner_sessions WHERE account_id = ? AND id <> ?`, accountID, keepID)
	if err != nil {
		return 0, wrap("delete owner sessions", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, wrap("delete owner sessions", err)
	}
	return int(n), nil
}

// PurgeOwnerSessions implements storage.OwnerSessionStore.
func (s *Store) PurgeOwnerSessions(ctx context.Context, now time.Time) (int, error) {
	res, err := s.w.ExecContext(ctx, `DELETE FROM owner_sessions WHERE expires_at <= ?`, now.UnixMilli())
	if err != nil {
		return 0, wrap("purge owner sessions", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, wrap("purge owner sessions", err)
	}
	return int(n), nil
}
