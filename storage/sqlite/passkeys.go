package sqlite

import (
	"context"
	"database/sql"
	"time"

	"github.com/keyward/keyward/storage"
)

const passkeyCols = "id, account_id, name, credential_id, credential, created_at, last_used_at"

func scanPasskey(r scanner) (storage.Passkey, error) {
	var p storage.Passkey
	err := r.Scan(&p.ID, &p.AccountID, &p.Name, &p.CredentialID, &p.Credential, timeCol{&p.CreatedAt}, timeCol{&p.LastUsedAt})
	return p, err
}

// CreatePasskey implements storage.PasskeyStore; the foreign key refuses an unknown account.
func (s *Store) CreatePasskey(ctx context.Context, p storage.Passkey) error {
	// In a write transaction: the passkey's audit entry (storage.AuditOutbox) goes with it.
	return s.inWriteTx(ctx, "create passkey", func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO passkeys (`+passkeyCols+`) VALUES (?, ?, ?, ?, ?, ?, ?)`,
			p.ID, p.AccountID, p.Name, p.CredentialID, p.Credential, toMillis(p.CreatedAt), toMillis(p.LastUsedAt))
		if isForeignKey(err) {
			return wrap("create passkey", errNoAccount)
		}
		return wrapIf("create passkey", err)
	})
}

// ListPasskeys implements storage.PasskeyStore.
func (s *Store) ListPasskeys(ctx context.Context, accountID string) ([]storage.Passkey, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT `+passkeyCols+` FROM passkeys WHERE account_id = ? ORDER BY created_at, id`, accountID)
	if err != nil {
		return nil, wrap("list passkeys", err)
	}
	defer rows.Close()
	var out []storage.Passkey
	for rows.Next() {
		p, err := scanPasskey(rows)
		if err != nil {
			return nil, wrap("list passkeys", err)
		}
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, wrap("list passkeys", err)
	}
	return out, nil
}

// GetPasskeyByCredentialID implements storage.PasskeyStore.
func (s *Store) GetPasskeyByCredentialID(ctx context.Context, credentialID []byte) (storage.Passkey, error) {
	p, err := scanPasskey(s.r.QueryRowContext(ctx, `SELECT `+passkeyCols+` FROM passkeys WHERE credential_id = ?`, credentialID))
	if err != nil {
		return storage.Passkey{}, wrap("get passkey", err)
	}
	return p, nil
}

// UsePasskey implements storage.PasskeyStore.
func (s *Store) UsePasskey(ctx context.Context, id string, credential []byte, at time.Time) error {
	res, err := s.w.ExecContext(ctx, `UPDATE passkeys SET credential = ?, last_used_at = ? WHERE id = ?`, credential, toMillis(at), id)
	if err != nil {
		return wrap("use passkey", err)
	}
	return affectedOne(res, "use passkey")
}

// RenamePasskey implements storage.PasskeyStore.
func (s *Store) RenamePasskey(ctx context.Context, accountID, id, name string) error {
	return s.inWriteTx(ctx, "rename passkey", func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE passkeys SET name = ? WHERE account_id = ? AND id = ?`, name, accountID, id)
		if err != nil {
			return wrap("rename passkey", err)
		}
		return affectedOne(res, "rename passkey")
	})
}

// DeletePasskey implements storage.PasskeyStore.
func (s *Store) DeletePasskey(ctx context.Context, accountID, id string) error {
	return s.deleteOne(ctx, "delete passkey", `DELETE FROM passkeys WHERE account_id = ? AND id = ?`, accountID, id)
}

// SaveWebAuthnChallenge implements storage.PasskeyStore.
func (s *Store) SaveWebAuthnChallenge(ctx context.Context, c storage.WebAuthnChallenge) error {
	return s.inWriteTx(ctx, "save webauthn challenge", func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM webauthn_challenges WHERE expires_at <= ?`, toMillis(c.CreatedAt)); err != nil {
			return wrap("save webauthn challenge", err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO webauthn_challenges (id, account_id, purpose, data, expires_at, created_at) VALUES (?, ?, ?, ?, ?, ?)`,
			c.ID, c.AccountID, c.Purpose, c.Data, toMillis(c.ExpiresAt), toMillis(c.CreatedAt)); err != nil {
			return wrap("save webauthn challenge", err)
		}
		return nil
	})
}

// ConsumeWebAuthnChallenge implements storage.PasskeyStore: one DELETE ... RETURNING.
func (s *Store) ConsumeWebAuthnChallenge(ctx context.Context, id, purpose string, now time.Time) (storage.WebAuthnChallenge, error) {
	c := storage.WebAuthnChallenge{ID: id, Purpose: purpose}
	err := s.w.QueryRowContext(ctx, `DELETE FROM webauthn_challenges WHERE id = ? AND purpose = ? AND expires_at > ?
RETURNING account_id, data, expires_at, created_at`, id, purpose, toMillis(now)).Scan(&c.AccountID, &c.Data, timeCol{&c.ExpiresAt}, timeCol{&c.CreatedAt})
	if err != nil {
		return storage.WebAuthnChallenge{}, wrap("consume webauthn challenge", err)
	}
	return c, nil
}
