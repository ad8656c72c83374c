package mongo

import (
	"context"
	"errors"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/keyward/keyward/storage"
)

// The delivery queue (webhookDeliveries) holds the pending deliveries only; a finished
// one moves to the history (webhookHistory), and a redelivered one back. The claims read
// the queue alone: FerretDB 1.24 filters in Go every query but an exact {_id}, so the
// queue must stay as small as what is due or in flight, whatever the retention keeps.
//
// A move is two writes to two collections and FerretDB has no multi-document
// transactions, so a process that dies between them leaves both copies. The writes are
// ordered so that either copy alone, or both, read as the delivery it is:
//
//   - Out of the queue (moveDelivery): the history copy first, under the same id, at the
//     next version, then the queue copy is deleted. A copy left in the queue is the one
//     the finishing worker had claimed: it still carries that worker's lease and an older
//     version than the history's. Readers (readDelivery) that meet a leased queue copy
//     look in the history, and a newer copy there wins; ClaimDeliveries does the same
//     before it claims a delivery whose lease ended, and deletes the stale copy instead
//     of sending it again. So the delivery is neither lost (the history has it before
//     the queue lets it go) nor sent twice.
//   - Back into the queue (requeueDelivery): the queue copy first, inserted (a copy
//     already there under the id refuses it), then the history copy is deleted at the
//     version read. A history copy left behind is older than the queue's; the queue copy
//     wins, and the delivery's next finish replaces the history copy under the claim the
//     redelivery held (replaceLeftHistory), never while that redelivery still runs.
//
// On MongoDB every step is an indexed point read or write. Claims and the version checks
// are those of every versioned update (claimNextVersion), per collection.

// historyOf reports whether a delivery in state belongs to the history.
func historyOf(state string) bool {
	return state == storage.DeliveryDelivered || state == storage.DeliveryFailed
}

// deliveryColl answers the collection a delivery in state is kept in.
func (s *Store) deliveryColl(state string) *mongo.Collection {
	if historyOf(state) {
		return s.history
	}
	return s.deliveries
}

// CreateDeliveries inserts every delivery, all or none: pending ones into the queue with
// one InsertMany, finished ones (a restore, an older version's records) into the history
// with another (see insertOwned). A delivery id is unique across both: after the inserts
// each id is looked up in the other collection (a point read by _id), and a taken one
// undoes the whole call and answers ErrConflict. The check comes after the insert
// because a move writes the history before it deletes from the queue: an insert into the
// queue that succeeded came after the queue copy of a finishing delivery was deleted, so
// its history copy is found. There is no parent check: a delivery of an integration
// deleted meanwhile is removed by ClaimDeliveries, and one of an app deleted meanwhile
// has no integration either.
func (s *Store) CreateDeliveries(ctx context.Context, ds []storage.Delivery) error {
	const op = "create deliveries"
	version := newVersion()
	var queued, finished []storage.Delivery
	for _, d := range ds {
		if historyOf(d.State) {
			finished = append(finished, d)
		} else {
			queued = append(queued, d)
		}
	}
	type part struct {
		coll, other *mongo.Collection
		ds          []storage.Delivery
		undo        bson.D
	}
	parts := []part{{coll: s.deliveries, other: s.history, ds: queued}, {coll: s.history, other: s.deliveries, ds: finished}}
	var written []part
	undoAll := func(cause error) error {
		for _, p := range written {
			cause = s.undoInsert(ctx, op, p.coll, p.undo, cause)
		}
		return cause
	}
	for i := range parts {
		p := &parts[i]
		if len(p.ds) == 0 {
			continue
		}
		docs := make([]any, len(p.ds))
		ids := make([]string, len(p.ds))
		for k, d := range p.ds {
			docs[k], ids[k] = toDeliveryDoc(d, version), d.ID
		}
		p.undo = batchUndo(ids, version)
		if err := s.insertOwned(ctx, op, p.coll, docs, p.undo, nil); err != nil {
			return undoAll(err)
		}
		written = append(written, *p)
	}
	for _, p := range written {
		for _, d := range p.ds {
			err := p.other.FindOne(ctx, bson.D{{Key: "_id", Value: d.ID}},
				options.FindOne().SetProjection(bson.D{{Key: "_id", Value: 1}})).Err()
			switch {
			case errors.Is(err, mongo.ErrNoDocuments):
				continue
			case err != nil:
				return undoAll(wrap(op+": check ids", err))
			}
			return undoAll(fmt.Errorf("mongo: %s: delivery %s: %w", op, d.ID, storage.ErrConflict))
		}
	}
	return nil
}

