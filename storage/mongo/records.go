package mongo

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/keyward/keyward/storage"
)

// versioned is a stored document that Update methods replace under a version claim (see
// updateDoc). Every updatable record kind's document implements it.
type versioned interface {
	// claimKey answers the document's id, the version it was read at, and its owner: the
	// scope whose deletion sweeps the claims left behind (the account for an account, the
	// app for an app and for every record of the app).
	claimKey() (id string, version int64, owner string)
}

// newVersion is the version a record is created at. It is random, not 1: an updater that
// read a record which is then deleted and created again under the same id must not find
// "its" version on the new record and overwrite it with the old one's fields.
func newVersion() int64 { return rand.Int64N(1<<62) + 1 }

// updateDoc is the read-modify-write every Update method shares. It is optimistic: read
// the document with filter (which carries the id and its owner, so another owner's record
// is not found), let next build the successor (fn applied, identity kept, version+1), then
// replace the document only if it is still at the version read, else start again.
//
// The replace filtered by {_id, version} is an atomic compare-and-swap on MongoDB, but not
// on FerretDB 1.x, whose update runs as a query followed by an unconditional write by _id:
// two updaters that read the same version can both match and one write is lost. So, to
// work on both, an updater first claims the version it is about to write by inserting a
// claim document whose _id names the collection, the document and that version. Inserting
// into the unique _id index is atomic on both servers, so exactly one updater holds the
// claim for version v+1, and only it replaces version v. The claim is removed once the
// replace is done; on MongoDB it is redundant, and costs two small writes.
//
// The change's audit entry (storage.AuditOutbox) is staged before the replace and
// confirmed by it: the replaced document carries the entry's id (see auditpending.go).
//
// next's error (the caller's updater failing) is returned as it is, so it stays matchable.
func updateDoc[D versioned](ctx context.Context, s *Store, coll *mongo.Collection, op string, filter bson.D,
	next func(cur D) (D, error),
) (D, error) {
	var zero D
	for attempt := 0; ; attempt++ {
		raw, err := findOneRaw(ctx, coll, filter, nil)
		if err != nil {
			return zero, wrap(op, err)
		}
		var cur D
		if err := bson.Unmarshal(raw, &cur); err != nil {
			return zero, wrap(op, err)
		}
		doc, err := next(cur)
		if err != nil {
			return zero, err
		}
		id, _, _ := cur.claimKey()
		prior := markerOf(raw)
		intent, err := s.stageAudit(ctx, coll, id, prior)
		if err != nil {
			return zero, wrap(op, err)
		}
		write, err := withMarker(doc, intent.marker(prior))
		if err != nil {
			intent.abandon(ctx, s)
			return zero, wrap(op, err)
		}
		matched, err := s.replaceClaimed(ctx, coll, cur, write)
		if err != nil {
			// The replace may have been made: its staged entry stays, for RecoverAudit
			// to append if the document carries it.
			return zero, wrap(op, err)
		}
		if matched {
			intent.settle(ctx, s)
			return doc, nil
		}
		intent.abandon(ctx, s)
		if err := backoff(ctx, attempt); err != nil {
			return zero, wrap(op, err)
		}
	}
}

// claimDoc reserves the write of one version of one document.
type claimDoc struct {
	ID    string    `bson:"_id"`   // versionClaimID, lockClaimID or takeoverID
	Owner string    `bson:"owner"` // see versioned.claimKey
	At    time.Time `bson:"at"`
	// Holder names the insert that took the claim with others (takeClaims), so that
	// the claims one insert got are told from others' by one read; empty for one alone.
	Holder string `bson:"holder,omitempty"`
}

// The claim ids, one spelling each: the claim of a record's next version (updateDoc and
// every writer that holds one), the lock of an unversioned document (lockDoc), and the
// takeover document of a stale claim (clearStaleClaim).

