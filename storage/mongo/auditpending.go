package mongo

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/keyward/keyward/storage"
)

// Audit with the change on MongoDB (issue 21). FerretDB v1.24 has no multi-document
// transactions, so the change's audit entry cannot go in one transaction with the change,
// and the chain's append (an insert in auditLog) is not the change's document. Instead,
// with the same queries on MongoDB and FerretDB:
//
//  1. The entry is staged first: one insert in auditPending, naming the collection and
//     the document whose write confirms it.
//  2. The change's own write (the replace of updateDoc, the insert of a creation) carries
//     the staged entry's id in the document (auditMarker): the change and its
//     confirmation are one single-document write, atomic on both servers.
//  3. The entry is settled: appended to its account's chain (AppendAudit: the chain's
//     _id keeps two nodes from forking it), and its pending record deleted. The change
//     is acknowledged after this.
//
// A deletion stages its entry the same way, after reading the document (a deletion of
// nothing stages nothing); its write confirms it by removing the document. (Were the
// document removed by another deletion in the instant between the read and a crash, the
// entry would be appended for that deletion: the record is gone either way.)
//
// A crash between 1 and 2 leaves a pending entry no document confirms: it is dropped once
// older than claimLease (the change's write is bounded by half of it). A crash between 2
// and 3 leaves a confirmed one: RecoverAudit appends it (the audit writer runs it at start
// and every recoverEvery). A later audited change of the same document settles the
// marker it finds before it writes its own, and every other replace keeps the marker, so
// a confirmed entry never loses its confirmation. One settler at a time per entry (a
// claim, as updateDoc's), and AppendAudit skips an id already in the chain: an entry is
// appended exactly once.
//
// The parts of a bulk request's entry (storage.AuditParts: users bulk and import,
// licenses add-time, each record in a write of its own) are staged and confirmed the
// same way, each by its record's write, but settle only together: SettleAuditParts (the
// request, once its writes are done) or RecoverAudit (a stopped node's) merges the
// confirmed parts of the group into one entry, appends it and deletes them (no
// transaction joins the two; the append skips an entry already in the chain). A later
// change of a record whose part is not settled yet does not wait for the request: it
// vouches for the part (the document carried its id, so its write was made) before its
// own write replaces the id.

// auditMarker is the member of a changed document naming the staged audit entry of its
// last audited change.
const auditMarker = "auditPending"

// pendingAuditDoc is a staged entry and the document whose write confirms it.
type pendingAuditDoc struct {
	ID    string    `bson:"_id"` // the entry's id
	Coll  string    `bson:"coll"`
	DocID string    `bson:"docId"`
	Entry auditDoc  `bson:"entry"`
	At    time.Time `bson:"at"`
	// Deleted marks a deletion's entry: its write confirms it by removing the document
	// (no marker can be left in it).
	Deleted bool `bson:"deleted,omitempty"`
	// Group names the bulk request's entry this is one record's part of
	// (storage.AuditParts): its write confirms it as any entry's, but it is appended
	// only merged with the group's other parts (settleGroup).
	Group string `bson:"group,omitempty"`
	// Vouched marks a part confirmed by its document although the document no longer
	// carries its id: a later change of the document, which read the id there (so the
	// part's write was made), sets it before its own write replaces the id.
	Vouched bool `bson:"vouched,omitempty"`
	// DocIDs lists the documents of a bulk deletion's entry (auditbulkdelete.go): it is
	// confirmed when any of them is gone (DocID is empty).
	DocIDs []string `bson:"docIds,omitempty"`
}

// auditIntent is one change's staged entry, nil when the change has none to write.
type auditIntent struct {
	ao   storage.AuditOutbox
	e    storage.AuditEntry
	part bool // one record's part of a bulk entry: settled with its group
}

// stageAudit takes the change's audit entry (the context's AuditOutbox, in the change's
// own store call only: the one carrying the EventOutbox) and stages it, confirmed by the
// write of document docID of coll. prior is the marker the document carries now: its
// entry is settled first, since the write replaces it.
func (s *Store) stageAudit(ctx context.Context, coll *mongo.Collection, docID, prior string) (*auditIntent, error) {
	return s.stageAuditOf(ctx, coll, docID, prior, false)
}