// UpdateDelivery applies fn to the delivery, in the queue or in the history, under a
// version claim (see updateDoc). What the delivery is — id, app, integration, event and
// payload — and its creation time are kept. A delivery fn finishes moves to the history,
// one it makes pending moves back to the queue (see the top of this file).
func (s *Store) UpdateDelivery(ctx context.Context, id string, fn func(*storage.Delivery) error) (storage.Delivery, error) {
	d, err := updateDelivery(ctx, s, "update delivery", id, nil,
		func(cur deliveryDoc) (deliveryDoc, error) {
			next := cur.delivery()
			if err := fn(&next); err != nil {
				return deliveryDoc{}, err
			}
			doc := toDeliveryDoc(next, cur.Version+1)
			doc.ID, doc.AppID, doc.IntegrationID, doc.CreatedAt = cur.ID, cur.AppID, cur.IntegrationID, cur.CreatedAt
			doc.EventID, doc.Event, doc.Payload = cur.EventID, cur.Event, cur.Payload
			return doc, nil
		})
	if err != nil {
		return storage.Delivery{}, err
	}
	return d.delivery(), nil
}

// updateDelivery is updateDoc for deliveries (every claim and every recorded attempt
// goes through it), with each read and write filtered by _id alone, and the move between
// the queue and the history when the state says so.
//
// Why _id alone: FerretDB 1.24 on SQLite hands a filter to SQL only when it is exactly
// {_id}; any other filter, updateDoc's {_id, version} included, makes it read and decode
// documents in Go one by one until the match. Filtered by _id, SQLite finds the row by
// its index. The version is compared by a read after the claim instead (see
// replaceClaimedByID); on MongoDB every step is an indexed point read or write.
//
// read, when not nil, is the delivery as the caller just read it from the queue: the
// first attempt starts from it instead of reading again (a stale one fails the version
// check and is read anew).
func updateDelivery(ctx context.Context, s *Store, op, id string, read *deliveryDoc, next func(cur deliveryDoc) (deliveryDoc, error)) (deliveryDoc, error) {
	for attempt := 0; ; attempt++ {
		var (
			cur  deliveryDoc
			from *mongo.Collection
			err  error
		)
		if attempt == 0 && read != nil {
			cur, from = *read, s.deliveries
		} else if cur, from, err = s.readDelivery(ctx, id); err != nil {
			return deliveryDoc{}, wrap(op, err)
		}
		doc, err := next(cur)
		if err != nil {
			return deliveryDoc{}, err
		}
		to := s.deliveryColl(doc.State)
		// The change's audit entry (a redelivery's, marked by audit.Own) is staged and
		// confirmed by this write; every write and move keeps the marker the delivery
		// carries, so a staged entry stays confirmed whichever collection holds it
		// (confirmed reads both).
		intent, err := s.stageAudit(ctx, to, cur.ID, cur.AuditPending)
		if err != nil {
			return deliveryDoc{}, wrap(op, err)
		}
		doc.AuditPending = intent.marker(cur.AuditPending)
		var matched bool
		switch {
		case to == from:
			matched, err = s.replaceClaimedByID(ctx, from, cur, doc)
		case from == s.deliveries:
			matched, err = s.moveDelivery(ctx, cur, doc)
		default:
			matched, err = s.requeueDelivery(ctx, cur, doc)
		}
		if err != nil {
			return deliveryDoc{}, wrap(op, err) // it may be made: RecoverAudit decides
		}
		if matched {
			intent.settle(ctx, s)
			return doc, nil
		}
		intent.abandon(ctx, s)
		if err := backoff(ctx, attempt); err != nil {
			return deliveryDoc{}, wrap(op, err)
		}
	}
}

