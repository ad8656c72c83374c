package mongo

import (
	"context"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/keyward/keyward/storage"
)

var _ storage.APIKeyStore = (*Store)(nil)

// apiKeyDoc is a scoped API key; hash carries a unique index.
type apiKeyDoc struct {
	ID         string    `bson:"_id"`
	AccountID  string    `bson:"accountId"`
	Name       string    `bson:"name"`
	Hash       string    `bson:"hash"`
	Prefix     string    `bson:"prefix"`
	Last4      string    `bson:"last4"`
	Scopes     []string  `bson:"scopes"`
	Apps       []string  `bson:"apps"`
	ExpiresAt  time.Time `bson:"expiresAt,omitempty"`
	LastUsedAt time.Time `bson:"lastUsedAt,omitempty"`
	LastUsedIP string    `bson:"lastUsedIp"`
	CreatedAt  time.Time `bson:"createdAt,omitempty"`
	UpdatedAt  time.Time `bson:"updatedAt,omitempty"`
}

// orEmpty keeps a nil list from being stored as BSON null.
func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// orNil reads an empty list back as nil, as the SQLite engine does.
func orNil(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}

func (d apiKeyDoc) key() storage.APIKey {
	return storage.APIKey{ID: d.ID, AccountID: d.AccountID, Name: d.Name, Hash: d.Hash, Prefix: d.Prefix, Last4: d.Last4,
		Scopes: orNil(d.Scopes), Apps: orNil(d.Apps), ExpiresAt: fromDate(d.ExpiresAt), LastUsedAt: fromDate(d.LastUsedAt),
		LastUsedIP: d.LastUsedIP, CreatedAt: fromDate(d.CreatedAt), UpdatedAt: fromDate(d.UpdatedAt)}
}

// CreateAPIKey implements storage.APIKeyStore; the account is checked after the insert
// (insertOwned), so that a key is never left behind for an account being deleted.
func (s *Store) CreateAPIKey(ctx context.Context, k storage.APIKey) error {
	doc := apiKeyDoc{ID: k.ID, AccountID: k.AccountID, Name: k.Name, Hash: k.Hash, Prefix: k.Prefix, Last4: k.Last4,
		Scopes: orEmpty(k.Scopes), Apps: orEmpty(k.Apps), ExpiresAt: storage.Truncate(k.ExpiresAt),
		LastUsedAt: storage.Truncate(k.LastUsedAt), LastUsedIP: k.LastUsedIP,
		CreatedAt: storage.Truncate(k.CreatedAt), UpdatedAt: storage.Truncate(k.UpdatedAt)}
	return s.insertOwned(ctx, "create API key", s.apiKeys, []any{doc}, bson.D{{Key: "_id", Value: k.ID}},
		[]parentRef{{what: "account " + k.AccountID, coll: s.accounts, filter: bson.D{{Key: "_id", Value: k.AccountID}}}})
}

// GetAPIKeyByHash implements storage.APIKeyStore.
func (s *Store) GetAPIKeyByHash(ctx context.Context, hash string) (storage.APIKey, error) {
	if hash == "" {
		return storage.APIKey{}, wrap("get API key by hash", mongo.ErrNoDocuments)
	}
	d, err := findDoc[apiKeyDoc](ctx, s.apiKeys, "get API key by hash", bson.D{{Key: "hash", Value: hash}})
	return d.key(), err
}

func byAccount(accountID, id string) bson.D {
	return bson.D{{Key: "_id", Value: id}, {Key: "accountId", Value: accountID}}
}

// GetAPIKey implements storage.APIKeyStore.
func (s *Store) GetAPIKey(ctx context.Context, accountID, id string) (storage.APIKey, error) {
	d, err := findDoc[apiKeyDoc](ctx, s.apiKeys, "get API key", byAccount(accountID, id))
	return d.key(), err
}

// ListAPIKeys implements storage.APIKeyStore.
func (s *Store) ListAPIKeys(ctx context.Context, accountID string) ([]storage.APIKey, error) {
	return findAll(ctx, s.apiKeys, "list API keys", bson.D{{Key: "accountId", Value: accountID}},
		bson.D{{Key: "createdAt", Value: 1}, {Key: "_id", Value: 1}}, apiKeyDoc.key)
}

// UpdateAPIKey implements storage.APIKeyStore. The members it writes are replaced as a
// whole, so the last writer wins, which is what an owner editing a key expects.
func (s *Store) UpdateAPIKey(ctx context.Context, k storage.APIKey) (storage.APIKey, error) {
	set := bson.D{{Key: "name", Value: k.Name}, {Key: "scopes", Value: orEmpty(k.Scopes)}, {Key: "apps", Value: orEmpty(k.Apps)},
		{Key: "updatedAt", Value: storage.Truncate(k.UpdatedAt)}}
	update := bson.D{{Key: "$set", Value: set}}
	if k.ExpiresAt.IsZero() {
		update = append(update, bson.E{Key: "$unset", Value: bson.D{{Key: "expiresAt", Value: ""}}})
	} else {
		set = append(set, bson.E{Key: "expiresAt", Value: storage.Truncate(k.ExpiresAt)})
		update[0].Value = set
	}
	var d apiKeyDoc
	raw, err := s.updateAudited(ctx, s.apiKeys, byAccount(k.AccountID, k.ID), update)
	if err == nil {
		err = bson.Unmarshal(raw, &d)
	}
	if err != nil {
		return storage.APIKey{}, wrap("update API key", err)
	}
	return d.key(), nil
}

// TouchAPIKey implements storage.APIKeyStore. It holds the key's lock (lockDoc), as its
// edit does (updateAudited): on FerretDB 1.x an unlocked $set could write back the key as
// it was before an edit made meanwhile (its old scopes). Touches are rare (once per
// touchEvery and address), so the lock's two writes cost little.
func (s *Store) TouchAPIKey(ctx context.Context, id string, at time.Time, ip string) error {
	release, err := s.lockDoc(ctx, s.apiKeys, id, "")
	if err != nil {
		return wrap("touch API key", err)
	}
	defer release()
	_, err = s.apiKeys.UpdateOne(ctx, bson.D{{Key: "_id", Value: id}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "lastUsedAt", Value: storage.Truncate(at)}, {Key: "lastUsedIp", Value: ip}}}})
	if err != nil {
		return wrap("touch API key", err)
	}
	return nil
}

// DeleteAPIKey implements storage.APIKeyStore.
func (s *Store) DeleteAPIKey(ctx context.Context, accountID, id string) error {
	return deleteOne(ctx, s, s.apiKeys, "delete API key", byAccount(accountID, id))
}