// versionClaimID names the claim of version of document id of coll.
func versionClaimID(coll *mongo.Collection, id string, version int64) string {
	return fmt.Sprintf("%s/%s#%d", coll.Name(), id, version)
}

// lockClaimID names the lock of document id of coll.
func lockClaimID(coll *mongo.Collection, id string) string {
	return coll.Name() + "/" + id + "#lock"
}

// takeoverID names the takeover document of the claim id taken at at.
func takeoverID(id string, at time.Time) string {
	return fmt.Sprintf("%s~%d", id, at.UnixMilli())
}

// claimLease is how long a claim protects its version. A claim older than this is taken to
// be left by an updater that died between claiming and releasing, and is removed so that
// the record does not stay locked. An updater's own replace is bounded to half of it.
const claimLease = 30 * time.Second

// replaceClaimed writes next over cur in coll if cur is still the stored version. It
// answers false when another updater got there first (or holds the claim), and the caller
// starts again.
func (s *Store) replaceClaimed(ctx context.Context, coll *mongo.Collection, cur versioned, next any) (bool, error) {
	id, version, _ := cur.claimKey()
	release, claimed, err := s.claimNextVersion(ctx, coll, cur)
	if !claimed {
		return false, err
	}
	defer release()
	wctx, cancel := context.WithTimeout(ctx, claimLease/2)
	defer cancel()
	res, err := coll.ReplaceOne(wctx, bson.D{{Key: "_id", Value: id}, {Key: "version", Value: version}}, next)
	if err != nil {
		return false, err
	}
	return res.MatchedCount == 1, nil
}

// claimNextVersion takes the claim of cur's next version in coll: one updater at a time
// holds it. It answers false when another updater holds it (clearing it when it outlived
// claimLease). release removes the claim even if ctx is cancelled meanwhile: a claim left
// behind blocks this version for the whole lease.
func (s *Store) claimNextVersion(ctx context.Context, coll *mongo.Collection, cur versioned) (release func(), claimed bool, err error) {
	id, version, owner := cur.claimKey()
	return s.takeClaim(ctx, versionClaimID(coll, id, version+1), owner)
}

// takeClaim takes the claim named id for owner (whose deletion removes it): one holder at
// a time. It answers false when another holds it (clearing it when it outlived
// claimLease); release removes it even if ctx is cancelled meanwhile.
func (s *Store) takeClaim(ctx context.Context, id, owner string) (release func(), claimed bool, err error) {
	claim := claimDoc{ID: id, Owner: owner, At: storage.Now()}
	if _, err := s.claims.InsertOne(ctx, claim); err != nil {
		if !isDuplicateKey(err) {
			return nil, false, err
		}
		return nil, false, s.clearStaleClaim(ctx, claim.ID)
	}
	return func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		_, _ = s.claims.DeleteOne(rctx, bson.D{{Key: "_id", Value: claim.ID}})
	}, true, nil
}

