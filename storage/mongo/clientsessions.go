package mongo

import (
	"context"
	"errors"
	"slices"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/keyward/keyward/storage"
)

var _ storage.ClientSessionStore = (*Store)(nil)

// clientSessionDoc is the durable copy of a client session; _id is the token's hash.
// Copies are replaced whole (last write wins), never updated under a version claim, so
// they carry no version. As in webhookDeliveries, every time is stored, a zero one as the
// zero date (year 1): DeleteExpiredClientSessions compares expiresAt with $lte, which must
// treat a zero expiry as the earliest instant, as SQLite's 0 is, where an absent field
// would match nothing.
type clientSessionDoc struct {
	TokenHash string    `bson:"_id"`
	AppID     string    `bson:"appId"`
	AccountID string    `bson:"accountId"`
	UserID    string    `bson:"userId"` // "" before login
	Username  string    `bson:"username"`
	HWID      string    `bson:"hwid"`
	IP        string    `bson:"ip"`
	Country   string    `bson:"country"`
	Version   string    `bson:"version"` // the client's version string, not a record version
	CreatedAt time.Time `bson:"createdAt"`
	LoginAt   time.Time `bson:"loginAt"`
	ExpiresAt time.Time `bson:"expiresAt"`
}

func toClientSessionDoc(c storage.ClientSession) clientSessionDoc {
	return clientSessionDoc{
		TokenHash: c.TokenHash,
		AppID:     c.AppID,
		AccountID: c.AccountID,
		UserID:    c.UserID,
		Username:  c.Username,
		HWID:      c.HWID,
		IP:        c.IP,
		Country:   c.Country,
		Version:   c.Version,
		CreatedAt: storage.Truncate(c.CreatedAt),
		LoginAt:   storage.Truncate(c.LoginAt),
		ExpiresAt: storage.Truncate(c.ExpiresAt),
	}
}

func (d clientSessionDoc) session() storage.ClientSession {
	return storage.ClientSession{
		TokenHash: d.TokenHash,
		AppID:     d.AppID,
		AccountID: d.AccountID,
		UserID:    d.UserID,
		Username:  d.Username,
		HWID:      d.HWID,
		IP:        d.IP,
		Country:   d.Country,
		Version:   d.Version,
		CreatedAt: fromDate(d.CreatedAt),
		LoginAt:   fromDate(d.LoginAt),
		ExpiresAt: fromDate(d.ExpiresAt),
	}
}

// saveSessionRounds bounds the retries of a SaveClientSessions batch that lost an upsert
// race (see there).
const saveSessionRounds = 3

// SaveClientSessions writes the batch with one unordered BulkWrite of ReplaceOne upserts
// by _id (an ExtendOnly copy: an UpdateOne of its expiry by $max that does not upsert). There is no parent check: a copy saved as its app is deleted may outlive the
// app's sweep.
//
// An upsert is a query followed by an insert or a replace on FerretDB 1.x (and may be on
// MongoDB), so two writers upserting the same new token hash at once can both take the
// insert path, and one then fails on the unique _id. The models that failed so (and only
// those) are written again: the document exists by then and the retry replaces it (last
// write wins, as the contract allows). Unordered, one failing model does not stop the
// others.
func (s *Store) SaveClientSessions(ctx context.Context, ss []storage.ClientSession) error {
	const op = "save client sessions"
	if len(ss) == 0 {
		return nil
	}
	// An unordered bulk write may apply its models in any order, so a token hash given
	// twice is one model here, as in the SQLite engine.
	ss = storage.CoalesceClientSessions(ss)
	models := make([]mongo.WriteModel, 0, len(ss))
	for _, c := range ss {
		if c.ExtendOnly {
			// An ExtendOnly copy moves a stored one's expiry later and creates none: a
			// filter of _id alone, so FerretDB's read-then-write-by-_id cannot bring back
			// a copy deleted between the two (its write by _id finds nothing).
			models = append(models, mongo.NewUpdateOneModel().
				SetFilter(bson.D{{Key: "_id", Value: c.TokenHash}}).
				SetUpdate(bson.D{{Key: "$max", Value: bson.D{{Key: "expiresAt", Value: storage.Truncate(c.ExpiresAt)}}}}))
			continue
		}
		models = append(models, mongo.NewReplaceOneModel().
			SetFilter(bson.D{{Key: "_id", Value: c.TokenHash}}).
			SetReplacement(toClientSessionDoc(c)).
			SetUpsert(true))
	}
	for round := 0; ; round++ {
		_, err := s.clientSessions.BulkWrite(ctx, models, options.BulkWrite().SetOrdered(false))
		if err == nil {
			return nil
		}
		lost := lostUpserts(err, models)
		if lost == nil || round+1 == saveSessionRounds {
			return wrap(op, err)
		}
		if err := backoff(ctx, round); err != nil {
			return wrap(op, err)
		}
		models = lost
	}
}

