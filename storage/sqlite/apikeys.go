package sqlite

import (
	"context"
	"database/sql"
	"time"

	"github.com/keyward/keyward/storage"
)

var _ storage.APIKeyStore = (*Store)(nil)

// apiKeyCols is the column order of scanAPIKey.
const apiKeyCols = `id, account_id, name, hash, prefix, last4, scopes, apps, expires_at, last_used_at, last_used_ip, created_at, updated_at`

func scanAPIKey(row scanner) (storage.APIKey, error) {
	var k storage.APIKey
	err := row.Scan(&k.ID, &k.AccountID, &k.Name, &k.Hash, &k.Prefix, &k.Last4, eventsCol{&k.Scopes}, eventsCol{&k.Apps},
		timeCol{&k.ExpiresAt}, timeCol{&k.LastUsedAt}, &k.LastUsedIP, timeCol{&k.CreatedAt}, timeCol{&k.UpdatedAt})
	return k, err
}

// CreateAPIKey implements storage.APIKeyStore. An unknown account answers ErrNotFound.
func (s *Store) CreateAPIKey(ctx context.Context, k storage.APIKey) error {
	scopes, err := encodeEvents(k.Scopes)
	if err != nil {
		return wrap("create API key", err)
	}
	apps, err := encodeEvents(k.Apps)
	if err != nil {
		return wrap("create API key", err)
	}
	return s.insertAll(ctx, "create API key", `INSERT INTO api_keys (`+apiKeyCols+`) VALUES (`+placeholders(13)+`)`,
		[][]any{{k.ID, k.AccountID, k.Name, k.Hash, k.Prefix, k.Last4, scopes, apps, toMillis(k.ExpiresAt),
			toMillis(k.LastUsedAt), k.LastUsedIP, toMillis(k.CreatedAt), toMillis(k.UpdatedAt)}})
}

// GetAPIKeyByHash implements storage.APIKeyStore.
func (s *Store) GetAPIKeyByHash(ctx context.Context, hash string) (storage.APIKey, error) {
	if hash == "" {
		return storage.APIKey{}, wrap("get API key by hash", storage.ErrNotFound)
	}
	k, err := scanAPIKey(s.r.QueryRowContext(ctx, `SELECT `+apiKeyCols+` FROM api_keys WHERE hash = ?`, hash))
	if err != nil {
		return storage.APIKey{}, wrap("get API key by hash", err)
	}
	return k, nil
}

// GetAPIKey implements storage.APIKeyStore.
func (s *Store) GetAPIKey(ctx context.Context, accountID, id string) (storage.APIKey, error) {
	k, err := scanAPIKey(s.r.QueryRowContext(ctx, `SELECT `+apiKeyCols+` FROM api_keys WHERE account_id = ? AND id = ?`, accountID, id))
	if err != nil {
		return storage.APIKey{}, wrap("get API key", err)
	}
	return k, nil
}

// ListAPIKeys implements storage.APIKeyStore.
func (s *Store) ListAPIKeys(ctx context.Context, accountID string) ([]storage.APIKey, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT `+apiKeyCols+` FROM api_keys WHERE account_id = ? ORDER BY created_at, id`, accountID)
	if err != nil {
		return nil, wrap("list API keys", err)
	}
	defer rows.Close()
	var out []storage.APIKey
	for rows.Next() {
		k, err := scanAPIKey(rows)
		if err != nil {
			return nil, wrap("list API keys", err)
		}
		out = append(out, k)
	}
	if err := rows.Err(); err != nil {
		return nil, wrap("list API keys", err)
	}
	return out, nil
}

// UpdateAPIKey implements storage.APIKeyStore.
func (s *Store) UpdateAPIKey(ctx context.Context, k storage.APIKey) (storage.APIKey, error) {
	scopes, err := encodeEvents(k.Scopes)
	if err != nil {
		return storage.APIKey{}, wrap("update API key", err)
	}
	apps, err := encodeEvents(k.Apps)
	if err != nil {
		return storage.APIKey{}, wrap("update API key", err)
	}
	// inWriteTx: an owner's edit carries its audit entry into the transaction.
	var out storage.APIKey
	err = s.inWriteTx(ctx, "update API key", func(tx *sql.Tx) error {
		var err error
		out, err = scanAPIKey(tx.QueryRowContext(ctx, `UPDATE api_keys SET name = ?, scopes = ?, apps = ?, expires_at = ?, updated_at = ?
WHERE account_id = ? AND id = ? RETURNING `+apiKeyCols,
			k.Name, scopes, apps, toMillis(k.ExpiresAt), toMillis(k.UpdatedAt), k.AccountID, k.ID))
		return wrapIf("update API key", err)
	})
	if err != nil {
		return storage.APIKey{}, err
	}
	return out, nil
}

// TouchAPIKey implements storage.APIKeyStore.
func (s *Store) TouchAPIKey(ctx context.Context, id string, at time.Time, ip string) error {
	if _, err := s.w.ExecContext(ctx, `UPDATE api_keys SET last_used_at = ?, last_used_ip = ? WHERE id = ?`, toMillis(at), ip, id); err != nil {
		return wrap("touch API key", err)
	}
	return nil
}

// DeleteAPIKey implements storage.APIKeyStore.
func (s *Store) DeleteAPIKey(ctx context.Context, accountID, id string) error {
	return s.deleteOne(ctx, "delete API key", `DELETE FROM api_keys WHERE account_id = ? AND id = ?`, accountID, id)
}