// stageDelete stages the audit entry of the deletion of the document filter matches,
// confirmed by its absence. It reads the document first: a deletion of nothing stages
// nothing (it answers ErrNotFound), and the marker of its last audited change is settled
// before the document goes.
func (s *Store) stageDelete(ctx context.Context, coll *mongo.Collection, filter bson.D) (*auditIntent, error) {
	if storage.EventOutboxFrom(ctx) == nil || storage.AuditOutboxFrom(ctx) == nil {
		return nil, nil
	}
	raw, err := findOneRaw(ctx, coll, filter, bson.D{{Key: "_id", Value: 1}, {Key: auditMarker, Value: 1}})
	if errors.Is(err, mongo.ErrNoDocuments) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	id, _ := raw.Lookup("_id").StringValueOK()
	return s.stageAuditOf(ctx, coll, id, markerOf(raw), true)
}

func (s *Store) stageAuditOf(ctx context.Context, coll *mongo.Collection, docID, prior string, deleted bool) (*auditIntent, error) {
	if storage.EventOutboxFrom(ctx) == nil {
		return nil, nil
	}
	ao := storage.AuditOutboxFrom(ctx)
	if ao == nil {
		return nil, nil
	}
	e, ok := ao.TakeAudit()
	if !ok {
		return nil, nil
	}
	if prior != "" {
		// Settled (by this call, or by the change that made it, waited for) before the
		// write replaces its confirmation.
		if err := s.settlePrior(ctx, prior); err != nil {
			return nil, err
		}
	}
	p := pendingAuditDoc{Coll: coll.Name(), DocID: docID, Deleted: deleted}
	if parts, ok := ao.(storage.AuditParts); ok {
		p.Group = parts.AuditGroup()
	}
	return s.stagePending(ctx, ao, e, p)
}

// stagePending stages e, the entry ao answered, as p says (what confirms it; its id,
// entry and time are set here): the insert in auditPending every staging ends with.
func (s *Store) stagePending(ctx context.Context, ao storage.AuditOutbox, e storage.AuditEntry, p pendingAuditDoc) (*auditIntent, error) {
	e.CreatedAt = storage.Truncate(e.CreatedAt)
	p.ID, p.Entry, p.At = e.ID, auditDocOf(e, ""), storage.Now()
	if _, err := s.auditPending.InsertOne(ctx, p); err != nil {
		return nil, fmt.Errorf("stage the audit entry: %w", err)
	}
	return &auditIntent{ao: ao, e: e, part: p.Group != ""}, nil
}

// marker answers the marker the change's document is written with: its own entry's, else
// the one it carries (prior), kept.
func (i *auditIntent) marker(prior string) string {
	if i != nil {
		return i.e.ID
	}
	return prior
}

// abandon removes the staged entry of a write that was not made.
func (i *auditIntent) abandon(ctx context.Context, s *Store) {
	if i == nil {
		return
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	_, _ = s.auditPending.DeleteOne(dctx, bson.D{{Key: "_id", Value: i.e.ID}})
}

// settle appends the entry of a write that was made and reports it stored: confirmed by
// the document, it is stored whatever happens next (RecoverAudit appends it if this
// append fails). When another settler holds the entry (the next change of the document,
// settling the marker it found), it waits until that one is done, so that the change is
// acknowledged with its entry in the chain: a settler that dies meanwhile leaves it to
// this one once its claim is stale, or to RecoverAudit.
func (i *auditIntent) settle(ctx context.Context, s *Store) {
	if i == nil {
		return
	}
	defer i.ao.AuditStored()
	if i.part {
		return // confirmed by the write; appended with its group (SettleAuditParts)
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), claimLease/2)
	defer cancel()
	_ = s.awaitSettled(sctx, i.e.ID, &i.e) // on failure left pending: RecoverAudit appends it
}

// settlePrior waits, at most half a claim's lease, until the pending audit entry id of
// an earlier change is settled (appended or dropped, by its change or by this call):
// what replaces or removes that change's marker comes after its entry.
func (s *Store) settlePrior(ctx context.Context, id string) error {
	sctx, cancel := context.WithTimeout(ctx, claimLease/2)
	defer cancel()
	if err := s.awaitSettled(sctx, id, nil); err != nil {
		return fmt.Errorf("settle the audit entry of the last change: %w", err)
	}
	return nil
}

// awaitSettled settles the pending entry id (settlePending) or, when another settler
// holds it, waits until it is gone from auditPending, within ctx.
func (s *Store) awaitSettled(ctx context.Context, id string, e *storage.AuditEntry) error {
	for attempt := 0; ; attempt++ {
		settled, err := s.settlePending(ctx, id, e)
		if settled || err != nil {
			return err
		}
		n, err := s.auditPending.CountDocuments(ctx, bson.D{{Key: "_id", Value: id}}, options.Count().SetLimit(1))
		if err != nil || n == 0 {
			return err // n == 0: settled by the other
		}
		if err := backoff(ctx, min(attempt, 4)); err != nil {
			return err
		}
	}
}

