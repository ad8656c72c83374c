package mongo

import (
	"context"
	"slices"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/keyward/keyward/storage"
)

// The audit entry of a bulk deletion (licenses/bulk-delete, by ids or by filter; issue
// 21). Its documents go in many writes (a DeleteMany is not atomic on FerretDB 1.24, and
// a deletion by filter goes in claimed chunks), and no written document can carry its
// id, so the entry is staged once, before any deletion, with the ids of every document
// it means to delete (pendingAuditDoc.DocIDs). It is confirmed by the absence of any of
// them: the request settles it once its deletions are done, its After's "count" set to
// the number deleted (storage.AuditAfterCount); after a crash RecoverAudit appends it
// when a listed document is gone, "count" set to how many are, and drops it (older than
// claimLease, as any unconfirmed entry) when all are still there. A deletion by filter
// touches the staged entry after each chunk, so that a long one is not taken for a
// stopped node's. (Were a listed document deleted by another change in the instant
// between the staging and a crash, the entry would be appended for it, as a single
// deletion's: that record is gone either way.) The list bounds a bulk deletion's entry
// to about 400,000 ids (MongoDB's 16 MB document).

// bulkDeleteChunk bounds the ids of one query of a bulk deletion's staging or recovery.
const bulkDeleteChunk = 1000

// stageDeleteMany stages the audit entry of the deletion of those of ids (documents of
// coll of the app) that exist, and answers its intent; a deletion of nothing stages
// nothing (nil intent). The markers the documents carry (their last audited change's
// entry) are settled first, since the deletion removes them.
func (s *Store) stageDeleteMany(ctx context.Context, coll *mongo.Collection, appID string, ids []string) (*auditIntent, error) {
	if storage.EventOutboxFrom(ctx) == nil || storage.AuditOutboxFrom(ctx) == nil || len(ids) == 0 {
		return nil, nil
	}
	var present, markers []string
	for chunk := range slices.Chunk(ids, bulkDeleteChunk) {
		cur, err := coll.Find(ctx, bson.D{{Key: "appId", Value: appID}, {Key: "_id", Value: bson.D{{Key: "$in", Value: chunk}}}},
			options.Find().SetProjection(bson.D{{Key: "_id", Value: 1}, {Key: auditMarker, Value: 1}}))
		if err != nil {
			return nil, err
		}
		var docs []bson.Raw
		if err := cur.All(ctx, &docs); err != nil {
			return nil, err
		}
		for _, raw := range docs {
			id, _ := raw.Lookup("_id").StringValueOK()
			present = append(present, id)
			if m := markerOf(raw); m != "" {
				markers = append(markers, m)
			}
		}
	}
	return s.stageDeleteFound(ctx, coll, present, markers)
}

// stageDeleteFound stages the audit entry of the deletion of present, documents of coll
// read as existing (a deletion of nothing stages nothing: nil intent), markers the
// markers they carry, settled first (stageDeleteMany). A deletion that has read its
// documents already (by a filter: DeleteLicensesWhere) stages with what it read.
func (s *Store) stageDeleteFound(ctx context.Context, coll *mongo.Collection, present, markers []string) (*auditIntent, error) {
	if storage.EventOutboxFrom(ctx) == nil || storage.AuditOutboxFrom(ctx) == nil || len(present) == 0 {
		return nil, nil
	}
	if err := s.settleMarkers(ctx, markers); err != nil {
		return nil, err
	}
	ao := storage.AuditOutboxFrom(ctx)
	e, ok := ao.TakeAudit()
	if !ok {
		return nil, nil
	}
	return s.stagePending(ctx, ao, e, pendingAuditDoc{Coll: coll.Name(), DocIDs: present, Deleted: true})
}

// settleMarkers settles the staged entries of markers still pending (usually none: each
// change settles its own before it is acknowledged).
func (s *Store) settleMarkers(ctx context.Context, markers []string) error {
	for chunk := range slices.Chunk(markers, bulkDeleteChunk) {
		left, err := findIDs(ctx, s.auditPending, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: chunk}}}})
		if err != nil {
			return err
		}
		for _, id := range left {
			if err := s.settlePrior(ctx, id); err != nil {
				return err
			}
		}
	}
	return nil
}

// settleDeleted appends the staged entry of a bulk deletion that deleted n documents
// (none: the entry is removed, the change was not made; RecoverAudit decides by the
// documents when the deletion failed, err not nil).
func (i *auditIntent) settleDeleted(ctx context.Context, s *Store, n int, err error) {
	switch {
	case i == nil || err != nil:
	case n == 0:
		i.abandon(ctx, s)
	default:
		i.e.After = storage.AuditAfterCount(i.e.After, n)
		i.settle(ctx, s)
	}
}

// touch marks the staged entry as its request's still (RecoverAudit spares it).
func (i *auditIntent) touch(ctx context.Context, s *Store) {
	if i == nil {
		return
	}
	_, _ = s.auditPending.UpdateOne(ctx, bson.D{{Key: "_id", Value: i.e.ID}}, bson.D{{Key: "$set", Value: bson.D{{Key: "at", Value: storage.Now()}}}})
}

// goneOf answers how many of the documents a bulk deletion's entry lists are gone.
func (s *Store) goneOf(ctx context.Context, p pendingAuditDoc) (int, error) {
	coll := s.db.Collection(p.Coll)
	gone := 0
	for chunk := range slices.Chunk(p.DocIDs, bulkDeleteChunk) {
		n, err := coll.CountDocuments(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: chunk}}}})
		if err != nil {
			return 0, err
		}
		gone += len(chunk) - int(n)
	}
	return gone, nil
}
