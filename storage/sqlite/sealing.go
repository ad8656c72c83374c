package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/keyward/keyward/storage"
)

// sealStored runs at Open when a Sealer is set. It seals every secret still stored in
// clear (written before encryption at rest, or by a node without it), rewriting the record
// through the ordinary update so it happens under the write lock, and opens one already
// sealed value so that a wrong key stops start-up instead of the first 2FA login. Sealing
// at start, rather than on the next write, leaves no secret in clear in the file for the
// months a TOTP secret may go unwritten; secure_delete overwrites the clear copies.
func (s *Store) sealStored(ctx context.Context) error {
	if s.sealer == nil {
		return nil
	}
	accounts, err := readStored(ctx, s.r, `SELECT `+accountCols+` FROM accounts
WHERE two_factor_secret <> '' OR two_factor_pending <> ''`, scanStoredAccount)
	if err != nil {
		return fmt.Errorf("seal secrets: read accounts: %w", err)
	}
	checked := false
	for _, a := range accounts {
		if storage.AccountSealed(s.sealer, a) && checked {
			continue
		}
		// The no-op update opens the stored values (the key check) and writes them sealed.
		if _, err := s.UpdateAccount(ctx, a.ID, func(*storage.Account) error { return nil }); err != nil && !errors.Is(err, storage.ErrNotFound) {
			return fmt.Errorf("seal secrets: account %s: %w", a.ID, err)
		}
		checked = true
	}
	integrations, err := readStored(ctx, s.r, `SELECT `+integrationCols+` FROM integrations WHERE secret <> ''`,
		scanStoredIntegration)
	if err != nil {
		return fmt.Errorf("seal secrets: read integrations: %w", err)
	}
	for _, i := range integrations {
		if s.sealer.Sealed(i.Secret) && checked {
			continue
		}
		if _, err := s.UpdateIntegration(ctx, i.AppID, i.ID, func(*storage.Integration) error { return nil }); err != nil && !errors.Is(err, storage.ErrNotFound) {
			return fmt.Errorf("seal secrets: integration %s: %w", i.ID, err)
		}
		checked = true
	}
	return nil
}

func readStored[T any](ctx context.Context, db *sql.DB, query string, scan func(scanner) (T, error)) ([]T, error) {
	rows, err := db.QueryContext(ctx, query)
	if err != nil {
		return nil, err
	}
	return scanAll(rows, scan)
}
