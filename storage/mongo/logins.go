package mongo

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/keyward/keyward/storage"
)

// RecordLogins sets lastLoginAt and lastLoginIp (and hwid and pcName when the login carries
// them) of each login's user with one unordered
// BulkWrite of UpdateOne models. Each filter carries the app (a user of another app is not
// matched) and requires the stored lastLoginAt to be absent (a zero time is left out of the
// document) or before the login, so an older login is skipped; an unknown user matches
// nothing and is skipped too. The absent case is its own $exists branch of an $or because
// a range comparison never matches a missing field, on MongoDB as on FerretDB.
//
// The update does not go through updateDoc and does not bump the version. The contract
// makes these login fields best effort against a concurrent UpdateUser, and they are the
// only ones written: an UpdateUser that read the user before this $set replaces the whole
// document at its next version and so may put back the previous login, which the contract
// allows. Bumping the version here instead would write a version no one claimed, breaking
// the claim protocol (another updater could claim and write that same version), and would
// cost a claim round trip per user in a write meant to be cheap. On FerretDB 1.x the
// conditional $set is itself a query then a write, so two RecordLogins racing on one user
// may also let the older login win; the next login corrects it.
func (s *Store) RecordLogins(ctx context.Context, logins []storage.UserLogin) error {
	const op = "record logins"
	// An unordered bulk write may apply its models in any order (and a FerretDB update is
	// not atomic), so the batch keeps one login per user here: the latest, the first of
	// equal ones, as the SQLite engine's in-order updates do.
	type key struct{ app, user string }
	latest := make(map[key]int, len(logins))
	for i, l := range logins {
		if l.At.IsZero() {
			continue // a zero time is after nothing
		}
		k := key{l.AppID, l.UserID}
		if j, ok := latest[k]; !ok || storage.Truncate(logins[j].At).Before(storage.Truncate(l.At)) {
			latest[k] = i
		}
	}
	if len(latest) == 0 {
		return nil
	}
	models := make([]mongo.WriteModel, 0, len(latest))
	for i, l := range logins {
		if j, ok := latest[key{l.AppID, l.UserID}]; !ok || j != i {
			continue
		}
		at := storage.Truncate(l.At)
		set := bson.D{{Key: "lastLoginAt", Value: at}, {Key: "lastLoginIp", Value: l.IP}}
		if l.HWID != "" {
			set = append(set, bson.E{Key: "hwid", Value: l.HWID})
		}
		if l.PCName != "" {
			set = append(set, bson.E{Key: "pcName", Value: l.PCName})
		}
		models = append(models, mongo.NewUpdateOneModel().
			SetFilter(bson.D{
				{Key: "_id", Value: l.UserID},
				{Key: "appId", Value: l.AppID},
				{Key: "$or", Value: bson.A{
					bson.D{{Key: "lastLoginAt", Value: bson.D{{Key: "$exists", Value: false}}}},
					bson.D{{Key: "lastLoginAt", Value: bson.D{{Key: "$lt", Value: at}}}},
				}},
			}).
			SetUpdate(bson.D{{Key: "$set", Value: set}}))
	}
	if _, err := s.users.BulkWrite(ctx, models, options.BulkWrite().SetOrdered(false)); err != nil {
		return wrap(op, err)
	}
	return nil
}
