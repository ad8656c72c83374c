package mongo

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/keyward/keyward/storage"
)

// GetUsers reads the app's users with the given ids in one query.
func (s *Store) GetUsers(ctx context.Context, appID string, ids []string) ([]storage.AppUser, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	return findAll(ctx, s.users, "get users",
		bson.D{{Key: "appId", Value: appID}, {Key: "_id", Value: bson.D{{Key: "$in", Value: ids}}}},
		bson.D{{Key: "_id", Value: 1}}, userDoc.user)
}