// settlePending appends the pending entry id to its chain (e, else as staged) and deletes
// its pending record, under a claim: one settler at a time. A claim held by another
// settler (or left by a dead one, until it is stale) leaves the entry to it. It reports
// whether this call settled it.
func (s *Store) settlePending(ctx context.Context, id string, e *storage.AuditEntry) (bool, error) {
	if e == nil {
		var p pendingAuditDoc
		err := s.auditPending.FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&p)
		if errors.Is(err, mongo.ErrNoDocuments) {
			return false, nil // settled already (the usual case)
		}
		if err != nil {
			return false, err
		}
		if p.Group != "" {
			// A bulk entry's part is appended only with its group, which may be going on
			// for a while (10,000 keys): the caller does not wait for it. It read the
			// part's id in the document, so the part's write was made: the part is
			// vouched for before the caller's write replaces the id.
			_, err := s.auditPending.UpdateOne(ctx, bson.D{{Key: "_id", Value: id}}, bson.D{{Key: "$set", Value: bson.D{{Key: "vouched", Value: true}}}})
			return err == nil, err
		}
		entry := p.Entry.entry()
		e = &entry
	}
	release, claimed, err := s.takeClaim(ctx, collAuditPending+"/"+id, e.AccountID)
	if !claimed {
		return false, err
	}
	defer release()
	if err := s.AppendAudit(ctx, []storage.AuditEntry{*e}); err != nil {
		return false, err
	}
	_, err = s.auditPending.DeleteOne(ctx, bson.D{{Key: "_id", Value: id}})
	return err == nil, err
}

// RecoverAudit implements storage.AuditRecoverer: every staged entry whose document
// confirms it (carries its id; for a deletion, is gone) is appended (its change was made
// and its node stopped before it settled);
// one that no document confirms and is older than claimLease is dropped (its change was
// never made). It answers how many it appended.
//
// minAge spares the entries staged less than that long ago, which their own change is
// settling now (the writer's periodic run passes a few seconds; its run at start, when
// this node's changes are none yet, passes 0).
func (s *Store) RecoverAudit(ctx context.Context, minAge time.Duration) (int, error) {
	cur, err := s.auditPending.Find(ctx, bson.D{}, options.Find().SetSort(bson.D{{Key: "at", Value: 1}}))
	if err != nil {
		return 0, wrap("recover audit", err)
	}
	var pending []pendingAuditDoc
	if err := cur.All(ctx, &pending); err != nil {
		return 0, wrap("recover audit", err)
	}
	appended := 0
	groups := map[string]bool{}
	for _, p := range pending {
		if p.Group != "" {
			groups[p.Group] = true
			continue
		}
		ok, gone, err := s.confirmed(ctx, p)
		if err != nil {
			return appended, wrap("recover audit: confirmation", err)
		}
		if ok {
			if time.Since(p.At) < minAge {
				continue // its change is settling it now
			}
			e := p.Entry.entry()
			if len(p.DocIDs) > 0 {
				e.After = storage.AuditAfterCount(e.After, gone)
			}
			settled, err := s.settlePending(ctx, p.ID, &e)
			if err != nil {
				return appended, wrap("recover audit", err)
			}
			if settled {
				appended++
			}
			continue
		}
		if time.Since(p.At) > claimLease {
			if _, err := s.auditPending.DeleteOne(ctx, bson.D{{Key: "_id", Value: p.ID}, {Key: "at", Value: p.At}}); err != nil {
				return appended, wrap("recover audit: drop", err)
			}
		}
	}
	for g := range groups {
		settled, err := s.settleGroup(ctx, g, minAge, false)
		if err != nil {
			return appended, wrap("recover audit", err)
		}
		if settled {
			appended++
		}
	}
	return appended, nil
}

// confirmed reports whether the write p was staged for was made: the document carries
// p's id, or (a deletion) is gone; a bulk deletion's is confirmed by any listed document
// gone, and gone counts them (the same read; 0 for any other entry).
func (s *Store) confirmed(ctx context.Context, p pendingAuditDoc) (ok bool, gone int, err error) {
	if len(p.DocIDs) > 0 {
		gone, err := s.goneOf(ctx, p)
		return gone > 0, gone, err
	}
	ok, err = s.confirmedOne(ctx, p)
	return ok, 0, err
}

