package mongo

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/keyward/keyward/storage"
)

// lockDoc takes the write lock of document id of coll, waiting (with backoff) while another
// writer holds it, and answers its release. It serialises the partial updates ($set) of
// documents that have no version to claim (an API key's use and edit, an owner session's
// touch and re-authentication): FerretDB 1.x runs every update, whatever its filter, as a
// read of the whole document followed by a write of the whole document by _id, so two
// updates of one document that run at once can put back what the other wrote. The lock is
// a claim document (takeClaim): inserting into the unique _id index is atomic on both
// servers. Every writer of such a document other than its insert and delete must hold it
// (see ATOMICITY.md). owner sweeps a lock left by a writer that died (deleteClaims); ""
// leaves it to be cleared as stale (claimLease) by the next writer.
func (s *Store) lockDoc(ctx context.Context, coll *mongo.Collection, id, owner string) (release func(), err error) {
	release, err = s.tryLockDoc(ctx, coll, id, owner, maxAttempts, 6)
	if err == nil && release == nil {
		err = fmt.Errorf("lock %s/%s: gave up after %d attempts under contention", coll.Name(), id, maxAttempts)
	}
	return release, err
}

// tryLockDoc is lockDoc giving up after attempts tries (answering a nil release and no
// error), its waits growing to at most 2^maxShift ms.
func (s *Store) tryLockDoc(ctx context.Context, coll *mongo.Collection, id, owner string, attempts, maxShift int) (release func(), err error) {
	name := lockClaimID(coll, id)
	for attempt := 0; attempt < attempts; attempt++ {
		if attempt > 0 {
			if err := backoff(ctx, min(attempt, maxShift)); err != nil {
				return nil, fmt.Errorf("lock %s: %w", name, err)
			}
		}
		release, claimed, err := s.takeClaim(ctx, name, owner)
		if err != nil {
			return nil, err
		}
		if claimed {
			return release, nil
		}
	}
	return nil, nil
}

// takeClaims inserts claims (all of one holder) with one unordered insert and answers the
// ids of those it got: all, or when some were held by others, the ones a read finds under
// the holder. On any failure, what it got is in the answer, to be released.
func (s *Store) takeClaims(ctx context.Context, claims []claimDoc) (map[string]bool, error) {
	mine := make(map[string]bool, len(claims))
	if len(claims) == 0 {
		return mine, nil
	}
	docs := make([]any, len(claims))
	ids := make([]string, len(claims))
	for i, c := range claims {
		docs[i], ids[i] = c, c.ID
	}
	_, insErr := s.claims.InsertMany(ctx, docs, options.InsertMany().SetOrdered(false))
	if insErr == nil {
		for _, id := range ids {
			mine[id] = true
		}
		return mine, nil
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	cur, err := s.claims.Find(rctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: ids}}}, {Key: "holder", Value: claims[0].Holder}},
		options.Find().SetProjection(bson.D{{Key: "_id", Value: 1}}))
	if err != nil {
		return mine, errors.Join(insErr, err)
	}
	var got []claimDoc
	if err := cur.All(rctx, &got); err != nil {
		return mine, errors.Join(insErr, err)
	}
	for _, c := range got {
		mine[c.ID] = true
	}
	if !isDuplicateKey(insErr) {
		return mine, insErr
	}
	return mine, nil
}

