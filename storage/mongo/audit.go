package mongo

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/keyward/keyward/storage"
)

var _ storage.AuditStore = (*Store)(nil)

// auditDoc is one entry. A chained entry's _id is its place in the chain (chainID), so
// that the unique _id index alone keeps one entry per account and sequence: FerretDB does
// not reliably support partial indexes, and entries stored before the chain have no seq.
// The entry's own id is entryId (for those older entries, the _id).
type auditDoc struct {
	ID         string    `bson:"_id"`
	EntryID    string    `bson:"entryId,omitempty"`
	AccountID  string    `bson:"accountId"`
	AppID      string    `bson:"appId"`
	ActorType  string    `bson:"actorType"`
	ActorID    string    `bson:"actorId"`
	ActorName  string    `bson:"actorName"`
	IP         string    `bson:"ip"`
	Method     string    `bson:"method"`
	Route      string    `bson:"route"`
	Path       string    `bson:"path"`
	RecordType string    `bson:"recordType"`
	RecordID   string    `bson:"recordId"`
	Status     int       `bson:"status"`
	Before     string    `bson:"before"`
	After      string    `bson:"after"`
	CreatedAt  time.Time `bson:"createdAt,omitempty"`
	Seq        int64     `bson:"seq,omitempty"`
	PrevHash   string    `bson:"prevHash,omitempty"`
	Hash       string    `bson:"hash,omitempty"`
}

func (d auditDoc) entry() storage.AuditEntry {
	id := d.EntryID
	if id == "" {
		id = d.ID
	}
	return storage.AuditEntry{ID: id, AccountID: d.AccountID, AppID: d.AppID, ActorType: d.ActorType, ActorID: d.ActorID,
		ActorName: d.ActorName, IP: d.IP, Method: d.Method, Route: d.Route, Path: d.Path, RecordType: d.RecordType,
		RecordID: d.RecordID, Status: d.Status, Before: d.Before, After: d.After, CreatedAt: fromDate(d.CreatedAt),
		Seq: d.Seq, PrevHash: d.PrevHash, Hash: d.Hash}
}

// auditDocOf answers the document of e stored under the _id id.
func auditDocOf(e storage.AuditEntry, id string) auditDoc {
	return auditDoc{ID: id, EntryID: e.ID, AccountID: e.AccountID, AppID: e.AppID, ActorType: e.ActorType,
		ActorID: e.ActorID, ActorName: e.ActorName, IP: e.IP, Method: e.Method, Route: e.Route, Path: e.Path,
		RecordType: e.RecordType, RecordID: e.RecordID, Status: e.Status, Before: e.Before, After: e.After,
		CreatedAt: e.CreatedAt, Seq: e.Seq, PrevHash: e.PrevHash, Hash: e.Hash}
}

// chainID names an account's entry of sequence seq: the zero padding keeps _id order the
// chain's order.
func chainID(accountID string, seq int64) string { return fmt.Sprintf("%s/%019d", accountID, seq) }

// maxChainRetries bounds the attempts to append one entry while other writers take the
// sequence it read: each lost race means another entry went in, so this is only reached
// with that many writers appending to one account at the same instant.
const maxChainRetries = 100

// AppendAudit implements storage.AuditStore, entry by entry: find the id (a retried batch
// skips what went in), read the account's last entry, insert after it. Two nodes that
// read the same end race for the same _id: one insert wins, the other is a duplicate key
// and reads the end again. FerretDB v1.24 has no multi-document transactions, so the
// chain's integrity rests on that single-document insert, not on a transaction.
func (s *Store) AppendAudit(ctx context.Context, entries []storage.AuditEntry) error {
	tails := map[string]*auditDoc{}
	for _, e := range entries {
		err := s.audit.FindOne(ctx, bson.D{{Key: "entryId", Value: e.ID}}, options.FindOne().SetProjection(bson.D{{Key: "_id", Value: 1}})).Err()
		if err == nil {
			continue
		}
		if !errors.Is(err, mongo.ErrNoDocuments) {
			return wrap("append audit: find id", err)
		}
		for attempt := 0; ; attempt++ {
			if attempt == maxChainRetries {
				return wrap("append audit", fmt.Errorf("%w: chain of account %s: %d lost races", storage.ErrUnavailable, e.AccountID, attempt))
			}
			tail := tails[e.AccountID]
			if tail == nil {
				tail = &auditDoc{}
				err := s.audit.FindOne(ctx, bson.D{{Key: "accountId", Value: e.AccountID}, {Key: "seq", Value: bson.D{{Key: "$gt", Value: 0}}}},
					options.FindOne().SetSort(bson.D{{Key: "seq", Value: -1}}).SetProjection(bson.D{{Key: "seq", Value: 1}, {Key: "hash", Value: 1}})).Decode(tail)
				if err != nil && !errors.Is(err, mongo.ErrNoDocuments) {
					return wrap("append audit: chain end", err)
				}
			}
			e.Seq, e.PrevHash = tail.Seq+1, tail.Hash
			e.CreatedAt = storage.Truncate(e.CreatedAt)
			e.Hash = storage.AuditHash(e)
			d := auditDocOf(e, chainID(e.AccountID, e.Seq))
			_, err := s.audit.InsertOne(ctx, d)
			if err == nil {
				tails[e.AccountID] = &d
				break
			}
			if !isDuplicateKey(err) {
				return wrap("append audit", err)
			}
			delete(tails, e.AccountID) // another writer took this place: read the end again
		}
	}
	return nil
}