// clearStaleClaim removes the claim id if it has outlived claimLease. The delete is
// filtered by the claim's time, so a fresh claim made under the same id meanwhile stays;
// on FerretDB 1.x that filter is checked by a read before a delete by _id, so two clearers
// of one stale claim could have the slower one delete a fresh claim taken in between.
// Only one clearer of a stale claim goes on: the one that inserts its takeover document
// (takeoverID: "<id>~<its time>"; one per claim an updater left behind).
//
// A claim with an owner leaves its takeover document in place, swept with the owner
// (deleteClaims). One without (a document's lock: an API key's, an owner session's, the
// event log's hint, taken with owner "") has no sweep, so its takeover document goes once
// the stale claim is deleted: it is needed only until then. A clearer that comes later
// with the same stale read inserts it again and deletes nothing, because its delete is
// filtered by the stale claim's time, which no fresh claim has (claims taken in the
// lease since). A takeover document is left only by a clearer that stops in between.
func (s *Store) clearStaleClaim(ctx context.Context, id string) error {
	var c claimDoc
	err := s.claims.FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&c)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return nil // released meanwhile
	}
	if err != nil {
		return err
	}
	if time.Since(c.At) < claimLease {
		return nil
	}
	takeover := claimDoc{ID: takeoverID(id, c.At), Owner: c.Owner, At: storage.Now()}
	if _, err := s.claims.InsertOne(ctx, takeover); err != nil {
		if isDuplicateKey(err) {
			// Another clearer has it, unless that clearer stopped before it was done (a
			// crash between its two writes): a takeover older than a lease is removed, so
			// that the next clearer takes over again (filtered by its time: of two that
			// find it, one removes it).
			var t claimDoc
			if s.claims.FindOne(ctx, bson.D{{Key: "_id", Value: takeover.ID}}).Decode(&t) == nil && time.Since(t.At) >= claimLease {
				_, _ = s.claims.DeleteOne(ctx, bson.D{{Key: "_id", Value: takeover.ID}, {Key: "at", Value: t.At}})
			}
			return nil
		}
		return err
	}
	// From here on even if ctx is cancelled: the takeover document stops every other
	// clearer, so a stale claim it leaves behind would stay.
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	if _, err := s.claims.DeleteOne(dctx, bson.D{{Key: "_id", Value: id}, {Key: "at", Value: c.At}}); err != nil {
		// A later clearer tries again: the takeover would stop every one.
		_, _ = s.claims.DeleteOne(dctx, bson.D{{Key: "_id", Value: takeover.ID}})
		return err
	}
	if c.Owner == "" {
		_, err = s.claims.DeleteOne(dctx, bson.D{{Key: "_id", Value: takeover.ID}})
	}
	return err
}

// deleteClaims removes the claims of an owner whose records are being deleted. Only claims
// of updaters that died are left to find; they would block nothing (a record created again
// under the same id starts at a new random version) but would otherwise stay forever.
func (s *Store) deleteClaims(ctx context.Context, owner string) error {
	_, err := s.claims.DeleteMany(ctx, bson.D{{Key: "owner", Value: owner}})
	return err
}