// lostUpserts answers the models of a bulk write that failed only because they lost an
// upsert race (a duplicate _id), to be written again; nil when err is anything else, or
// when a model failed for another reason.
func lostUpserts(err error, models []mongo.WriteModel) []mongo.WriteModel {
	var bwe mongo.BulkWriteException
	if !errors.As(err, &bwe) || bwe.WriteConcernError != nil || len(bwe.WriteErrors) == 0 {
		return nil
	}
	var lost []mongo.WriteModel
	for _, we := range bwe.WriteErrors {
		if !isDuplicateKey(mongo.WriteException{WriteErrors: mongo.WriteErrors{we.WriteError}}) || we.Index < 0 || we.Index >= len(models) {
			return nil
		}
		lost = append(lost, models[we.Index])
	}
	return lost
}

// GetClientSession reads one session by token hash, expired or not.
func (s *Store) GetClientSession(ctx context.Context, tokenHash string) (storage.ClientSession, error) {
	d, err := findDoc[clientSessionDoc](ctx, s.clientSessions, "get client session", bson.D{{Key: "_id", Value: tokenHash}})
	return d.session(), err
}

// sessionDeleteChunk bounds the hashes of one delete of DeleteClientSessions.
const sessionDeleteChunk = 1000

// SaveClientRound saves the sessions, then records the logins: two writes, both done
// before it answers (FerretDB 1.24 has no multi-document transactions, so they cannot
// share one); a login's answer waits for the round, so for both. The context's event
// outbox is left to the caller (events.Bus.WritePendingWith appends the events after).
func (s *Store) SaveClientRound(ctx context.Context, ss []storage.ClientSession, logins []storage.UserLogin) error {
	if err := s.SaveClientSessions(ctx, ss); err != nil {
		return err
	}
	return s.RecordLogins(ctx, logins)
}

// DeleteClientSessions removes the sessions with these token hashes, by chunks.
func (s *Store) DeleteClientSessions(ctx context.Context, tokenHashes []string) error {
	const op = "delete client sessions"
	for chunk := range slices.Chunk(tokenHashes, sessionDeleteChunk) {
		if _, err := s.clientSessions.DeleteMany(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: chunk}}}}); err != nil {
			return wrap(op, err)
		}
	}
	return nil
}

// DeleteUserClientSessions removes every session of the app's user. Sessions before login
// have no user: an empty userID removes nothing.
func (s *Store) DeleteUserClientSessions(ctx context.Context, appID, userID string) (int, error) {
	if userID == "" {
		return 0, nil
	}
	res, err := s.clientSessions.DeleteMany(ctx, bson.D{{Key: "appId", Value: appID}, {Key: "userId", Value: userID}})
	if err != nil {
		return 0, wrap("delete user client sessions", err)
	}
	return int(res.DeletedCount), nil
}

// DeleteExpiredClientSessions removes the sessions expiring at or before now (a zero
// expiry included: it is stored as the zero date).
func (s *Store) DeleteExpiredClientSessions(ctx context.Context, now time.Time) (int, error) {
	res, err := s.clientSessions.DeleteMany(ctx, bson.D{{Key: "expiresAt", Value: bson.D{{Key: "$lte", Value: storage.Truncate(now)}}}})
	if err != nil {
		return 0, wrap("delete expired client sessions", err)
	}
	return int(res.DeletedCount), nil
}