// confirmedOne is confirmed for an entry of one document.
func (s *Store) confirmedOne(ctx context.Context, p pendingAuditDoc) (bool, error) {
	marked, err := s.db.Collection(p.Coll).FindOne(ctx, bson.D{{Key: "_id", Value: p.DocID}},
		options.FindOne().SetProjection(bson.D{{Key: auditMarker, Value: 1}})).Raw()
	if err != nil && !errors.Is(err, mongo.ErrNoDocuments) {
		return false, err
	}
	if other := s.deliveryTwin(p.Coll); other != nil && !p.Deleted && (marked == nil || markerOf(marked) != p.ID) {
		// A delivery moves between the queue and the history, its marker with it
		// (updateDelivery): the entry is confirmed by the copy in either.
		twin, err := other.FindOne(ctx, bson.D{{Key: "_id", Value: p.DocID}},
			options.FindOne().SetProjection(bson.D{{Key: auditMarker, Value: 1}})).Raw()
		if err != nil && !errors.Is(err, mongo.ErrNoDocuments) {
			return false, err
		}
		if twin != nil && markerOf(twin) == p.ID {
			return true, nil
		}
	}
	if p.Deleted {
		return marked == nil, nil
	}
	if p.Vouched || (marked != nil && markerOf(marked) == p.ID) {
		return true, nil
	}
	if p.Group == "" {
		return false, nil
	}
	// A later change may have vouched for the part and replaced its id since p was read:
	// it vouches first, so reading the part again after the document tells.
	var again pendingAuditDoc
	if err := s.auditPending.FindOne(ctx, bson.D{{Key: "_id", Value: p.ID}}).Decode(&again); err != nil {
		if errors.Is(err, mongo.ErrNoDocuments) {
			return false, nil
		}
		return false, err
	}
	return again.Vouched, nil
}

// deliveryTwin answers the other collection of a delivery's two (the queue and the
// history) when coll is one of them, else nil.
func (s *Store) deliveryTwin(coll string) *mongo.Collection {
	switch coll {
	case s.deliveries.Name():
		return s.history
	case s.history.Name():
		return s.deliveries
	}
	return nil
}

// SettleAuditParts implements storage.AuditPartSettler: called by the request once its
// writes are done, so a part its write does not confirm was not made and is dropped.
func (s *Store) SettleAuditParts(ctx context.Context, group string) (bool, error) {
	settled, err := s.settleGroup(ctx, group, 0, true)
	if err != nil {
		return false, wrap("settle audit parts", err)
	}
	return settled, nil
}

// settleGroup appends the entry made of the confirmed parts of group (MergeAuditParts:
// its id is the first part's, so a settle retried after an unclear failure appends it
// once) and then removes the parts, under a claim: one settler at a time. There is no
// transaction for the two (FerretDB 1.24 has none): a crash between them leaves parts
// whose entry is in the chain, and the next settle's append skips it by id. done says the
// request's writes are over: a part no write confirms is dropped. Otherwise (RecoverAudit)
// a group with a part younger than minAge is left to its request, and one with an
// unconfirmed part younger than claimLease (a write perhaps in flight) is left for later.
func (s *Store) settleGroup(ctx context.Context, group string, minAge time.Duration, done bool) (bool, error) {
	release, claimed, err := s.takeClaim(ctx, "auditGroup/"+group, "")
	if !claimed {
		return false, err
	}
	defer release()
	cur, err := s.auditPending.Find(ctx, bson.D{{Key: "group", Value: group}}, options.Find().SetSort(bson.D{{Key: "at", Value: 1}, {Key: "_id", Value: 1}}))
	if err != nil {
		return false, err
	}
	var pending []pendingAuditDoc
	if err := cur.All(ctx, &pending); err != nil {
		return false, err
	}
	var parts []storage.AuditEntry
	var ids []string
	for _, p := range pending {
		if !done && time.Since(p.At) < minAge {
			return false, nil // its request is going on
		}
		ok, _, err := s.confirmed(ctx, p)
		if err != nil {
			return false, err
		}
		if !ok && !done && time.Since(p.At) <= claimLease {
			return false, nil // its write may be in flight
		}
		if ok {
			parts = append(parts, p.Entry.entry())
		}
		ids = append(ids, p.ID)
	}
	if len(parts) > 0 {
		e, err := storage.MergeAuditParts(parts)
		if err != nil {
			return false, err
		}
		if err := s.AppendAudit(ctx, []storage.AuditEntry{e}); err != nil {
			return false, err
		}
	}
	if len(ids) > 0 {
		if _, err := s.auditPending.DeleteMany(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: ids}}}}); err != nil {
			return false, err
		}
	}
	return len(parts) > 0, nil
}