// backoff sleeps a little, more as attempts grow, with jitter so that colliding updaters
// spread out. It gives up after maxAttempts, so that a bug can never spin forever.
func backoff(ctx context.Context, attempt int) error {
	if attempt >= maxAttempts {
		return fmt.Errorf("gave up after %d attempts under contention", attempt+1)
	}
	d := time.Duration(rand.Int64N(int64(time.Millisecond) << min(attempt, 6)))
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

const maxAttempts = 200

// parentRef names the record a new record belongs to: the app of a user, license or token,
// the user of a device.
type parentRef struct {
	what   string
	coll   *mongo.Collection
	filter bson.D
	// want is how many documents filter must match (0 means 1): the parents of a batch
	// are checked with one $in query per collection, not one query per parent, so that a
	// batch of n records costs the same few round trips whatever n is.
	want int64
}

// insertOwned inserts docs into coll, all or none, and only while their parents exist.
//
// There are no transactions on FerretDB, so all-or-nothing is done by hand: when the
// insert fails part-way (a duplicate key aborts an ordered InsertMany, but FerretDB may
// have written other documents of the batch, including ones after the failing one), the
// documents this call wrote are deleted again. undo selects exactly those: their ids
// together with the version the whole batch was created at (see newVersion), so that a
// document that already existed under one of the ids is never taken for one of ours.
// Until the undo, readers can see part of the batch; and a document of the batch updated
// in that instant (its version changed) would survive the undo.
//
// The parents are checked after the insert, not before, as CreateAccountToken does:
// deletions remove the parent first and then sweep its children, so either the check sees
// the parent gone (and the new documents are undone, answering ErrNotFound), or the parent
// was still there when they were written and the sweep that follows removes them.
func (s *Store) insertOwned(ctx context.Context, op string, coll *mongo.Collection, docs []any, undo bson.D, parents []parentRef) error {
	if len(docs) == 0 {
		return nil
	}
	docs, intent, err := s.stageCreation(ctx, coll, docs)
	if err != nil {
		return wrap(op, err)
	}
	if len(docs) == 1 {
		// One document is inserted or not: nothing to undo on failure.
		if _, err = coll.InsertOne(ctx, docs[0]); err != nil {
			if isDuplicateKey(err) { // not made; else it may be, and RecoverAudit decides
				intent.abandon(ctx, s)
			}
			return wrap(op, err)
		}
	} else if _, err = coll.InsertMany(ctx, docs, options.InsertMany().SetOrdered(true)); err != nil {
		intent.abandon(ctx, s)
		return s.undoInsert(ctx, op, coll, undo, wrap(op, err))
	}
	for _, p := range parents {
		want := max(p.want, 1)
		var n int64
		var err error
		if want == 1 {
			var ok bool
			ok, err = exists(ctx, p.coll, p.filter)
			if ok {
				n = 1
			}
		} else {
			n, err = p.coll.CountDocuments(ctx, p.filter, options.Count().SetLimit(want))
		}
		if err != nil {
			intent.abandon(ctx, s)
			return s.undoInsert(ctx, op, coll, undo, wrap(op+": check "+p.what, err))
		}
		if n < want {
			intent.abandon(ctx, s)
			return s.undoInsert(ctx, op, coll, undo, wrap(op+": "+p.what, mongo.ErrNoDocuments))
		}
	}
	intent.settle(ctx, s)
	return nil
}

// stageCreation stages the audit entry of a creation (stageAudit), confirmed by the first
// of docs, which it answers carrying the entry's id (the others as they are).
func (s *Store) stageCreation(ctx context.Context, coll *mongo.Collection, docs []any) ([]any, *auditIntent, error) {
	if storage.EventOutboxFrom(ctx) == nil || storage.AuditOutboxFrom(ctx) == nil {
		return docs, nil, nil
	}
	first, err := withMarker(docs[0], "-")
	if err != nil {
		return nil, nil, err
	}
	d := first.(bson.D)
	var id string
	for _, e := range d {
		if e.Key == "_id" {
			id, _ = e.Value.(string)
		}
	}
	intent, err := s.stageAudit(ctx, coll, id, "")
	if intent == nil || err != nil {
		return docs, nil, err
	}
	for i := range d {
		if d[i].Key == auditMarker {
			d[i].Value = intent.e.ID
		}
	}
	return append([]any{d}, docs[1:]...), intent, nil
}

// undoInsert deletes what a failed insertOwned wrote and answers cause, joined with the
// undo's own failure if any. The undo runs even if ctx was cancelled: half a batch must
// not stay behind because the caller gave up.
func (s *Store) undoInsert(ctx context.Context, op string, coll *mongo.Collection, undo bson.D, cause error) error {
	uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*cleanupTimeout)
	defer cancel()
	if _, err := coll.DeleteMany(uctx, undo); err != nil {
		return errors.Join(cause, wrap(op+": undo partial insert", err))
	}
	return cause
}

// batchUndo is the undo filter of a batch inserted by insertOwned.
func batchUndo(ids []string, version int64) bson.D {
	return bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: ids}}}, {Key: "version", Value: version}}
}

// appParents answers the distinct apps of a batch, to be checked by insertOwned with one
// query.
func (s *Store) appParents(appIDs []string) []parentRef {
	ids := distinct(appIDs)
	if len(ids) == 0 {
		return nil
	}
	if len(ids) == 1 {
		return []parentRef{{what: "app " + ids[0], coll: s.apps, filter: bson.D{{Key: "_id", Value: ids[0]}}}}
	}
	return []parentRef{{what: fmt.Sprintf("%d apps", len(ids)), coll: s.apps,
		filter: bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: ids}}}}, want: int64(len(ids))}}
}

