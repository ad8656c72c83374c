package mongo

import (
	"context"
	"errors"
	"strconv"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/keyward/keyward/storage"
)

// revocationDoc is one revocation of a token id until an expiry. Documents are only ever
// inserted and deleted, never updated: FerretDB 1.x runs an update as a read then a write,
// so two racing "$max" upserts could leave the earlier expiry. An id revoked with several
// expiries has one document each, and is revoked while any of them is live, which is the
// later expiry winning.
type revocationDoc struct {
	ID        string    `bson:"_id"` // jti and expiry, so the same revocation twice is one document
	JTI       string    `bson:"jti"`
	ExpiresAt time.Time `bson:"expiresAt"`
}

// RevokeToken implements storage.RevocationStore.
func (s *Store) RevokeToken(ctx context.Context, id string, expiresAt time.Time) error {
	expiresAt = expiresAt.UTC().Truncate(time.Millisecond)
	d := revocationDoc{ID: id + "|" + strconv.FormatInt(expiresAt.UnixMilli(), 10), JTI: id, ExpiresAt: expiresAt}
	// insertOwned: a sign-out's audit entry is staged and confirmed by the insert. The
	// same revocation twice is one document: the second is no change (its entry, if any,
	// is written after by the edge).
	err := s.insertOwned(ctx, "revoke token", s.revocations, []any{d}, bson.D{{Key: "_id", Value: d.ID}}, nil)
	if err != nil && !errors.Is(err, storage.ErrConflict) {
		return err
	}
	return nil
}

// IsTokenRevoked implements storage.RevocationStore.
func (s *Store) IsTokenRevoked(ctx context.Context, id string, now time.Time) (bool, error) {
	n, err := s.revocations.CountDocuments(ctx, bson.D{{Key: "jti", Value: id}, {Key: "expiresAt", Value: bson.D{{Key: "$gt", Value: now}}}},
		options.Count().SetLimit(1))
	if err != nil {
		return false, wrap("is token revoked", err)
	}
	return n > 0, nil
}

// PurgeRevocations implements storage.RevocationStore.
func (s *Store) PurgeRevocations(ctx context.Context, now time.Time) (int, error) {
	res, err := s.revocations.DeleteMany(ctx, bson.D{{Key: "expiresAt", Value: bson.D{{Key: "$lte", Value: now}}}})
	if err != nil {
		return 0, wrap("purge revocations", err)
	}
	return int(res.DeletedCount), nil
}