// ListAudit implements storage.AuditStore.
func (s *Store) ListAudit(ctx context.Context, q storage.AuditQuery) ([]storage.AuditEntry, int, error) {
	filter := bson.D{}
	for _, f := range []struct{ k, v string }{{"accountId", q.AccountID}, {"appId", q.AppID}, {"actorId", q.ActorID}, {"recordType", q.RecordType}} {
		if f.v != "" {
			filter = append(filter, bson.E{Key: f.k, Value: f.v})
		}
	}
	created := bson.D{}
	if !q.Since.IsZero() {
		created = append(created, bson.E{Key: "$gte", Value: q.Since})
	}
	if !q.Until.IsZero() {
		created = append(created, bson.E{Key: "$lt", Value: q.Until})
	}
	if len(created) > 0 {
		filter = append(filter, bson.E{Key: "createdAt", Value: created})
	}
	// Entries of one millisecond come in their chain's order (seq), newest first: the _id
	// ("account/seq" as text) does not sort by number.
	newest := bson.D{{Key: "createdAt", Value: -1}, {Key: "seq", Value: -1}, {Key: "_id", Value: -1}}
	return listDocs(ctx, s.audit, "list audit", filter, newest, q.Page, auditDoc.entry)
}

// DeleteAuditBefore implements storage.AuditStore, account by account: the bound is the
// first kept chained entry, else the last entry (which stays). Entries outside the chain
// (no seq) go by age alone. Several statements without a transaction: a purge racing an
// append only ever leaves more than it could have removed.
func (s *Store) DeleteAuditBefore(ctx context.Context, t time.Time) (int, error) {
	old := bson.D{{Key: "createdAt", Value: bson.D{{Key: "$lt", Value: t}}}}
	res, err := s.audit.DeleteMany(ctx, append(old, bson.E{Key: "seq", Value: bson.D{{Key: "$exists", Value: false}}}))
	if err != nil {
		return 0, wrap("delete audit before", err)
	}
	deleted := int(res.DeletedCount)
	ids, err := s.auditAccountsOf(ctx, append(old, bson.E{Key: "seq", Value: bson.D{{Key: "$gt", Value: 0}}}))
	if err != nil {
		return deleted, wrap("delete audit before: accounts", err)
	}
	for _, account := range ids {
		var bound auditDoc
		chained := bson.D{{Key: "accountId", Value: account}, {Key: "seq", Value: bson.D{{Key: "$gt", Value: 0}}}}
		err := s.audit.FindOne(ctx, append(chained, bson.E{Key: "createdAt", Value: bson.D{{Key: "$gte", Value: t}}}),
			options.FindOne().SetSort(bson.D{{Key: "seq", Value: 1}})).Decode(&bound)
		if errors.Is(err, mongo.ErrNoDocuments) {
			err = s.audit.FindOne(ctx, chained, options.FindOne().SetSort(bson.D{{Key: "seq", Value: -1}})).Decode(&bound)
		}
		if err != nil {
			return deleted, wrap("delete audit before: bound", err)
		}
		res, err := s.audit.DeleteMany(ctx, append(old, bson.E{Key: "accountId", Value: account},
			bson.E{Key: "seq", Value: bson.D{{Key: "$gt", Value: 0}, {Key: "$lt", Value: bound.Seq}}}))
		if err != nil {
			return deleted, wrap("delete audit before", err)
		}
		deleted += int(res.DeletedCount)
	}
	return deleted, nil
}

// AuditAccounts implements storage.AuditStore.
func (s *Store) AuditAccounts(ctx context.Context) ([]string, error) {
	ids, err := s.auditAccountsOf(ctx, bson.D{{Key: "seq", Value: bson.D{{Key: "$gt", Value: 0}}}})
	if err != nil {
		return nil, wrap("audit accounts", err)
	}
	return ids, nil
}

// auditAccountsOf answers the accounts of the entries matching filter, sorted: a $group,
// not distinct, whose answer the driver fails to decode from FerretDB 1.24 at times.
func (s *Store) auditAccountsOf(ctx context.Context, filter bson.D) ([]string, error) {
	cur, err := s.audit.Aggregate(ctx, mongo.Pipeline{
		{{Key: "$match", Value: filter}},
		{{Key: "$group", Value: bson.D{{Key: "_id", Value: "$accountId"}}}},
	})
	if err != nil {
		return nil, err
	}
	var groups []struct {
		ID string `bson:"_id"`
	}
	if err := cur.All(ctx, &groups); err != nil {
		return nil, err
	}
	ids := make([]string, len(groups))
	for i, g := range groups {
		ids[i] = g.ID
	}
	slices.Sort(ids)
	return ids, nil
}

// AuditChain implements storage.AuditStore.
func (s *Store) AuditChain(ctx context.Context, accountID string, afterSeq int64, limit int) ([]storage.AuditEntry, error) {
	cur, err := s.audit.Find(ctx, bson.D{{Key: "accountId", Value: accountID}, {Key: "seq", Value: bson.D{{Key: "$gt", Value: max(afterSeq, 0)}}}},
		options.Find().SetSort(bson.D{{Key: "seq", Value: 1}}).SetLimit(int64(limit)))
	if err != nil {
		return nil, wrap("audit chain", err)
	}
	var docs []auditDoc
	if err := cur.All(ctx, &docs); err != nil {
		return nil, wrap("audit chain", err)
	}
	out := make([]storage.AuditEntry, len(docs))
	for i, d := range docs {
		out[i] = d.entry()
	}
	return out, nil
}
