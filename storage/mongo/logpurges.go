package mongo

import (
	"cmp"
	"context"
	"errors"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/keyward/keyward/storage"
)

var _ storage.LogPurgeStore = (*Store)(nil)

const collLogPurges = "logPurges"

// logPurgeChunk bounds the entries one delete of a purge removes (about: entries created
// at the same millisecond as the chunk's last go with it), as the SQLite engine's chunks.
const logPurgeChunk = 10_000

// logPurgeDoc is a purge's intent; it carries the marker of its audit entry (auditMarker)
// from its insert until the purge is done.
type logPurgeDoc struct {
	ID        string    `bson:"_id"`
	AppID     string    `bson:"appId"`
	Days      int       `bson:"days"`
	Before    time.Time `bson:"before"`
	AccountID string    `bson:"accountId"`
	Actor     string    `bson:"actor"`
	RequestID string    `bson:"requestId"`
	CreatedAt time.Time `bson:"createdAt"`
	TouchedAt time.Time `bson:"touchedAt"`
}

func (d logPurgeDoc) purge() storage.LogPurge {
	return storage.LogPurge{ID: d.ID, AppID: d.AppID, Days: d.Days, Before: fromDate(d.Before), AccountID: d.AccountID,
		Actor: d.Actor, RequestID: d.RequestID, CreatedAt: fromDate(d.CreatedAt), TouchedAt: fromDate(d.TouchedAt)}
}

func (s *Store) logPurges() *mongo.Collection { return s.db.Collection(collLogPurges) }

// BeginLogPurge implements storage.LogPurgeStore: one document, inserted through
// insertOwned, so that its audit entry (audit.Own) is staged before the insert and
// confirmed by the inserted document (auditpending.go); RecoverAudit appends an entry a
// stopped node left staged.
func (s *Store) BeginLogPurge(ctx context.Context, p storage.LogPurge) error {
	d := logPurgeDoc{ID: p.ID, AppID: p.AppID, Days: p.Days, Before: storage.Truncate(p.Before), AccountID: p.AccountID,
		Actor: p.Actor, RequestID: p.RequestID, CreatedAt: storage.Truncate(p.CreatedAt), TouchedAt: storage.Truncate(p.TouchedAt)}
	return s.insertOwned(ctx, "begin log purge", s.logPurges(), []any{d}, nil, nil)
}

// RunLogPurge implements storage.LogPurgeStore. DeleteMany is not atomic on FerretDB
// (nor one write on MongoDB), so the entries go in chunks by creation time: the
// logPurgeChunk-th oldest entry before the cutoff bounds each delete, and the intent is
// touched after each. Before the intent goes, the audit entry it confirms is settled
// (appended to the chain, if its own request or RecoverAudit has not yet): without the
// document, RecoverAudit would take the staged entry for a change never made.
func (s *Store) RunLogPurge(ctx context.Context, p storage.LogPurge) (int, error) {
	const op = "run log purge"
	before := storage.Truncate(p.Before)
	chunk := int64(cmp.Or(s.purgeChunk, logPurgeChunk))
	total := 0
	for {
		edge := before
		var last struct {
			CreatedAt time.Time `bson:"createdAt"`
		}
		err := s.logs.FindOne(ctx, bson.D{{Key: "appId", Value: p.AppID}, {Key: "createdAt", Value: bson.D{{Key: "$lt", Value: before}}}},
			options.FindOne().SetSort(bson.D{{Key: "createdAt", Value: 1}}).SetSkip(chunk-1).
				SetProjection(bson.D{{Key: "createdAt", Value: 1}})).Decode(&last)
		done := errors.Is(err, mongo.ErrNoDocuments) // fewer than a chunk left: the last delete
		if err != nil && !done {
			return total, wrap(op, err)
		}
		cond := bson.D{{Key: "$lt", Value: before}}
		if !done && last.CreatedAt.Before(before) {
			edge = last.CreatedAt
			cond = bson.D{{Key: "$lte", Value: edge}}
		}
		res, err := s.logs.DeleteMany(ctx, bson.D{{Key: "appId", Value: p.AppID}, {Key: "createdAt", Value: cond}})
		if err != nil {
			return total, wrap(op, err)
		}
		total += int(res.DeletedCount)
		if done {
			break
		}
		if _, err := s.logPurges().UpdateOne(ctx, bson.D{{Key: "_id", Value: p.ID}},
			bson.D{{Key: "$set", Value: bson.D{{Key: "touchedAt", Value: storage.Now()}}}}); err != nil {
			return total, wrap(op+": touch", err)
		}
	}
	raw, err := s.logPurges().FindOne(ctx, bson.D{{Key: "_id", Value: p.ID}},
		options.FindOne().SetProjection(bson.D{{Key: auditMarker, Value: 1}})).Raw()
	if errors.Is(err, mongo.ErrNoDocuments) {
		return total, nil // finished by another run
	}
	if err != nil {
		return total, wrap(op, err)
	}
	if marker := markerOf(raw); marker != "" {
		if err := s.settlePrior(ctx, marker); err != nil {
			return total, wrap(op, err)
		}
	}
	if _, err := s.logPurges().DeleteOne(ctx, bson.D{{Key: "_id", Value: p.ID}}); err != nil {
		return total, wrap(op, err)
	}
	return total, nil
}

// LogPurges implements storage.LogPurgeStore.
func (s *Store) LogPurges(ctx context.Context) ([]storage.LogPurge, error) {
	return findAll(ctx, s.logPurges(), "log purges", bson.D{}, bson.D{{Key: "createdAt", Value: 1}, {Key: "_id", Value: 1}}, logPurgeDoc.purge)
}
