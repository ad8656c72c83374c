package mongo

import (
	"context"
	"encoding/base64"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/keyward/keyward/storage"
)

// passkeyDoc is one owner passkey. The credential id is kept as base64url text too, the
// field of its unique index (FerretDB indexes strings reliably).
type passkeyDoc struct {
	ID           string    `bson:"_id"`
	AccountID    string    `bson:"accountId"`
	Name         string    `bson:"name"`
	CredentialID string    `bson:"credentialId"`
	Credential   []byte    `bson:"credential"`
	CreatedAt    time.Time `bson:"createdAt"`
	LastUsedAt   time.Time `bson:"lastUsedAt"`
}

func credentialKey(id []byte) string { return base64.RawURLEncoding.EncodeToString(id) }

func (d passkeyDoc) passkey() storage.Passkey {
	raw, _ := base64.RawURLEncoding.DecodeString(d.CredentialID) // written by credentialKey
	last := fromDate(d.LastUsedAt)
	if last.Year() <= 1 {
		last = time.Time{}
	}
	return storage.Passkey{ID: d.ID, AccountID: d.AccountID, Name: d.Name, CredentialID: raw, Credential: d.Credential,
		CreatedAt: fromDate(d.CreatedAt), LastUsedAt: last}
}

// CreatePasskey implements storage.PasskeyStore.
func (s *Store) CreatePasskey(ctx context.Context, p storage.Passkey) error {
	d := passkeyDoc{ID: p.ID, AccountID: p.AccountID, Name: p.Name, CredentialID: credentialKey(p.CredentialID),
		Credential: p.Credential, CreatedAt: storage.Truncate(p.CreatedAt), LastUsedAt: storage.Truncate(p.LastUsedAt)}
	// insertOwned: its audit entry (a passkey added) is staged and confirmed by the insert.
	return s.insertOwned(ctx, "create passkey", s.passkeys, []any{d}, bson.D{{Key: "_id", Value: p.ID}}, nil)
}

// ListPasskeys implements storage.PasskeyStore.
func (s *Store) ListPasskeys(ctx context.Context, accountID string) ([]storage.Passkey, error) {
	cur, err := s.passkeys.Find(ctx, bson.D{{Key: "accountId", Value: accountID}},
		options.Find().SetSort(bson.D{{Key: "createdAt", Value: 1}, {Key: "_id", Value: 1}}))
	if err != nil {
		return nil, wrap("list passkeys", err)
	}
	var docs []passkeyDoc
	if err := cur.All(ctx, &docs); err != nil {
		return nil, wrap("list passkeys", err)
	}
	out := make([]storage.Passkey, 0, len(docs))
	for _, d := range docs {
		out = append(out, d.passkey())
	}
	return out, nil
}

// GetPasskeyByCredentialID implements storage.PasskeyStore.
func (s *Store) GetPasskeyByCredentialID(ctx context.Context, credentialID []byte) (storage.Passkey, error) {
	var d passkeyDoc
	if err := s.passkeys.FindOne(ctx, bson.D{{Key: "credentialId", Value: credentialKey(credentialID)}}).Decode(&d); err != nil {
		return storage.Passkey{}, wrap("get passkey", err)
	}
	return d.passkey(), nil
}

// UsePasskey implements storage.PasskeyStore.
func (s *Store) UsePasskey(ctx context.Context, id string, credential []byte, at time.Time) error {
	return s.setPasskey(ctx, "use passkey", bson.D{{Key: "_id", Value: id}},
		bson.D{{Key: "credential", Value: credential}, {Key: "lastUsedAt", Value: storage.Truncate(at)}})
}

// RenamePasskey implements storage.PasskeyStore.
func (s *Store) RenamePasskey(ctx context.Context, accountID, id, name string) error {
	return s.setPasskey(ctx, "rename passkey", bson.D{{Key: "_id", Value: id}, {Key: "accountId", Value: accountID}},
		bson.D{{Key: "name", Value: name}})
}

// setPasskey sets members of the passkey filter matches; an audited change's entry (a
// rename) goes with the write (updateAudited).
func (s *Store) setPasskey(ctx context.Context, op string, filter, set bson.D) error {
	if _, err := s.updateAudited(ctx, s.passkeys, filter, bson.D{{Key: "$set", Value: set}}); err != nil {
		return wrap(op, err)
	}
	return nil
}

// DeletePasskey implements storage.PasskeyStore.
func (s *Store) DeletePasskey(ctx context.Context, accountID, id string) error {
	return deleteOne(ctx, s, s.passkeys, "delete passkey", bson.D{{Key: "_id", Value: id}, {Key: "accountId", Value: accountID}})
}

// challengeDoc is a WebAuthn ceremony begun and not finished.
type challengeDoc struct {
	ID        string    `bson:"_id"`
	AccountID string    `bson:"accountId"`
	Purpose   string    `bson:"purpose"`
	Data      []byte    `bson:"data"`
	ExpiresAt time.Time `bson:"expiresAt"`
	CreatedAt time.Time `bson:"createdAt"`
}

// SaveWebAuthnChallenge implements storage.PasskeyStore.
func (s *Store) SaveWebAuthnChallenge(ctx context.Context, c storage.WebAuthnChallenge) error {
	if _, err := s.challenges.DeleteMany(ctx, bson.D{{Key: "expiresAt", Value: bson.D{{Key: "$lte", Value: c.CreatedAt}}}}); err != nil {
		return wrap("save webauthn challenge", err)
	}
	d := challengeDoc{ID: c.ID, AccountID: c.AccountID, Purpose: c.Purpose, Data: c.Data,
		ExpiresAt: storage.Truncate(c.ExpiresAt), CreatedAt: storage.Truncate(c.CreatedAt)}
	if _, err := s.challenges.InsertOne(ctx, d); err != nil {
		return wrap("save webauthn challenge", err)
	}
	return nil
}

// ConsumeWebAuthnChallenge implements storage.PasskeyStore: read, then a delete that only
// one of concurrent consumers wins (as ConsumeAccountToken).
func (s *Store) ConsumeWebAuthnChallenge(ctx context.Context, id, purpose string, now time.Time) (storage.WebAuthnChallenge, error) {
	filter := bson.D{{Key: "_id", Value: id}, {Key: "purpose", Value: purpose}, {Key: "expiresAt", Value: bson.D{{Key: "$gt", Value: now}}}}
	var d challengeDoc
	if err := s.challenges.FindOne(ctx, filter).Decode(&d); err != nil {
		return storage.WebAuthnChallenge{}, wrap("consume webauthn challenge", err)
	}
	res, err := s.challenges.DeleteOne(ctx, bson.D{{Key: "_id", Value: id}})
	if err != nil {
		return storage.WebAuthnChallenge{}, wrap("consume webauthn challenge", err)
	}
	if res.DeletedCount != 1 {
		return storage.WebAuthnChallenge{}, wrap("consume webauthn challenge", mongo.ErrNoDocuments)
	}
	return storage.WebAuthnChallenge{ID: d.ID, AccountID: d.AccountID, Purpose: d.Purpose, Data: d.Data,
		ExpiresAt: fromDate(d.ExpiresAt), CreatedAt: fromDate(d.CreatedAt)}, nil
}
