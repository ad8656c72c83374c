package mongo

import (
	"context"
	"errors"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
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
	if len(ids) == 1 {
		// One user (a socket's admission): by _id, as findOneRaw reads (see there).
		raw, err := findOneRaw(ctx, s.users, byApp(appID, ids[0]), standingProjection)
		if errors.Is(err, mongo.ErrNoDocuments) {
			return nil, nil
		}
		var d standingDoc
		if err == nil {
			err = bson.Unmarshal(raw, &d)
		}
		if err != nil {
			return nil, wrap("get user standings", err)
		}
		return []storage.UserStanding{d.standing()}, nil
	}
	filter := bson.D{{Key: "appId", Value: appID}, {Key: "_id", Value: bson.D{{Key: "$in", Value: ids}}}}
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
		out[i] = d.standing()
	}
	return out, nil
}

func (d standingDoc) standing() storage.UserStanding {
	return storage.UserStanding{ID: d.ID, Username: d.Username, Enabled: d.Enabled, Banned: d.Banned, BanReason: d.BanReason,
		ExpiresAt: fromDate(d.ExpiresAt)}
}