// withMarker answers doc (a typed document) with the marker set to id ("" leaves doc as
// it is): the change's write and its entry's confirmation in one document.
func withMarker(doc any, id string) (any, error) {
	if id == "" {
		return doc, nil
	}
	raw, err := bson.Marshal(doc)
	if err != nil {
		return nil, err
	}
	var d bson.D
	if err := bson.Unmarshal(raw, &d); err != nil {
		return nil, err
	}
	for i := range d {
		if d[i].Key == auditMarker {
			d[i].Value = id
			return d, nil
		}
	}
	return append(d, bson.E{Key: auditMarker, Value: id}), nil
}

// markerOf answers the marker a stored document carries ("" when none).
func markerOf(raw bson.Raw) string {
	m, _ := raw.Lookup(auditMarker).StringValueOK()
	return m
}

// updateAudited applies update (a $set and others) to the one document of coll filter
// matches and answers it as written; mongo.ErrNoDocuments when none matches. It is for
// the changes written as a partial update rather than through updateDoc's replace (an
// API key's edit, a passkey's rename): their audit entry (storage.AuditOutbox, in the
// change's own store call) is staged first and confirmed by the same single-document
// write, which sets the marker. The marker the document carried is settled first, and
// the write is made only while the document still carries it (else it is tried again),
// so no other change's confirmation is overwritten.
//
// Every write holds the document's lock (lockDoc), whose id and owner (its account) are
// the filter's _id and accountId: FerretDB 1.x writes the whole document as it read it,
// so the marker check and the $set are a compare-and-swap only while no other writer of
// the document runs (see ATOMICITY.md). The lock is released before the entry is settled.
func (s *Store) updateAudited(ctx context.Context, coll *mongo.Collection, filter, update bson.D) (bson.Raw, error) {
	id, _ := filterString(filter, "_id")
	owner, _ := filterString(filter, "accountId")
	release, err := s.lockDoc(ctx, coll, id, owner)
	if err != nil {
		return nil, err
	}
	locked := true
	unlock := func() {
		if locked {
			locked = false
			release()
		}
	}
	defer unlock()
	after := options.FindOneAndUpdate().SetReturnDocument(options.After)
	if storage.EventOutboxFrom(ctx) == nil || storage.AuditOutboxFrom(ctx) == nil {
		return coll.FindOneAndUpdate(ctx, filter, update, after).Raw()
	}
	for attempt := 0; ; attempt++ {
		raw, err := findOneRaw(ctx, coll, filter, bson.D{{Key: "_id", Value: 1}, {Key: auditMarker, Value: 1}})
		if err != nil {
			return nil, err
		}
		id, _ := raw.Lookup("_id").StringValueOK()
		prior := markerOf(raw)
		intent, err := s.stageAudit(ctx, coll, id, prior)
		if err != nil {
			return nil, err
		}
		if intent == nil { // nothing to stage: the edge writes the entry after
			return coll.FindOneAndUpdate(ctx, filter, update, after).Raw()
		}
		unchanged := bson.E{Key: auditMarker, Value: bson.D{{Key: "$exists", Value: false}}}
		if prior != "" {
			unchanged = bson.E{Key: auditMarker, Value: prior}
		}
		doc, err := coll.FindOneAndUpdate(ctx, append(append(bson.D{}, filter...), unchanged), setMarker(update, intent.e.ID), after).Raw()
		if errors.Is(err, mongo.ErrNoDocuments) { // changed or gone since read: again
			intent.abandon(ctx, s)
			if err := backoff(ctx, attempt); err != nil {
				return nil, err
			}
			continue
		}
		if err != nil {
			return nil, err // it may be made: RecoverAudit decides by the document
		}
		unlock()
		intent.settle(ctx, s)
		return doc, nil
	}
}

// setMarker answers update with the marker set to id by its $set (added when it has none).
func setMarker(update bson.D, id string) bson.D {
	out := append(bson.D{}, update...)
	for i := range out {
		if out[i].Key == "$set" {
			set, _ := out[i].Value.(bson.D)
			out[i].Value = append(append(bson.D{}, set...), bson.E{Key: auditMarker, Value: id})
			return out
		}
	}
	return append(out, bson.E{Key: "$set", Value: bson.D{{Key: auditMarker, Value: id}}})
}

// filterString answers the string value filter sets key to (an equality).
func filterString(filter bson.D, key string) (string, bool) {
	for _, e := range filter {
		if e.Key == key {
			v, ok := e.Value.(string)
			return v, ok
		}
	}
	return "", false
}
