package mongo

import (
	"context"
	"errors"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/keyward/keyward/storage"
)

// sealStored runs at Open when a Sealer is set. It seals every secret still stored in
// clear (written before encryption at rest), rewriting the document through the ordinary
// versioned update so that nodes starting together do not lose each other's writes, and
// opens one already sealed value so that a wrong key stops start-up instead of the first
// 2FA login. Sealing at start, rather than on the next write, leaves no secret in clear for
// the months a TOTP secret may go unwritten.
func (s *Store) sealStored(ctx context.Context) error {
	if s.sealer == nil {
		return nil
	}
	var accounts []accountDoc
	cur, err := s.accounts.Find(ctx, bson.D{{Key: "$or", Value: bson.A{
		bson.D{{Key: "twoFactorSecret", Value: bson.D{{Key: "$gt", Value: ""}}}},
		bson.D{{Key: "twoFactorPending", Value: bson.D{{Key: "$gt", Value: ""}}}},
	}}})
	if err == nil {
		err = cur.All(ctx, &accounts)
	}
	if err != nil {
		return fmt.Errorf("seal secrets: %w", wrap("read accounts", err))
	}
	checked := false
	for _, d := range accounts {
		if storage.AccountSealed(s.sealer, d.account()) && checked {
			continue
		}
		// The no-op update opens the stored values (the key check) and writes them sealed.
		if _, err := s.UpdateAccount(ctx, d.ID, func(*storage.Account) error { return nil }); err != nil && !errors.Is(err, storage.ErrNotFound) {
			return fmt.Errorf("seal secrets: account %s: %w", d.ID, err)
		}
		checked = true
	}
	var integrations []integrationDoc
	cur, err = s.integrations.Find(ctx, bson.D{{Key: "secret", Value: bson.D{{Key: "$gt", Value: ""}}}})
	if err == nil {
		err = cur.All(ctx, &integrations)
	}
	if err != nil {
		return fmt.Errorf("seal secrets: %w", wrap("read integrations", err))
	}
	for _, d := range integrations {
		if s.sealer.Sealed(d.Secret) && checked {
			continue
		}
		if _, err := s.UpdateIntegration(ctx, d.AppID, d.ID, func(*storage.Integration) error { return nil }); err != nil && !errors.Is(err, storage.ErrNotFound) {
			return fmt.Errorf("seal secrets: integration %s: %w", d.ID, err)
		}
		checked = true
	}
	return nil
}
