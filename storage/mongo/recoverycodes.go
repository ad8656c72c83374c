package mongo

import (
	"context"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// recoveryCodeDoc is one unused recovery code; _id is the account id and the hash, so a
// code is deleted (used) by exactly one of its concurrent users.
type recoveryCodeDoc struct {
	ID        string    `bson:"_id"`
	AccountID string    `bson:"accountId"`
	Hash      string    `bson:"hash"`
	CreatedAt time.Time `bson:"createdAt"`
}

// ReplaceRecoveryCodes implements storage.RecoveryCodeStore. FerretDB has no
// multi-document transactions: the old codes go first, so a failure half-way leaves fewer
// codes, never old ones beside new ones.
func (s *Store) ReplaceRecoveryCodes(ctx context.Context, accountID string, hashes []string, now time.Time) error {
	if _, err := s.recoveryCodes.DeleteMany(ctx, bson.D{{Key: "accountId", Value: accountID}}); err != nil {
		return wrap("replace recovery codes", err)
	}
	if len(hashes) == 0 {
		return nil
	}
	docs := make([]any, 0, len(hashes))
	for _, h := range hashes {
		docs = append(docs, recoveryCodeDoc{ID: accountID + "|" + h, AccountID: accountID, Hash: h, CreatedAt: now})
	}
	if _, err := s.recoveryCodes.InsertMany(ctx, docs); err != nil {
		return wrap("replace recovery codes", err)
	}
	return nil
}

// RecoveryCodeHashes implements storage.RecoveryCodeStore.
func (s *Store) RecoveryCodeHashes(ctx context.Context, accountID string) ([]string, error) {
	cur, err := s.recoveryCodes.Find(ctx, bson.D{{Key: "accountId", Value: accountID}})
	if err != nil {
		return nil, wrap("recovery codes", err)
	}
	var docs []recoveryCodeDoc
	if err := cur.All(ctx, &docs); err != nil {
		return nil, wrap("recovery codes", err)
	}
	out := make([]string, 0, len(docs))
	for _, d := range docs {
		out = append(out, d.Hash)
	}
	return out, nil
}

// UseRecoveryCode implements storage.RecoveryCodeStore.
func (s *Store) UseRecoveryCode(ctx context.Context, accountID, hash string) error {
	res, err := s.recoveryCodes.DeleteOne(ctx, bson.D{{Key: "_id", Value: accountID + "|" + hash}})
	if err != nil {
		return wrap("use recovery code", err)
	}
	if res.DeletedCount == 0 {
		return wrap("use recovery code", mongo.ErrNoDocuments)
	}
	return nil
}
