package mongo

import (
	"context"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

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

// standingDoc is the part of a userDoc a storage.UserStanding is made of.
type standingDoc struct {
	ID        string    `bson:"_id"`
	Username  string    `bson:"username"`
	Enabled   bool      `bson:"enabled"`
	Banned    bool      `bson:"banned"`
	BanReason string    `bson:"banReason"`
	ExpiresAt time.Time `bson:"expiresAt,omitempty"`
}

// standingProjection reads only a standingDoc's fields.
var standingProjection = bson.D{{Key: "username", Value: 1}, {Key: "enabled", Value: 1}, {Key: "banned", Value: 1},
	{Key: "banReason", Value: 1}, {Key: "expiresAt", Value: 1}}

// GetUserStandings reads the standing of the app's users with the given ids in one query.
func (s *Store) GetUserStandings(ctx context.Context, appID string, ids []string) ([]storage.UserStanding, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	filter := bson.D{{Key: "appId", Value: appID}, {Key: "_id", Value: bson.D{{Key: "$in", Value: ids}}}}
	if len(ids) == 1 {
		filter = byApp(appID, ids[0])
	}
	cur, err := s.users.Find(ctx, filter, options.Find().SetProjection(standingProjection))
	if err != nil {
		return nil, wrap("get user standings", err)
	}
	var docs []standingDoc
	if err := cur.All(ctx, &docs); err != nil {
		return nil, wrap("get user standings", err)
	}
	out := make([]storage.UserStanding, len(docs))
	for i, d := range docs {
		out[i] = storage.UserStanding{ID: d.ID, Username: d.Username, Enabled: d.Enabled, Banned: d.Banned, BanReason: d.BanReason,
			ExpiresAt: fromDate(d.ExpiresAt)}
	}
	return out, nil
}
