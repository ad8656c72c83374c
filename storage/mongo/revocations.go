package mongo

import (
	"context"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// RevokeToken implements storage.RevocationStore with an upsert whose $max keeps the later
// expiry. Two first revocations of one id racing may both try the insert; the loser's
// duplicate-key error is retried once, as an update then.
func (s *Store) RevokeToken(ctx context.Context, id string, expiresAt time.Time) error {
	update := bson.D{{Key: "$max", Value: bson.D{{Key: "expiresAt", Value: expiresAt.UTC().Truncate(time.Millisecond)}}}}
	var err error
	for range 2 {
		_, err = s.revocations.UpdateOne(ctx, bson.D{{Key: "_id", Value: id}}, update, options.UpdateOne().SetUpsert(true))
		if err == nil || !isDuplicateKey(err) {
			break
		}
	}
	if err != nil {
		return wrap("revoke token", err)
	}
	return nil
}

// IsTokenRevoked implements storage.RevocationStore.
func (s *Store) IsTokenRevoked(ctx context.Context, id string, now time.Time) (bool, error) {
	n, err := s.revocations.CountDocuments(ctx, bson.D{{Key: "_id", Value: id}, {Key: "expiresAt", Value: bson.D{{Key: "$gt", Value: now}}}},
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
