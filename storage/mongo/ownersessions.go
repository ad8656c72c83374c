package mongo

import (
	"context"
	"slices"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/keyward/keyward/storage"
)

// ownerSessionDoc is one owner session; its fields are only ever set, never computed from
// the stored values, so FerretDB's read-then-write updates lose nothing that matters (the
// last writer's "last used" wins).
type ownerSessionDoc struct {
	ID          string    `bson:"_id"`
	AccountID   string    `bson:"accountId"`
	RefreshHash string    `bson:"refreshHash"`
	UserAgent   string    `bson:"userAgent"`
	IP          string    `bson:"ip"`
	CreatedAt   time.Time `bson:"createdAt"`
	LastUsedAt  time.Time `bson:"lastUsedAt"`
	AuthAt      time.Time `bson:"authAt"`
	ExpiresAt   time.Time `bson:"expiresAt"`
}

func (d ownerSessionDoc) session() storage.OwnerSession {
	utc := func(t time.Time) time.Time {
		if t.IsZero() || t.Year() <= 1 {
			return time.Time{}
		}
		return t.UTC()
	}
	return storage.OwnerSession{ID: d.ID, AccountID: d.AccountID, RefreshHash: d.RefreshHash, UserAgent: d.UserAgent,
		IP: d.IP, CreatedAt: utc(d.CreatedAt), LastUsedAt: utc(d.LastUsedAt), AuthAt: utc(d.AuthAt), ExpiresAt: utc(d.ExpiresAt)}
}

// CreateOwnerSession implements storage.OwnerSessionStore.
func (s *Store) CreateOwnerSession(ctx context.Context, o storage.OwnerSession) error {
	d := ownerSessionDoc{ID: o.ID, AccountID: o.AccountID, RefreshHash: o.RefreshHash, UserAgent: o.UserAgent, IP: o.IP,
		CreatedAt: o.CreatedAt, LastUsedAt: o.LastUsedAt, AuthAt: o.AuthAt, ExpiresAt: o.ExpiresAt}
	if _, err := s.ownerSessions.InsertOne(ctx, d); err != nil {
		return wrap("create owner session", err)
	}
	return nil
}

// GetOwnerSession implements storage.OwnerSessionStore.
func (s *Store) GetOwnerSession(ctx context.Context, id string) (storage.OwnerSession, error) {
	var d ownerSessionDoc
	if err := s.ownerSessions.FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&d); err != nil {
		return storage.OwnerSession{}, wrap("get owner session", err)
	}
	return d.session(), nil
}

// UpdateOwnerSession implements storage.OwnerSessionStore.
func (s *Store) UpdateOwnerSession(ctx context.Context, id string, ch storage.OwnerSessionChange) error {
	set := bson.D{}
	if !ch.LastUsedAt.IsZero() {
		set = append(set, bson.E{Key: "lastUsedAt", Value: ch.LastUsedAt})
	}
	if ch.IP != "" {
		set = append(set, bson.E{Key: "ip", Value: ch.IP})
	}
	if !ch.AuthAt.IsZero() {
		set = append(set, bson.E{Key: "authAt", Value: ch.AuthAt})
	}
	if !ch.ExpiresAt.IsZero() {
		set = append(set, bson.E{Key: "expiresAt", Value: ch.ExpiresAt})
	}
	if len(set) == 0 {
		_, err := s.GetOwnerSession(ctx, id)
		return err
	}
	// Held while the $set runs: on FerretDB 1.x a touch writing the session as it read it
	// could otherwise put back the AuthAt or ExpiresAt a re-authentication or a refresh
	// had just written (see ATOMICITY.md).
	release, err := s.lockDoc(ctx, s.ownerSessions, id, "")
	if err != nil {
		return wrap("update owner session", err)
	}
	defer release()
	res, err := s.ownerSessions.UpdateOne(ctx, bson.D{{Key: "_id", Value: id}}, bson.D{{Key: "$set", Value: set}})
	if err != nil {
		return wrap("update owner session", err)
	}
	if res.MatchedCount == 0 {
		return wrap("update owner session", mongo.ErrNoDocuments)
	}
	return nil
}

// ListOwnerSessions implements storage.OwnerSessionStore.
func (s *Store) ListOwnerSessions(ctx context.Context, accountID string, now time.Time) ([]storage.OwnerSession, error) {
	cur, err := s.ownerSessions.Find(ctx, bson.D{{Key: "accountId", Value: accountID}, {Key: "expiresAt", Value: bson.D{{Key: "$gt", Value: now}}}},
		options.Find().SetSort(bson.D{{Key: "lastUsedAt", Value: -1}, {Key: "_id", Value: 1}}))
	if err != nil {
		return nil, wrap("list owner sessions", err)
	}
	var docs []ownerSessionDoc
	if err := cur.All(ctx, &docs); err != nil {
		return nil, wrap("list owner sessions", err)
	}
	out := make([]storage.OwnerSession, 0, len(docs))
	for _, d := range docs {
		out = append(out, d.session())
	}
	return out, nil
}

// DeleteOwnerSession implements storage.OwnerSessionStore.
func (s *Store) DeleteOwnerSession(ctx context.Context, accountID, id string) error {
	res, err := s.ownerSessions.DeleteOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "accountId", Value: accountID}})
	if err != nil {
		return wrap("delete owner session", err)
	}
	if res.DeletedCount == 0 {
		return wrap("delete owner session", mongo.ErrNoDocuments)
	}
	return nil
}

// DeleteOwnerSessions implements storage.OwnerSessionStore.
func (s *Store) DeleteOwnerSessions(ctx context.Context, accountID, keepID string) (int, error) {
	res, err := s.ownerSessions.DeleteMany(ctx, bson.D{{Key: "accountId", Value: accountID}, {Key: "_id", Value: bson.D{{Key: "$ne", Value: keepID}}}})
	if err != nil {
		return 0, wrap("delete owner sessions", err)
	}
	return int(res.DeletedCount), nil
}

// ownerSessionPurgeChunk bounds the sessions one step of PurgeOwnerSessions locks.
const ownerSessionPurgeChunk = 500

// PurgeOwnerSessions implements storage.OwnerSessionStore. The expired sessions are found,
// then deleted under their locks (deleteWhereLocked) if still expired: on FerretDB 1.x a
// delete filtered by expiresAt removes what matched at its read, so a refresh acknowledged
// in between (the session moved on) would be lost. A session being written at that
// instant is left for the next purge.
func (s *Store) PurgeOwnerSessions(ctx context.Context, now time.Time) (int, error) {
	const op = "purge owner sessions"
	expired := bson.D{{Key: "expiresAt", Value: bson.D{{Key: "$lte", Value: now}}}}
	ids, err := findIDs(ctx, s.ownerSessions, expired)
	if err != nil {
		return 0, wrap(op, err)
	}
	total := 0
	for chunk := range slices.Chunk(ids, ownerSessionPurgeChunk) {
		n, err := s.deleteWhereLocked(ctx, s.ownerSessions, expired, chunk)
		total += n
		if err != nil {
			return total, wrap(op, err)
		}
	}
	return total, nil
}
