package mongo

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/keyward/keyward/storage"
)

// RecordLogins sets lastLoginAt and lastLoginIp (and hwid and pcName when the login carries
// them) of each login's user. Each write's filter carries the app (a user of another app
// is not matched) and requires the stored lastLoginAt to be absent (a zero time is left
// out of the document) or before the login, so an older login is skipped; an unknown user
// matches nothing and is skipped too. The absent case is its own $exists branch of an $or
// because a range comparison never matches a missing field, on MongoDB as on FerretDB.
//
// The write does not bump the version, but it holds the claim of the user's next version
// (see updateDoc), as an update does: FerretDB 1.x runs a $set as a read of the whole
// document and a write of the whole document, so an unclaimed login written from a read
// made just before an UpdateUser would put back the user as it was before that update (a
// ban undone). Under the claim no update of the user runs, and the version is checked
// again after claiming. The reverse stays allowed by the contract: an UpdateUser that read
// the user before the login replaces it at its next version and may put back the previous
// login. A batch costs the same few round trips whatever its size (recordLoginsRound); a
// user whose claim another writer holds is tried again in the next round.
func (s *Store) RecordLogins(ctx context.Context, logins []storage.UserLogin) error {
	const op = "record logins"
	// The batch keeps one login per user: the latest, the first of equal ones, as the
	// SQLite engine's in-order updates do.
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
	pending := make([]storage.UserLogin, 0, len(latest))
	for i, l := range logins {
		if j, ok := latest[key{l.AppID, l.UserID}]; ok && j == i {
			pending = append(pending, l)
		}
	}
	for attempt := 0; len(pending) > 0; attempt++ {
		if attempt > 0 {
			if err := backoff(ctx, attempt); err != nil {
				return wrap(op, err)
			}
		}
		rest, err := s.recordLoginsRound(ctx, pending)
		if err != nil {
			return wrap(op, err)
		}
		pending = rest
	}
	return nil
}

// recordLoginsRound writes the logins (one per user) whose user's next version it can
// claim, and answers the others, to be tried again: read the versions, then write under
// the claims (claimedRound: a user updated between the read and its claim is tried
// again, one deleted meanwhile is skipped).
func (s *Store) recordLoginsRound(ctx context.Context, logins []storage.UserLogin) ([]storage.UserLogin, error) {
	ids := make([]string, len(logins))
	for i, l := range logins {
		ids[i] = l.UserID
	}
	found, err := findVersioned(ctx, s.users, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: ids}}}})
	if err != nil {
		return nil, err
	}
	stored := make(map[string]versionedID, len(found))
	for _, d := range found {
		stored[d.ID] = d
	}
	loginOf := make(map[string]storage.UserLogin, len(found)) // user id → its login
	var cands []versionedID
	for _, l := range logins {
		d, ok := stored[l.UserID]
		if !ok || d.AppID != l.AppID {
			continue // unknown user, or one of another app: skipped
		}
		loginOf[l.UserID] = l
		cands = append(cands, d)
	}
	if len(cands) == 0 {
		return nil, nil
	}
	retry, err := s.claimedRound(ctx, s.users, bson.D{}, cands, func(ready []versionedID) error {
		models := make([]mongo.WriteModel, len(ready))
		for i, d := range ready {
			models[i] = loginWrite(loginOf[d.ID], d.Version)
		}
		_, err := s.users.BulkWrite(ctx, models, options.BulkWrite().SetOrdered(false))
		return err
	})
	if err != nil {
		return nil, err
	}
	rest := make([]storage.UserLogin, len(retry))
	for i, id := range retry {
		rest[i] = loginOf[id]
	}
	return rest, nil
}

// loginWrite is the write of login l to its user, stored at version: only over an older
// login (or none).
func loginWrite(l storage.UserLogin, version int64) mongo.WriteModel {
	at := storage.Truncate(l.At)
	set := bson.D{{Key: "lastLoginAt", Value: at}, {Key: "lastLoginIp", Value: l.IP}}
	if l.HWID != "" {
		set = append(set, bson.E{Key: "hwid", Value: l.HWID})
	}
	if l.PCName != "" {
		set = append(set, bson.E{Key: "pcName", Value: l.PCName})
	}
	return mongo.NewUpdateOneModel().
		SetFilter(bson.D{
			{Key: "_id", Value: l.UserID},
			{Key: "appId", Value: l.AppID},
			{Key: "version", Value: version},
			{Key: "$or", Value: bson.A{
				bson.D{{Key: "lastLoginAt", Value: bson.D{{Key: "$exists", Value: false}}}},
				bson.D{{Key: "lastLoginAt", Value: bson.D{{Key: "$lt", Value: at}}}},
			}},
		}).
		SetUpdate(bson.D{{Key: "$set", Value: set}})
}
