package mongo

import (
	"context"
	"errors"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/keyward/keyward/storage"
)

var _ storage.AuditStore = (*Store)(nil)

type auditDoc struct {
	ID         string    `bson:"_id"`
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
}

func (d auditDoc) entry() storage.AuditEntry {
	return storage.AuditEntry{ID: d.ID, AccountID: d.AccountID, AppID: d.AppID, ActorType: d.ActorType, ActorID: d.ActorID,
		ActorName: d.ActorName, IP: d.IP, Method: d.Method, Route: d.Route, Path: d.Path, RecordType: d.RecordType,
		RecordID: d.RecordID, Status: d.Status, Before: d.Before, After: d.After, CreatedAt: fromDate(d.CreatedAt)}
}

// AppendAudit implements storage.AuditStore with one unordered InsertMany; ids already
// stored (a retried batch) are skipped.
func (s *Store) AppendAudit(ctx context.Context, entries []storage.AuditEntry) error {
	if len(entries) == 0 {
		return nil
	}
	docs := make([]any, len(entries))
	for i, e := range entries {
		docs[i] = auditDoc{ID: e.ID, AccountID: e.AccountID, AppID: e.AppID, ActorType: e.ActorType, ActorID: e.ActorID,
			ActorName: e.ActorName, IP: e.IP, Method: e.Method, Route: e.Route, Path: e.Path, RecordType: e.RecordType,
			RecordID: e.RecordID, Status: e.Status, Before: e.Before, After: e.After, CreatedAt: storage.Truncate(e.CreatedAt)}
	}
	if _, err := s.audit.InsertMany(ctx, docs, options.InsertMany().SetOrdered(false)); err != nil && !onlyDuplicates(err) {
		return wrap("append audit", err)
	}
	return nil
}

// onlyDuplicates reports a bulk write whose every failure is a duplicate key.
func onlyDuplicates(err error) bool {
	var bwe mongo.BulkWriteException
	if !errors.As(err, &bwe) || bwe.WriteConcernError != nil || len(bwe.WriteErrors) == 0 {
		return isDuplicateKey(err)
	}
	for _, we := range bwe.WriteErrors {
		if !isDuplicateKey(mongo.WriteException{WriteErrors: mongo.WriteErrors{we.WriteError}}) {
			return false
		}
	}
	return true
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
	return listDocs(ctx, s.audit, "list audit", filter, sortBy("createdAt", true), q.Page, auditDoc.entry)
}

// DeleteAuditBefore implements storage.AuditStore.
func (s *Store) DeleteAuditBefore(ctx context.Context, t time.Time) (int, error) {
	res, err := s.audit.DeleteMany(ctx, bson.D{{Key: "createdAt", Value: bson.D{{Key: "$lt", Value: t}}}})
	if err != nil {
		return 0, wrap("delete audit before", err)
	}
	return int(res.DeletedCount), nil
}