// releaseClaims removes the claims ids, even if ctx was cancelled meanwhile (a claim left
// behind blocks its record for claimLease): one unordered BulkWrite of DeleteOne by exact
// _id (on FerretDB a DeleteMany by _id $in is a pass over the collection in Go).
func (s *Store) releaseClaims(ctx context.Context, ids map[string]bool) {
	if len(ids) == 0 {
		return
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	models := make([]mongo.WriteModel, 0, len(ids))
	for id := range ids {
		models = append(models, mongo.NewDeleteOneModel().SetFilter(bson.D{{Key: "_id", Value: id}}))
	}
	_, _ = s.claims.BulkWrite(rctx, models, options.BulkWrite().SetOrdered(false))
}

// versionedID is the identity of a stored record as a claim needs it, with the marker of
// its last audited change (which a deletion settles first: stageDeleteFound).
type versionedID struct {
	ID      string `bson:"_id"`
	AppID   string `bson:"appId"`
	Version int64  `bson:"version"`
	Marker  string `bson:"auditPending,omitempty"` // auditMarker
}

// findVersioned answers the id, app, version and marker of the documents of coll filter
// matches.
func findVersioned(ctx context.Context, coll *mongo.Collection, filter bson.D) ([]versionedID, error) {
	cur, err := coll.Find(ctx, filter, options.Find().SetProjection(bson.D{{Key: "_id", Value: 1}, {Key: "appId", Value: 1}, {Key: "version", Value: 1}, {Key: auditMarker, Value: 1}}))
	if err != nil {
		return nil, err
	}
	var docs []versionedID
	if err := cur.All(ctx, &docs); err != nil {
		return nil, err
	}
	return docs, nil
}

// deleteWhereClaimed deletes those of cands (records of an app, read as matching filter)
// that still match filter, and answers how many it deleted. A conditional delete is not
// atomic on FerretDB 1.x (it reads what matches, then deletes by _id), so a record changed
// in between (a license unbanned while the banned ones are deleted) would go although it
// no longer matches. So the delete holds the claims of the records' next versions (see
// updateDoc: no update of them runs meanwhile), reads again which still match at the
// version it claimed, and deletes those by _id. A record whose claim an updater holds, or
// that changed before it was claimed, is read again and tried in the next round.
func (s *Store) deleteWhereClaimed(ctx context.Context, coll *mongo.Collection, filter bson.D, cands []versionedID) (int, error) {
	total := 0
	for attempt := 0; len(cands) > 0; attempt++ {
		if attempt > 0 {
			if err := backoff(ctx, attempt); err != nil {
				return total, err
			}
		}
		n, retry, err := s.deleteClaimedRound(ctx, coll, filter, cands)
		total += n
		if err != nil {
			return total, err
		}
		if len(retry) == 0 {
			break
		}
		// What still matches now, at its present version.
		in := bson.E{Key: "_id", Value: bson.D{{Key: "$in", Value: retry}}}
		if cands, err = findVersioned(ctx, coll, append(append(bson.D{}, filter...), in)); err != nil {
			return total, err
		}
	}
	return total, nil
}

// deleteClaimedRound is one round of deleteWhereClaimed: it answers how many it deleted
// and the ids to read again.
func (s *Store) deleteClaimedRound(ctx context.Context, coll *mongo.Collection, filter bson.D, cands []versionedID) (int, []string, error) {
	n := 0
	retry, err := s.claimedRound(ctx, coll, filter, cands, func(ready []versionedID) error {
		doomed := make([]string, len(ready))
		for i, d := range ready {
			doomed[i] = d.ID
		}
		var err error
		n, err = deleteByIDs(ctx, coll, doomed)
		return err
	})
	return n, retry, err
}

// claimedRound is one round of a write of several records (cands: records of coll read
// with their versions) under the claims of their next versions, as updateDoc holds one:
// it claims every next version (one unordered insert), reads again those it got that
// still match filter, and calls write with those still at the version read, under the
// claims (released after it). A record gone or no longer matching filter is left out. It
// answers the ids to try again: those whose claim another writer holds (cleared when it
// outlived its lease) and those updated before they were claimed, to be judged at their
// new version.
func (s *Store) claimedRound(ctx context.Context, coll *mongo.Collection, filter bson.D, cands []versionedID, write func(ready []versionedID) error) ([]string, error) {
	holder := rand.Text() // tells this round's claims from others' (takeClaims)
	now := storage.Now()
	claims := make([]claimDoc, len(cands))
	read := make(map[string]int64, len(cands))
	for i, c := range cands {
		claims[i] = claimDoc{ID: versionClaimID(coll, c.ID, c.Version+1), Owner: c.AppID, At: now, Holder: holder}
		read[c.ID] = c.Version
	}
	mine, err := s.takeClaims(ctx, claims)
	defer s.releaseClaims(ctx, mine)
	if err != nil {
		return nil, err
	}
	var retry, claimed []string
	for i, c := range cands {
		if mine[claims[i].ID] {
			claimed = append(claimed, c.ID)
			continue
		}
		if err := s.clearStaleClaim(ctx, claims[i].ID); err != nil {
			return nil, err
		}
		retry = append(retry, c.ID)
	}
	if len(claimed) == 0 {
		return retry, nil
	}
	in := bson.E{Key: "_id", Value: bson.D{{Key: "$in", Value: claimed}}}
	still, err := findVersioned(ctx, coll, append(append(bson.D{}, filter...), in))
	if err != nil {
		return nil, err
	}
	var ready []versionedID
	for _, d := range still {
		if d.Version == read[d.ID] {
			ready = append(ready, d)
		} else {
			retry = append(retry, d.ID) // updated before the claim: judge its new version
		}
	}
	if len(ready) == 0 {
		return retry, nil
	}
	return retry, write(ready)
}

// deleteByIDs deletes the documents ids of coll with one unordered BulkWrite of DeleteOne
// by exact _id (on FerretDB a DeleteMany by _id $in is a pass over the collection in Go),
// and answers how many went.
func deleteByIDs(ctx context.Context, coll *mongo.Collection, ids []string) (int, error) {
	models := make([]mongo.WriteModel, len(ids))
	for i, id := range ids {
		models[i] = mongo.NewDeleteOneModel().SetFilter(bson.D{{Key: "_id", Value: id}})
	}
	res, err := coll.BulkWrite(ctx, models, options.BulkWrite().SetOrdered(false))
	if res == nil {
		return 0, err
	}
	return int(res.DeletedCount), err
}

// deleteWhereLocked deletes those of ids (read as matching filter) that still match filter
// under their documents' locks (lockDoc), and answers how many it deleted: the conditional
// delete of documents whose writers hold the lock (deleteWhereClaimed for versioned
// records). A document whose lock another writer holds is being written: it is left, for
// the next delete to judge.
func (s *Store) deleteWhereLocked(ctx context.Context, coll *mongo.Collection, filter bson.D, ids []string) (int, error) {
	holder := rand.Text()
	now := storage.Now()
	claims := make([]claimDoc, len(ids))
	for i, id := range ids {
		claims[i] = claimDoc{ID: lockClaimID(coll, id), At: now, Holder: holder}
	}
	mine, err := s.takeClaims(ctx, claims)
	defer s.releaseClaims(ctx, mine)
	if err != nil {
		return 0, err
	}
	var locked []string
	for i, id := range ids {
		if mine[claims[i].ID] {
			locked = append(locked, id)
		}
	}
	if len(locked) == 0 {
		return 0, nil
	}
	in := bson.E{Key: "_id", Value: bson.D{{Key: "$in", Value: locked}}}
	still, err := findIDs(ctx, coll, append(append(bson.D{}, filter...), in))
	if err != nil || len(still) == 0 {
		return 0, err
	}
	// By exact _id, as deleteByIDs says why (an _id $in is a pass over the collection on
	// FerretDB).
	return deleteByIDs(ctx, coll, still)
}