// distinct answers the values of ss without repeats, in their first order.
func distinct(ss []string) []string {
	seen := make(map[string]bool, len(ss))
	out := make([]string, 0, len(ss))
	for _, v := range ss {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}

// searchRegex is a case-insensitive literal substring match. $regex with a quoted pattern
// is a search that FerretDB and MongoDB both run; it is applied to lower-cased copies, like
// the SQLite engine, so that both engines fold case the same way, and "i" keeps it
// case-blind regardless.
func searchRegex(s string) bson.Regex {
	return bson.Regex{Pattern: regexp.QuoteMeta(strings.ToLower(s)), Options: "i"}
}

// searchAny adds to filter a match of search on any of the lower-cased fields.
func searchAny(filter bson.D, search string, lowerFields ...string) bson.D {
	if search == "" {
		return filter
	}
	re := searchRegex(search)
	ors := make(bson.A, len(lowerFields))
	for i, f := range lowerFields {
		ors[i] = bson.D{{Key: f, Value: re}}
	}
	return append(filter, bson.E{Key: "$or", Value: ors})
}

// sortBy sorts on field with _id breaking ties so that pages are stable; desc reverses the
// whole order. A missing field (a zero time) sorts as null, before every value.
func sortBy(field string, desc bool) bson.D {
	dir := 1
	if desc {
		dir = -1
	}
	return bson.D{{Key: field, Value: dir}, {Key: "_id", Value: dir}}
}

// expiredBy matches documents whose field is set and not after now; a zero time is left
// out of the document, and a missing field never compares with a date.
func expiredBy(field string, now time.Time) bson.E {
	return bson.E{Key: field, Value: bson.D{{Key: "$lte", Value: now}}}
}

// listDocs counts the documents matching filter and reads one page of them. The page and
// the total are two reads without a common snapshot (FerretDB has no transactions), so
// under concurrent writes the total may be off by the records written in between.
func listDocs[D any, R any](ctx context.Context, coll *mongo.Collection, op string, filter, sort bson.D, p storage.Page,
	record func(D) R,
) ([]R, int, error) {
	p = p.Normalize()
	total, err := coll.CountDocuments(ctx, filter)
	if err != nil {
		return nil, 0, wrap(op+": count", err)
	}
	cur, err := coll.Find(ctx, filter, options.Find().SetSort(sort).SetSkip(int64(p.Offset)).SetLimit(int64(p.Limit)))
	if err != nil {
		return nil, 0, wrap(op, err)
	}
	var docs []D
	if err := cur.All(ctx, &docs); err != nil {
		return nil, 0, wrap(op, err)
	}
	out := make([]R, len(docs))
	for i, d := range docs {
		out[i] = record(d)
	}
	return out, int(total), nil
}

// findDoc reads one document of coll.
func findDoc[D any](ctx context.Context, coll *mongo.Collection, op string, filter bson.D) (D, error) {
	var d D
	raw, err := findOneRaw(ctx, coll, filter, nil)
	if err == nil {
		err = bson.Unmarshal(raw, &d)
	}
	if err != nil {
		var zero D
		return zero, wrap(op, err)
	}
	return d, nil
}

// count answers how many documents of coll match filter.
func count(ctx context.Context, coll *mongo.Collection, op string, filter bson.D) (int, error) {
	n, err := coll.CountDocuments(ctx, filter)
	if err != nil {
		return 0, wrap(op, err)
	}
	return int(n), nil
}

// deleteOne removes the document matching filter, answering ErrNotFound when none did.
// Its audit entry is staged first and confirmed by the deletion (stageDelete).
func deleteOne(ctx context.Context, s *Store, coll *mongo.Collection, op string, filter bson.D) error {
	intent, err := s.stageDelete(ctx, coll, filter)
	if err != nil {
		return wrap(op, err)
	}
	res, err := coll.DeleteOne(ctx, filter)
	if err != nil {
		return wrap(op, err) // it may be made: RecoverAudit decides by the document
	}
	if res.DeletedCount == 0 {
		intent.abandon(ctx, s)
		return wrap(op, mongo.ErrNoDocuments)
	}
	intent.settle(ctx, s)
	return nil
}

// byApp filters on a record of an app by id: the app is part of the key, so a record of
// another app is not found.
func byApp(appID, id string) bson.D {
	return bson.D{{Key: "_id", Value: id}, {Key: "appId", Value: appID}}
}

// ofApp answers the id and app of a byApp filter; ok is false for any other filter.
func ofApp(filter bson.D) (id, appID string, ok bool) {
	if len(filter) != 2 || filter[0].Key != "_id" || filter[1].Key != "appId" {
		return "", "", false
	}
	id, okID := filter[0].Value.(string)
	appID, okApp := filter[1].Value.(string)
	return id, appID, okID && okApp
}

// exists answers whether a document of coll matches filter, read as findOneRaw reads it
// (by _id and owner for a byApp filter, any other filter as it is).
func exists(ctx context.Context, coll *mongo.Collection, filter bson.D) (bool, error) {
	_, err := findOneRaw(ctx, coll, filter, bson.D{{Key: "_id", Value: 1}})
	if errors.Is(err, mongo.ErrNoDocuments) {
		return false, nil
	}
	return err == nil, err
}

// findOneRaw reads the document of coll matching filter, with projection when it is not
// nil. A byApp filter is looked up by _id alone and its app checked here: FerretDB 1.24
// (SQLite backend) uses the _id index only for a filter of _id alone and reads every
// document of the collection for {_id, appId} (a find in a collection of 20,000 took 0.7
// ms by _id and 107 ms by both). A record never moves to another app, so the answer is
// the filter's. mongo.ErrNoDocuments when none matches.
func findOneRaw(ctx context.Context, coll *mongo.Collection, filter, projection bson.D) (bson.Raw, error) {
	id, appID, scoped := ofApp(filter)
	opts := options.FindOne()
	if projection != nil {
		if scoped {
			projection = append(projection[:len(projection):len(projection)], bson.E{Key: "appId", Value: 1})
		}
		opts.SetProjection(projection)
	}
	if !scoped {
		return coll.FindOne(ctx, filter, opts).Raw()
	}
	raw, err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: id}}, opts).Raw()
	if err != nil {
		return nil, err
	}
	if got, _ := raw.Lookup("appId").StringValueOK(); got != appID {
		return nil, mongo.ErrNoDocuments
	}
	return raw, nil
}

// distinctStrings answers the distinct values of a string field over the documents of coll
// matching filter, in no particular order. Unwrapped: callers wrap with their op.
func distinctStrings(ctx context.Context, coll *mongo.Collection, field string, filter bson.D) ([]string, error) {
	res := coll.Distinct(ctx, field, filter)
	if err := res.Err(); err != nil {
		return nil, err
	}
	var out []string
	if err := res.Decode(&out); err != nil {
		return nil, err
	}
	return out, nil
}

// findIDs answers the ids of the documents of coll matching filter, read through a cursor
// (a distinct command answers one document, which caps it at 16 MB on MongoDB).
// Unwrapped: callers wrap with their op.
func findIDs(ctx context.Context, coll *mongo.Collection, filter bson.D) ([]string, error) {
	cur, err := coll.Find(ctx, filter, options.Find().SetProjection(bson.D{{Key: "_id", Value: 1}}))
	if err != nil {
		return nil, err
	}
	var docs []struct {
		ID string `bson:"_id"`
	}
	if err := cur.All(ctx, &docs); err != nil {
		return nil, err
	}
	ids := make([]string, len(docs))
	for i, d := range docs {
		ids[i] = d.ID
	}
	return ids, nil
}
