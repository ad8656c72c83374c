package mongo

import (
	"context"
	"crypto/rand"

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
// claim, and answers the others, to be tried again: read the versions, claim each next
// version (one unordered insert), read the versions again (a user updated between the two
// reads is tried again), write, release the claims.
func (s *Store) recordLoginsRound(ctx context.Context, logins []storage.UserLogin) ([]storage.UserLogin, error) {
	type userVersion struct {
		ID      string `bson:"_id"`
		AppID   string `bson:"appId"`
		Version int64  `bson:"version"`
	}
	versions := func(ids []string) (map[string]userVersion, error) {
		cur, err := s.users.Find(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: ids}}}},
			options.Find().SetProjection(bson.D{{Key: "_id", Value: 1}, {Key: "appId", Value: 1}, {Key: "version", Value: 1}}))
		if err != nil {
			return nil, err
		}
		var docs []userVersion
		if err := cur.All(ctx, &docs); err != nil {
			return nil, err
		}
		out := make(map[string]userVersion, len(docs))
		for _, d := range docs {
			out[d.ID] = d
		}
		return out, nil
	}
	ids := make([]string, len(logins))
	for i, l := range logins {
		ids[i] = l.UserID
	}
	read, err := versions(ids)
	if err != nil {
		return nil, err
	}
	holder := rand.Text() // tells this round's claims from others' (takeClaims)
	now := storage.Now()
	claimOf := make(map[string]string, len(logins)) // user id → claim id
	var claims []claimDoc
	var known []storage.UserLogin
	for _, l := range logins {
		d, ok := read[l.UserID]
		if !ok || d.AppID != l.AppID {
			continue // unknown user, or one of another app: skipped
		}
		claimOf[l.UserID] = versionClaimID(s.users, l.UserID, d.Version+1)
		claims = append(claims, claimDoc{ID: claimOf[l.UserID], Owner: l.AppID, At: now, Holder: holder})
		known = append(known, l)
	}
	if len(claims) == 0 {
		return nil, nil
	}
	mine, err := s.takeClaims(ctx, claims)
	defer s.releaseClaims(ctx, mine)
	if err != nil {
		return nil, err
	}
	var claimedIDs []string
	for _, l := range known {
		if mine[claimOf[l.UserID]] {
			claimedIDs = append(claimedIDs, l.UserID)
		}
	}
	var again map[string]userVersion
	if len(claimedIDs) > 0 {
		if again, err = versions(claimedIDs); err != nil {
			return nil, err
		}
	}
	var rest []storage.UserLogin
	var models []mongo.WriteModel
	for _, l := range known {
		if !mine[claimOf[l.UserID]] {
			// Another writer holds it: try again, after clearing it if it outlived its lease.
			if err := s.clearStaleClaim(ctx, claimOf[l.UserID]); err != nil {
				return nil, err
			}
			rest = append(rest, l)
			continue
		}
		d, ok := again[l.UserID]
		if !ok {
			continue // deleted meanwhile
		}
		if d.Version != read[l.UserID].Version {
			rest = append(rest, l) // updated between the reads: claim its new version
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
				{Key: "version", Value: d.Version},
				{Key: "$or", Value: bson.A{
					bson.D{{Key: "lastLoginAt", Value: bson.D{{Key: "$exists", Value: false}}}},
					bson.D{{Key: "lastLoginAt", Value: bson.D{{Key: "$lt", Value: at}}}},
				}},
			}).
			SetUpdate(bson.D{{Key: "$set", Value: set}}))
	}
	if len(models) > 0 {
		if _, err := s.users.BulkWrite(ctx, models, options.BulkWrite().SetOrdered(false)); err != nil {
			return nil, err
		}
	}
	return rest, nil
}