// readRounds bounds readDelivery's rounds (see there).
const readRounds = 8

// readDelivery reads the delivery by id from the queue, else from the history, and
// answers the collection it was read from. A leased queue copy that a move left behind
// (see the top of this file) gives way to the history's: it is deleted on the way.
//
// The two reads are not one snapshot: a redelivery that moves the delivery from the
// history into the queue between them makes both miss. A miss in both is read again,
// a few rounds, before it answers not found (a delivery that is gone misses fast).
func (s *Store) readDelivery(ctx context.Context, id string) (deliveryDoc, *mongo.Collection, error) {
	byID := bson.D{{Key: "_id", Value: id}}
	var err error
	for range readRounds {
		var cur deliveryDoc
		err = s.deliveries.FindOne(ctx, byID).Decode(&cur)
		switch {
		case err == nil:
			if cur.LeaseOwner == "" {
				return cur, s.deliveries, nil
			}
			stale, h, err := s.queuedCopyIsStale(ctx, cur)
			if err != nil {
				return deliveryDoc{}, nil, err
			}
			if !stale {
				return cur, s.deliveries, nil
			}
			s.dropStaleQueued(ctx, cur)
			return h, s.history, nil
		case !errors.Is(err, mongo.ErrNoDocuments):
			return deliveryDoc{}, nil, err
		}
		err = s.history.FindOne(ctx, byID).Decode(&cur)
		if !errors.Is(err, mongo.ErrNoDocuments) {
			return cur, s.history, err
		}
	}
	return deliveryDoc{}, nil, err
}

// queuedCopyIsStale reports whether the history holds a newer copy of the queued
// delivery q (a move out of the queue stopped between its writes), and answers it.
func (s *Store) queuedCopyIsStale(ctx context.Context, q deliveryDoc) (bool, deliveryDoc, error) {
	var h deliveryDoc
	err := s.history.FindOne(ctx, bson.D{{Key: "_id", Value: q.ID}}).Decode(&h)
	switch {
	case errors.Is(err, mongo.ErrNoDocuments):
		return false, deliveryDoc{}, nil
	case err != nil:
		return false, deliveryDoc{}, err
	}
	return h.Version > q.Version, h, nil
}

// dropStaleQueued finishes a move that stopped after its history write: it deletes the
// queue copy q under q's next version claim, so that an updater of q (none should be
// left) is not overtaken. A failure is left for the next reader or claimer to retry:
// until then the history's copy wins.
func (s *Store) dropStaleQueued(ctx context.Context, q deliveryDoc) {
	release, claimed, err := s.claimNextVersion(ctx, s.deliveries, q)
	if !claimed || err != nil {
		return
	}
	defer release()
	wctx, cancel := context.WithTimeout(ctx, claimLease/2)
	defer cancel()
	if ok, err := s.versionIs(wctx, s.deliveries, q.ID, q.Version); ok && err == nil {
		_, _ = s.deliveries.DeleteOne(wctx, bson.D{{Key: "_id", Value: q.ID}})
	}
}

// versionIs reads the stored version of the document id (a point read by _id) and
// reports whether it is version; false when the document is gone.
func (s *Store) versionIs(ctx context.Context, coll *mongo.Collection, id string, version int64) (bool, error) {
	var stored struct {
		Version int64 `bson:"version"`
	}
	err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: id}}, options.FindOne().SetProjection(bson.D{{Key: "version", Value: 1}})).Decode(&stored)
	switch {
	case errors.Is(err, mongo.ErrNoDocuments):
		return false, nil
	case err != nil:
		return false, err
	}
	return stored.Version == version, nil
}

// moveDelivery writes next (finished) into the history in place of the queued cur, under
// cur's next version claim: the history copy first, then the queue copy goes (see the top
// of this file). Once the history copy is written the update has happened, so a failed
// delete still answers true: the stale queue copy is settled by the next reader or
// claimer.
func (s *Store) moveDelivery(ctx context.Context, cur, next deliveryDoc) (bool, error) {
	release, claimed, err := s.claimNextVersion(ctx, s.deliveries, cur)
	if !claimed {
		return false, err
	}
	defer release()
	wctx, cancel := context.WithTimeout(ctx, claimLease/2)
	defer cancel()
	if ok, err := s.versionIs(wctx, s.deliveries, cur.ID, cur.Version); !ok || err != nil {
		return false, err // another updater wrote first, or it was deleted meanwhile
	}
	byID := bson.D{{Key: "_id", Value: cur.ID}}
	// An insert, the common case (FerretDB runs an upsert as a query and then a write);
	// a copy left by a redelivery is replaced under the redelivery's own claim
	// (replaceLeftHistory).
	if _, err := s.history.InsertOne(wctx, next); isDuplicateKey(err) {
		if ok, err := s.replaceLeftHistory(wctx, next); !ok || err != nil {
			return false, err
		}
	} else if err != nil {
		return false, err
	}
	_, _ = s.deliveries.DeleteOne(wctx, byID)
	return true, nil
}

// replaceLeftHistory replaces with next the history copy that a redelivery
// (requeueDelivery) left: the one whose queue copy the move read. That redelivery may
// still be under way, about to delete the copy at its version. FerretDB 1.24 runs a
// delete or replace filtered by more than _id as a read and then a write by _id, so
// neither is atomic against the other: the redelivery's delete could take the copy this
// move just wrote, or this replace could match nothing once the copy went; either way the
// move would then delete the last copy from the queue. So the replace takes the claim the
// redelivery holds while it runs (the history copy's next version): it answers false,
// for the caller to read again, while that redelivery is under way or once the copy
// changed.
func (s *Store) replaceLeftHistory(ctx context.Context, next deliveryDoc) (bool, error) {
	var left deliveryDoc
	err := s.history.FindOne(ctx, bson.D{{Key: "_id", Value: next.ID}}).Decode(&left)
	switch {
	case errors.Is(err, mongo.ErrNoDocuments):
		return false, nil // the redelivery deleted it meanwhile: the caller tries again
	case err != nil:
		return false, err
	}
	release, claimed, err := s.claimNextVersion(ctx, s.history, left)
	if !claimed {
		return false, err
	}
	defer release()
	if ok, err := s.versionIs(ctx, s.history, left.ID, left.Version); !ok || err != nil {
		return false, err
	}
	res, err := s.history.ReplaceOne(ctx, bson.D{{Key: "_id", Value: next.ID}}, next)
	if err != nil {
		return false, err
	}
	return res.MatchedCount == 1, nil
}

// requeueDelivery writes next (pending) into the queue in place of cur, read from the
// history, under cur's next version claim in the history: the queue copy first, by an
// insert that a queue copy under the id refuses (a move out of the queue under way: the
// caller reads again), then the history copy at cur's version goes. That delete filters
// by version as well as _id; FerretDB evaluates such a filter in Go and then deletes by
// _id, which is not atomic, so what keeps it from taking a newer copy the delivery's next
// finish writes is the claim held here, which that finish takes before it replaces the
// copy (replaceLeftHistory). The Go-side filter costs a read of the history, which a
// redelivery (an owner's click) can afford and the queue's claims never do.
func (s *Store) requeueDelivery(ctx context.Context, cur, next deliveryDoc) (bool, error) {
	release, claimed, err := s.claimNextVersion(ctx, s.history, cur)
	if !claimed {
		return false, err
	}
	defer release()
	wctx, cancel := context.WithTimeout(ctx, claimLease/2)
	defer cancel()
	if ok, err := s.versionIs(wctx, s.history, cur.ID, cur.Version); !ok || err != nil {
		return false, err
	}
	if _, err := s.deliveries.InsertOne(wctx, next); err != nil {
		if isDuplicateKey(err) {
			return false, nil
		}
		return false, err
	}
	_, _ = s.history.DeleteOne(wctx, bson.D{{Key: "_id", Value: cur.ID}, {Key: "version", Value: cur.Version}})
	return true, nil
}

// MoveFinishedDeliveries moves up to n finished deliveries that an older version left in
// the queue to the history, each as a finish moves it (moveDelivery). On FerretDB the
// query filters the queue in Go; the worker calls it in rounds of a few hundred at start,
// between its claims, until a round finds fewer than it asked for.
func (s *Store) MoveFinishedDeliveries(ctx context.Context, n int) (int, error) {
	const op = "move finished deliveries"
	if n <= 0 {
		return 0, nil
	}
	c, err := s.deliveries.Find(ctx, bson.D{
		{Key: "state", Value: bson.D{{Key: "$in", Value: bson.A{storage.DeliveryDelivered, storage.DeliveryFailed}}}},
	}, options.Find().SetLimit(int64(n)))
	if err != nil {
		return 0, wrap(op, err)
	}
	var docs []deliveryDoc
	if err := c.All(ctx, &docs); err != nil {
		return 0, wrap(op, err)
	}
	moved := 0
	for i := range docs {
		_, err := updateDelivery(ctx, s, op, docs[i].ID, &docs[i], func(cur deliveryDoc) (deliveryDoc, error) {
			next := cur
			next.Version++
			return next, nil
		})
		switch {
		case errors.Is(err, storage.ErrNotFound):
			continue // deleted meanwhile
		case err != nil:
			return moved, err
		}
		moved++
	}
	return moved, nil
}

// IntegrationsOverHistory answers the integrations whose history holds more than moreThan
// finished deliveries, with one $group over the history (on FerretDB a pass over it in
// Go, like the hourly PurgeDeliveries).
func (s *Store) IntegrationsOverHistory(ctx context.Context, moreThan int) ([]storage.IntegrationRef, error) {
	return integrationsOver(ctx, s.history, "integrations over history", moreThan)
}

// IntegrationsOverAttempts answers the integrations having more than moreThan attempts,
// with one $group over the attempts.
func (s *Store) IntegrationsOverAttempts(ctx context.Context, moreThan int) ([]storage.IntegrationRef, error) {
	return integrationsOver(ctx, s.attempts, "integrations over attempts", moreThan)
}

// integrationsOver answers the (appId, integrationId) pairs of more than moreThan
// documents of coll, sorted.
func integrationsOver(ctx context.Context, coll *mongo.Collection, op string, moreThan int) ([]storage.IntegrationRef, error) {
	type key struct {
		AppID         string `bson:"appId"`
		IntegrationID string `bson:"integrationId"`
	}
	groups, err := aggregate[bucketCount[key]](ctx, coll, op, mongo.Pipeline{
		countBy(bson.D{{Key: "appId", Value: "$appId"}, {Key: "integrationId", Value: "$integrationId"}}),
		match(bson.D{{Key: "n", Value: bson.D{{Key: "$gt", Value: max(moreThan, 0)}}}}),
		{{Key: "$sort", Value: bson.D{{Key: "_id.appId", Value: 1}, {Key: "_id.integrationId", Value: 1}}}},
	})
	if err != nil {
		return nil, err
	}
	out := make([]storage.IntegrationRef, 0, len(groups))
	for _, g := range groups {
		out = append(out, storage.IntegrationRef{AppID: g.ID.AppID, IntegrationID: g.ID.IntegrationID})
	}
	return out, nil
}

// TrimDeliveries removes up to n of the integration's finished deliveries beyond its
// newest keep, the newest of them first. It reads the ids and versions of up to n
// deliveries past the newest keep (newestBeyond: one indexed read on MongoDB, one pass on
// FerretDB), and deletes those by _id alone, each under its next version claim.
//
// Why ids, claims and _id: FerretDB 1.24 has no multi-document transactions and runs a
// write filtered by more than _id as a read, then a write by _id; a DeleteMany by
// updatedAt (or by _id and version) is therefore not atomic against a redelivery and
// the finish that follows it, which write the same _id again (see the top of this file).
// Deleted by _id without a check, a copy that a redelivery and a new finish wrote since
// the read would go, with it the newest history of the delivery
// (DeliveryTrimRacesRedeliveries caught that about one run in ten). So each selected
// copy is deleted only under the claim of its next version, the one requeueDelivery and
// replaceLeftHistory take before they touch a history copy, and only when a read under
// that claim still finds the version selected (deleteClaimedRound, the conditional delete
// of versioned records). A redelivery that meets the claim tries again (and finds the
// delivery trimmed). Each step is one round trip for the batch: the claims one unordered
// InsertMany, the check one find, the delete and the release one unordered BulkWrite of
// DeleteOne by exact _id each. A claim
// another updater holds (or one a dead updater left, until a reader clears it) leaves
// its delivery for the next sweep, or for the age bound. The queue is another
// collection: pending deliveries are never read nor touched.
func (s *Store) TrimDeliveries(ctx context.Context, appID, integrationID string, keep, n int) (int, error) {
	const op = "trim deliveries"
	if n <= 0 {
		return 0, nil
	}
	picked, err := newestBeyond[versionedID](ctx, s.history, appID, integrationID, "updatedAt", keep, n,
		bson.D{{Key: "appId", Value: 1}, {Key: "version", Value: 1}})
	if err != nil {
		return 0, wrap(op, err)
	}
	if len(picked) == 0 {
		return 0, nil
	}
	// Under the claims of the next versions, what is still at the version read goes; a
	// copy whose claim is held elsewhere (or that changed) is left for the next sweep.
	deleted, _, err := s.deleteClaimedRound(ctx, s.history, bson.D{{Key: "appId", Value: appID}, {Key: "integrationId", Value: integrationID}}, picked)
	if err != nil {
		return deleted, wrap(op, err)
	}
	return deleted, nil
}

// TrimDeliveryAttempts removes up to n of the integration's attempts beyond its newest
// keep, the newest of them first: their ids (newestBeyond), then deleteByIDs. Unlike
// deliveries, attempts are written once and never
// replaced, so an id read is the attempt deleted: no claim is needed.
func (s *Store) TrimDeliveryAttempts(ctx context.Context, appID, integrationID string, keep, n int) (int, error) {
	const op = "trim delivery attempts"
	if n <= 0 {
		return 0, nil
	}
	type id struct {
		ID string `bson:"_id"`
	}
	picked, err := newestBeyond[id](ctx, s.attempts, appID, integrationID, "createdAt", keep, n, bson.D{{Key: "_id", Value: 1}})
	if err != nil {
		return 0, wrap(op, err)
	}
	if len(picked) == 0 {
		return 0, nil
	}
	ids := make([]string, len(picked))
	for i, p := range picked {
		ids[i] = p.ID
	}
	deleted, err := deleteByIDs(ctx, s.attempts, ids)
	if err != nil {
		return deleted, wrap(op, err)
	}
	return deleted, nil
}

// newestBeyond reads, with projection, up to n documents of coll belonging to the
// integration that come after its newest keep by field (then _id), the newest of them
// first: on MongoDB a walk of the (appId, integrationId, field, _id) index, past keep.
func newestBeyond[T any](ctx context.Context, coll *mongo.Collection, appID, integrationID, field string, keep, n int, projection bson.D) ([]T, error) {
	c, err := coll.Find(ctx, bson.D{{Key: "appId", Value: appID}, {Key: "integrationId", Value: integrationID}}, options.Find().
		SetSort(bson.D{{Key: field, Value: -1}, {Key: "_id", Value: -1}}).SetSkip(int64(max(keep, 0))).SetLimit(int64(n)).
		SetProjection(projection))
	if err != nil {
		return nil, err
	}
	var out []T
	if err := c.All(ctx, &out); err != nil {
		return nil, err
	}
	return out, nil
}
